//! The loop's timers: deadlines of armed timer events, earliest first, and the one
//! sleep that wakes the loop for the earliest.
//!
//! [`Timers`] keeps the sleep in step with the heap — every
//! [`schedule`](Timers::schedule), [`cancel`](Timers::cancel) and
//! [`pop_due`](Timers::pop_due) points it at the new earliest deadline — so no
//! caller has to remember to. Made on first need: most instances arm no timer, and
//! out of line the empty set costs an instance one pointer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::pin::Pin;

use tokio::time::{Instant, Sleep};

/// Identifies an armed timer within its instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TimerId(u64);

#[derive(Default)]
pub(crate) struct Timers(Option<Box<Heap>>);

#[derive(Default)]
struct Heap {
    deadlines: BinaryHeap<Reverse<(Instant, TimerId)>>,
    sleep: Option<Pin<Box<Sleep>>>,
    last: u64,
    /// While a timer fires: the deadline it fired for (a cycle's next one counts
    /// from it).
    firing: Option<Instant>,
}

impl Timers {
    fn heap(&mut self) -> &mut Heap {
        self.0.get_or_insert_with(Box::default)
    }

    /// A new timer id (nothing is scheduled yet).
    pub fn new_id(&mut self) -> TimerId {
        let heap = self.heap();
        heap.last += 1;
        TimerId(heap.last)
    }

    /// Schedule timer `id` to fire at `deadline`.
    pub fn schedule(&mut self, id: TimerId, deadline: Instant) {
        self.heap().deadlines.push(Reverse((deadline, id)));
        self.reset_sleep();
    }

    /// Drop every deadline of timer `id` (so a loop through an activity with a long
    /// timeout does not pile up dead deadlines).
    pub fn cancel(&mut self, id: TimerId) {
        if let Some(heap) = &mut self.0 {
            heap.deadlines.retain(|Reverse((_, timer))| *timer != id);
            self.reset_sleep();
        }
    }

    /// The earliest deadline if it is due at `now`, taken out of the heap.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, TimerId)> {
        let heap = self.0.as_mut()?;
        match heap.deadlines.peek() {
            Some(Reverse((deadline, id))) if *deadline <= now => {
                let due = (*deadline, *id);
                heap.deadlines.pop();
                self.reset_sleep();
                Some(due)
            }
            _ => None,
        }
    }

    /// Whether a deadline is pending (the loop then waits on [`expired`](Self::expired)).
    pub fn is_armed(&self) -> bool {
        self.0.as_ref().is_some_and(|heap| heap.sleep.is_some())
    }

    /// Wait until the earliest deadline; pending for ever when none is armed.
    pub async fn expired(&mut self) {
        match self.0.as_mut().and_then(|heap| heap.sleep.as_mut()) {
            Some(sleep) => sleep.await,
            None => std::future::pending().await,
        }
    }

    /// The pending deadline of timer `id`, if it is scheduled.
    #[cfg(feature = "durable")]
    pub fn deadline_of(&self, id: TimerId) -> Option<Instant> {
        let heap = self.0.as_ref()?;
        heap.deadlines
            .iter()
            .find(|Reverse((_, timer))| *timer == id)
            .map(|Reverse((deadline, _))| *deadline)
    }

    /// The earliest pending deadline (feature `testing`: what "advance to this
    /// instance's next timer" advances to).
    #[cfg(feature = "testing")]
    pub fn earliest(&self) -> Option<Instant> {
        let heap = self.0.as_ref()?;
        heap.deadlines
            .peek()
            .map(|Reverse((deadline, _))| *deadline)
    }

    /// The deadline the timer firing now fired for.
    pub fn firing(&self) -> Option<Instant> {
        self.0.as_ref().and_then(|heap| heap.firing)
    }

    pub fn set_firing(&mut self, deadline: Option<Instant>) {
        if let Some(heap) = &mut self.0 {
            heap.firing = deadline;
        }
    }

    /// Drop every timer (the instance is stopping).
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// Point the sleep at the earliest deadline.
    fn reset_sleep(&mut self) {
        let Some(heap) = &mut self.0 else {
            return;
        };
        match heap.deadlines.peek() {
            None => heap.sleep = None,
            Some(Reverse((deadline, _))) => match &mut heap.sleep {
                Some(sleep) => sleep.as_mut().reset(*deadline),
                None => heap.sleep = Some(Box::pin(tokio::time::sleep_until(*deadline))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn the_sleep_follows_the_earliest_deadline() {
        let mut timers = Timers::default();
        assert!(!timers.is_armed());
        let now = Instant::now();
        let (a, b) = (timers.new_id(), timers.new_id());
        timers.schedule(b, now + Duration::from_secs(20));
        timers.schedule(a, now + Duration::from_secs(10));
        assert!(timers.is_armed());
        timers.cancel(a);
        timers.expired().await;
        assert_eq!(Instant::now(), now + Duration::from_secs(20));
        assert_eq!(
            timers.pop_due(Instant::now()),
            Some((now + Duration::from_secs(20), b))
        );
        assert_eq!(timers.pop_due(Instant::now()), None);
        assert!(!timers.is_armed());
    }
}
