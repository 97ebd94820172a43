//! Admission control: at most `max_running` statements are planned and run at once (and at
//! most `max_running_per_user` of one user's); up to `max_queued` more wait, QUEUED, and are
//! admitted in arrival order as slots free up; beyond the queue a statement is refused with
//! `QUERY_QUEUE_FULL`. A waiter held back by its user's limit does not hold back other users'.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// How many statements may run and wait at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Statements planning or running at once, over all users (at least 1).
    pub max_running: usize,
    /// Statements waiting for a slot; 0 refuses at once when every slot is taken.
    pub max_queued: usize,
    /// Statements one user may have planning or running at once; `None`: only the total.
    pub max_running_per_user: Option<usize>,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        Self {
            max_running: 64,
            max_queued: 1000,
            max_running_per_user: None,
        }
    }
}

/// Statements running and waiting now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdmissionLoad {
    pub running: usize,
    pub queued: usize,
}

/// The slots of one coordinator.
#[derive(Debug)]
pub struct Admission {
    limits: AdmissionLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    running_by_user: HashMap<Arc<str>, usize>,
    queue: VecDeque<Waiter>,
}

#[derive(Debug)]
struct Waiter {
    user: Arc<str>,
    priority: i32,
    grant: oneshot::Sender<Slot>,
}

/// A statement's right to plan and run; the slot is free again when it is dropped.
#[derive(Debug)]
pub struct Slot {
    admission: Arc<Admission>,
    user: Arc<str>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.admission.release(&self.user);
    }
}

/// A statement's place: admitted, or waiting in the queue.
#[derive(Debug)]
pub enum Admitted {
    Now(Slot),
    /// Resolves to the slot when one frees up; dropping it leaves the queue.
    Queued(oneshot::Receiver<Slot>),
}

impl Admitted {
    /// The slot, once there is one.
    pub async fn slot(self) -> Result<Slot> {
        match self {
            Admitted::Now(slot) => Ok(slot),
            Admitted::Queued(waiting) => waiting
                .await
                .map_err(|_| Error::Internal("the admission queue was dropped".into())),
        }
    }
}

impl State {
    fn fits(&self, limits: &AdmissionLimits, user: &str) -> bool {
        self.running < limits.max_running
            && limits
                .max_running_per_user
                .is_none_or(|max| self.running_by_user.get(user).copied().unwrap_or(0) < max)
    }

    fn take(&mut self, user: &Arc<str>) {
        self.running += 1;
        *self.running_by_user.entry(Arc::clone(user)).or_default() += 1;
    }

    fn give_back(&mut self, user: &str) {
        self.running = self.running.saturating_sub(1);
        if let Some(held) = self.running_by_user.get_mut(user) {
            *held -= 1;
            if *held == 0 {
                self.running_by_user.remove(user);
            }
        }
    }

    /// Waiters whose statement has gone (cancelled while queued) hold no place.
    fn forget_gone(&mut self) {
        self.queue.retain(|w| !w.grant.is_closed());
    }
}

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Arc<Self> {
        Arc::new(Self {
            limits: AdmissionLimits {
                max_running: limits.max_running.max(1),
                ..limits
            },
            state: Mutex::default(),
        })
    }

    pub fn limits(&self) -> AdmissionLimits {
        self.limits
    }

    pub fn load(&self) -> AdmissionLoad {
        let mut state = self.state.lock();
        state.forget_gone();
        AdmissionLoad {
            running: state.running,
            queued: state.queue.len(),
        }
    }

    /// A slot for a statement of `user` now, or a place in the queue, or QUERY_QUEUE_FULL. In
    /// the queue it goes after every waiter of its `priority` or higher (`query_priority`).
    pub fn admit(self: &Arc<Self>, user: &str, priority: i32) -> Result<Admitted> {
        let user: Arc<str> = Arc::from(user);
        let mut state = self.state.lock();
        state.forget_gone();
        // Waiters that fit are handed their slots as slots free up, so a statement that fits
        // now overtakes only waiters held back by their own user's limit.
        if state.fits(&self.limits, &user) {
            state.take(&user);
            return Ok(Admitted::Now(Slot {
                admission: Arc::clone(self),
                user,
            }));
        }
        if state.queue.len() >= self.limits.max_queued {
            return Err(Error::QueueFull {
                max_queued: self.limits.max_queued,
            });
        }
        let (grant, waiting) = oneshot::channel();
        let place = state.queue.partition_point(|w| w.priority >= priority);
        state.queue.insert(
            place,
            Waiter {
                user,
                priority,
                grant,
            },
        );
        Ok(Admitted::Queued(waiting))
    }

    /// Frees `user`'s slot and hands slots to the first waiters that fit.
    fn release(self: &Arc<Self>, user: &str) {
        let mut granted = Vec::new();
        {
            let mut state = self.state.lock();
            state.give_back(user);
            state.forget_gone();
            let mut index = 0;
            while index < state.queue.len() && state.running < self.limits.max_running {
                if state.fits(&self.limits, &state.queue[index].user) {
                    if let Some(waiter) = state.queue.remove(index) {
                        state.take(&waiter.user);
                        granted.push(waiter);
                    }
                } else {
                    index += 1;
                }
            }
        }
        // Sent outside the lock: a waiter gone meanwhile drops its slot, which releases it.
        for waiter in granted {
            let slot = Slot {
                admission: Arc::clone(self),
                user: Arc::clone(&waiter.user),
            };
            let _ = waiter.grant.send(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn limits(max_running: usize, max_queued: usize, per_user: Option<usize>) -> Arc<Admission> {
        Admission::new(AdmissionLimits {
            max_running,
            max_queued,
            max_running_per_user: per_user,
        })
    }

    fn now(admitted: Admitted) -> Slot {
        match admitted {
            Admitted::Now(slot) => slot,
            Admitted::Queued(_) => panic!("queued, expected a slot at once"),
        }
    }

    fn queued(admitted: Admitted) -> oneshot::Receiver<Slot> {
        match admitted {
            Admitted::Queued(waiting) => waiting,
            Admitted::Now(_) => panic!("admitted, expected to queue"),
        }
    }

    #[test]
    fn runs_up_to_the_limit_then_queues_then_refuses() -> Result<()> {
        let admission = limits(2, 1, None);
        let a = now(admission.admit("u", 1)?);
        let _b = now(admission.admit("u", 1)?);
        let mut c = queued(admission.admit("u", 1)?);
        match admission.admit("u", 1) {
            Err(refused) => assert_eq!(refused.code(), ErrorCode::QueryQueueFull),
            Ok(_) => panic!("admitted beyond the queue"),
        }
        assert_eq!(
            admission.load(),
            AdmissionLoad {
                running: 2,
                queued: 1
            }
        );
        assert!(c.try_recv().is_err(), "no slot yet");
        drop(a);
        let _c = c.try_recv().map_err(|e| Error::Internal(e.to_string()))?;
        assert_eq!(
            admission.load(),
            AdmissionLoad {
                running: 2,
                queued: 0
            }
        );
        Ok(())
    }

    #[test]
    fn waiters_are_admitted_in_arrival_order() -> Result<()> {
        let admission = limits(1, 10, None);
        let first = now(admission.admit("a", 1)?);
        let mut second = queued(admission.admit("b", 1)?);
        let mut third = queued(admission.admit("c", 1)?);
        drop(first);
        let second_slot = second
            .try_recv()
            .map_err(|e| Error::Internal(e.to_string()))?;
        assert!(third.try_recv().is_err(), "the third waits for the second");
        drop(second_slot);
        assert!(third.try_recv().is_ok());
        Ok(())
    }

    #[test]
    fn a_higher_priority_waiter_goes_first_and_equals_keep_their_order() -> Result<()> {
        let admission = limits(1, 10, None);
        let first = now(admission.admit("a", 1)?);
        let mut low = queued(admission.admit("b", 1)?);
        let mut high = queued(admission.admit("c", 5)?);
        let mut high_too = queued(admission.admit("d", 5)?);
        drop(first);
        let high_slot = high
            .try_recv()
            .map_err(|e| Error::Internal(e.to_string()))?;
        assert!(high_too.try_recv().is_err() && low.try_recv().is_err());
        drop(high_slot);
        let high_too_slot = high_too
            .try_recv()
            .map_err(|e| Error::Internal(e.to_string()))?;
        assert!(low.try_recv().is_err(), "the low one waits for both");
        drop(high_too_slot);
        assert!(low.try_recv().is_ok());
        Ok(())
    }

    #[test]
    fn a_newcomer_does_not_overtake_the_queue() -> Result<()> {
        let admission = limits(1, 10, None);
        let first = now(admission.admit("a", 1)?);
        let mut waiting = queued(admission.admit("b", 1)?);
        drop(first);
        // The freed slot went to the waiter, not to whoever asks next.
        let _late = queued(admission.admit("c", 1)?);
        assert!(waiting.try_recv().is_ok());
        Ok(())
    }

    #[test]
    fn a_user_at_its_limit_does_not_hold_back_others() -> Result<()> {
        let admission = limits(3, 10, Some(1));
        let a1 = now(admission.admit("a", 1)?);
        let mut a2 = queued(admission.admit("a", 1)?);
        // b fits although a waits ahead of it: a's own limit holds a back, not the total.
        let _b = now(admission.admit("b", 1)?);
        assert!(a2.try_recv().is_err());
        drop(a1);
        assert!(a2.try_recv().is_ok());
        Ok(())
    }

    #[test]
    fn a_waiter_that_left_holds_no_place() -> Result<()> {
        let admission = limits(1, 1, None);
        let first = now(admission.admit("a", 1)?);
        let gone = queued(admission.admit("b", 1)?);
        drop(gone);
        // Its place in the queue is free again, and the freed slot is not lost to it.
        let mut next = queued(admission.admit("c", 1)?);
        drop(first);
        let _next = next
            .try_recv()
            .map_err(|e| Error::Internal(e.to_string()))?;
        assert_eq!(
            admission.load(),
            AdmissionLoad {
                running: 1,
                queued: 0
            }
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_queued_statement_gets_its_slot_when_one_frees() -> Result<()> {
        let admission = limits(1, 1, None);
        let first = now(admission.admit("a", 1)?);
        let waiting = admission.admit("b", 1)?;
        let released = sqe_layers::task::spawn(async move {
            tokio::task::yield_now().await;
            drop(first);
        });
        let slot = waiting.slot().await?;
        released.await.map_err(|e| Error::Internal(e.to_string()))?;
        assert_eq!(admission.load().running, 1);
        drop(slot);
        assert_eq!(admission.load(), AdmissionLoad::default());
        Ok(())
    }
}
