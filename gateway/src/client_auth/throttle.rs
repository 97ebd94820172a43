//! Failed password logins, counted per source address and user: after a few in a row, that
//! pair may not try again until it has been quiet for a while, so a password cannot be
//! guessed at bcrypt's speed. Another address (the user's own) is not affected.

use std::net::IpAddr;
use std::time::Duration;

use sqe_engine::expiring::{Expire, ExpiringMap};

/// Failed attempts in a row before the pair is held off.
pub(crate) const MAX_FAILURES: u32 = 5;
/// How long a held-off pair must stay quiet; every refused attempt starts it again.
pub(crate) const HOLD_OFF: Duration = Duration::from_secs(60);
/// Most pairs remembered at once.
const MAX_TRACKED: u64 = 100_000;

/// Who is trying: the address it comes from (when the transport knows it) and the user named.
type Attempt = (Option<IpAddr>, String);

pub(crate) struct LoginThrottle {
    failures: ExpiringMap<Attempt, u32>,
}

impl LoginThrottle {
    pub(crate) fn new(hold_off: Duration) -> Self {
        Self {
            failures: ExpiringMap::new(MAX_TRACKED, Expire::WhenIdle(hold_off)),
        }
    }

    /// Whether this pair may try a password now (a refused try keeps it held off).
    pub(crate) fn may_try(&self, source: Option<IpAddr>, user: &str) -> bool {
        let key = (source, user.to_string());
        self.failures
            .get(&key)
            .is_none_or(|failures| failures < MAX_FAILURES)
    }

    pub(crate) fn failed(&self, source: Option<IpAddr>, user: &str) {
        self.failures.update(
            (source, user.to_string()),
            || 0,
            |failures| *failures = failures.saturating_add(1),
        );
    }

    pub(crate) fn succeeded(&self, source: Option<IpAddr>, user: &str) {
        self.failures.remove(&(source, user.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_held_off_after_repeated_failures_until_it_is_quiet() {
        let throttle = LoginThrottle::new(Duration::from_millis(300));
        let (attacker, owner) = (
            Some(IpAddr::from([10, 0, 0, 9])),
            Some(IpAddr::from([10, 0, 0, 1])),
        );
        for _ in 0..MAX_FAILURES {
            assert!(throttle.may_try(attacker, "alice"));
            throttle.failed(attacker, "alice");
        }
        assert!(!throttle.may_try(attacker, "alice"));
        // Neither the user from elsewhere nor another user from there is held off.
        assert!(throttle.may_try(owner, "alice"));
        assert!(throttle.may_try(attacker, "bob"));
        std::thread::sleep(Duration::from_millis(450));
        assert!(throttle.may_try(attacker, "alice"));
    }

    #[test]
    fn a_success_clears_the_count() {
        let throttle = LoginThrottle::new(HOLD_OFF);
        let source = Some(IpAddr::from([127, 0, 0, 1]));
        for _ in 0..MAX_FAILURES - 1 {
            throttle.failed(source, "alice");
        }
        throttle.succeeded(source, "alice");
        throttle.failed(source, "alice");
        assert!(throttle.may_try(source, "alice"));
    }
}
