//! The token ids a verifier has accepted, remembered until the tokens expire: a token is good
//! for one request, so one sniffed on the wire or copied from a log cannot be sent again.

use std::collections::{HashSet, VecDeque};

/// Ids remembered at most: at one RPC per token, over a token's accepted life (its TTL plus
/// the clock leeway, 90 s by default), that is ~11 000 RPCs a second to one node. Past it new
/// tokens are refused rather than old ids forgotten: forgetting would let their tokens replay.
pub(super) const DEFAULT_CAPACITY: usize = 1 << 20;

/// Why a token id was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Seen before.
    Replayed,
    /// Too many live tokens to remember one more.
    Full,
}

/// Ids of accepted tokens with the time each may be forgotten (when its token stops being
/// accepted anyway).
#[derive(Debug)]
pub(super) struct SeenTokens {
    ids: HashSet<u128>,
    /// In the order accepted; tokens of one signer expire in about that order, so the front is
    /// what can go first. An id behind a later-expiring one waits for it: memory, not safety.
    order: VecDeque<(u64, u128)>,
    capacity: usize,
}

impl SeenTokens {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            ids: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Accepts `id` once: `forget_at` is when its token is refused as expired anyway.
    pub(super) fn accept(&mut self, id: u128, forget_at: u64, now: u64) -> Result<(), Refusal> {
        while let Some(&(at, old)) = self.order.front() {
            if at >= now {
                break;
            }
            self.order.pop_front();
            self.ids.remove(&old);
        }
        if self.ids.contains(&id) {
            return Err(Refusal::Replayed);
        }
        if self.ids.len() >= self.capacity {
            return Err(Refusal::Full);
        }
        self.ids.insert(id);
        self.order.push_back((forget_at, id));
        Ok(())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_accepted_once_until_it_expires() {
        let mut seen = SeenTokens::new(8);
        assert_eq!(seen.accept(1, 100, 10), Ok(()));
        assert_eq!(seen.accept(1, 100, 11), Err(Refusal::Replayed));
        assert_eq!(seen.accept(2, 100, 11), Ok(()));
        // Past its expiry the id is forgotten: its token is refused as expired before this.
        assert_eq!(seen.accept(3, 200, 101), Ok(()));
        assert_eq!(seen.len(), 1);
    }

    #[test]
    fn when_full_new_tokens_are_refused_and_nothing_live_is_forgotten() {
        let mut seen = SeenTokens::new(2);
        assert_eq!(seen.accept(1, 100, 0), Ok(()));
        assert_eq!(seen.accept(2, 100, 0), Ok(()));
        assert_eq!(seen.accept(3, 100, 0), Err(Refusal::Full));
        assert_eq!(seen.accept(1, 100, 0), Err(Refusal::Replayed));
        // Once the first ones expire there is room again.
        assert_eq!(seen.accept(3, 300, 101), Ok(()));
    }
}
