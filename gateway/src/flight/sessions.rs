//! Flight SQL sessions: the catalog and schema a client set with `SetSessionOptions`.

use std::time::Duration;

use sqe_engine::expiring::{Expire, ExpiringMap, QuotaExceeded};
use sqe_engine::queries::Session;

/// Sessions unused this long are forgotten.
const SESSION_IDLE: Duration = Duration::from_secs(3600);
/// Most sessions kept at once, and per user.
const MAX_SESSIONS: u64 = 10_000;
const MAX_SESSIONS_PER_USER: u64 = 1_000;

/// Session settings by session key (cookie or bearer token, see [`super::protocol::session_key`]).
#[derive(Debug)]
pub(super) struct Sessions {
    sessions: ExpiringMap<String, Session>,
}

impl Default for Sessions {
    fn default() -> Self {
        Self {
            sessions: ExpiringMap::with_quota(
                MAX_SESSIONS,
                Expire::WhenIdle(SESSION_IDLE),
                MAX_SESSIONS_PER_USER,
                "Flight SQL sessions",
            ),
        }
    }
}

impl Sessions {
    /// The settings of session `key`; defaults for requests without a session.
    pub(super) fn get(&self, key: Option<&str>) -> Session {
        key.and_then(|key| self.sessions.get(&key.to_string()))
            .unwrap_or_default()
    }

    /// Changes session `key` of `user`, within the user's share of sessions.
    pub(super) fn update(
        &self,
        key: &str,
        user: &str,
        change: impl FnOnce(&mut Session),
    ) -> Result<(), QuotaExceeded> {
        self.sessions
            .update_owned(user, key.to_string(), Session::default, change)
    }

    pub(super) fn close(&self, key: &str) -> bool {
        self.sessions.remove(&key.to_string()).is_some()
    }
}
