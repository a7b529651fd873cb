//! The loop's timers: deadlines of armed timer events, earliest first, and the one
//! sleep that wakes the loop for the earliest.
//!
//! [`Timers`] keeps the sleep in step with the heap — every
//! [`schedule`](Timers::schedule), [`cancel`](Timers::cancel) and
//! [`pop_due`](Timers::pop_due) points it at the new earliest deadline — so no
//! caller has to remember to. Made on first need: most instances arm no timer, and
//! out of line the empty set costs an instance one pointer.
//!
//! A cancel is O(1): the timer leaves the map of live deadlines, and its heap entry
//! stays, stale, until it comes to the top (skipped there) or the stale entries
//! outnumber the live ones (the heap is rebuilt). So a multi-instance activity of
//! 10 000 instances with a timer boundary each does not rescan the heap on every
//! completion.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::pin::Pin;

use tokio::time::{Instant, Sleep};

/// Identifies an armed timer within its instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TimerId(u64);

#[derive(Default)]
pub(crate) struct Timers(Option<Box<Heap>>);

impl Drop for Timers {
    #[inline]
    fn drop(&mut self) {
        super::drop_if_made(&mut self.0);
    }
}

#[derive(Default)]
struct Heap {
    /// Every scheduled deadline, earliest on top, with the stale ones (a timer
    /// cancelled or scheduled again): an entry is live only while `live` has it.
    deadlines: BinaryHeap<Reverse<(Instant, TimerId)>>,
    /// Each scheduled timer's one pending deadline.
    live: HashMap<TimerId, Instant>,
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

    /// Schedule timer `id` to fire at `deadline` (replacing a deadline it had).
    pub fn schedule(&mut self, id: TimerId, deadline: Instant) {
        let heap = self.heap();
        heap.live.insert(id, deadline);
        heap.deadlines.push(Reverse((deadline, id)));
        self.reset_sleep();
    }

    /// Drop timer `id`'s deadline (so a loop through an activity with a long
    /// timeout does not pile up dead deadlines).
    pub fn cancel(&mut self, id: TimerId) {
        if let Some(heap) = &mut self.0 {
            if heap.live.remove(&id).is_some() {
                heap.compact();
                self.reset_sleep();
            }
        }
    }

    /// The earliest deadline if it is due at `now`, taken out of the heap.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, TimerId)> {
        let heap = self.0.as_mut()?;
        heap.drop_stale_top();
        match heap.deadlines.peek() {
            Some(Reverse((deadline, id))) if *deadline <= now => {
                let due = (*deadline, *id);
                heap.deadlines.pop();
                heap.live.remove(&due.1);
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
    pub fn deadline_of(&self, id: TimerId) -> Option<Instant> {
        self.0.as_ref()?.live.get(&id).copied()
    }

    /// The earliest pending deadline (feature `testing`: what "advance to this
    /// instance's next timer" advances to; feature `durable`: when an evicted
    /// instance is loaded again).
    #[cfg(any(feature = "testing", feature = "durable"))]
    pub fn earliest(&self) -> Option<Instant> {
        self.0.as_ref()?.live.values().min().copied()
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

    /// Whether the box is made (on first need: something was armed).
    pub fn is_made(&self) -> bool {
        self.0.is_some()
    }

    /// Point the sleep at the earliest live deadline.
    fn reset_sleep(&mut self) {
        let Some(heap) = &mut self.0 else {
            return;
        };
        heap.drop_stale_top();
        match heap.deadlines.peek() {
            None => heap.sleep = None,
            Some(Reverse((deadline, _))) => match &mut heap.sleep {
                Some(sleep) => sleep.as_mut().reset(*deadline),
                None => heap.sleep = Some(Box::pin(tokio::time::sleep_until(*deadline))),
            },
        }
    }
}

impl Heap {
    /// Whether a heap entry is its timer's pending deadline.
    fn is_live(&self, (deadline, id): (Instant, TimerId)) -> bool {
        self.live.get(&id) == Some(&deadline)
    }

    /// Pop stale entries off the top, so the top is the earliest live deadline.
    fn drop_stale_top(&mut self) {
        while let Some(&Reverse(top)) = self.deadlines.peek() {
            if self.is_live(top) {
                return;
            }
            self.deadlines.pop();
        }
    }

    /// Rebuild the heap of the live deadlines once stale entries outnumber them:
    /// each rebuild follows at least as many O(1) cancels as it costs.
    fn compact(&mut self) {
        if self.deadlines.len() > 2 * self.live.len() + 16 {
            let live = &self.live;
            self.deadlines
                .retain(|&Reverse((deadline, id))| live.get(&id) == Some(&deadline));
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

    #[tokio::test(start_paused = true)]
    async fn cancelled_and_rescheduled_timers_never_fire_at_their_old_deadlines() {
        let mut timers = Timers::default();
        let now = Instant::now();
        let s = Duration::from_secs;
        let ids: Vec<TimerId> = (0..1000).map(|_| timers.new_id()).collect();
        for (i, &id) in ids.iter().enumerate() {
            timers.schedule(id, now + s(1 + i as u64));
        }
        // Every odd one cancelled (the heap is rebuilt on the way), the first one
        // moved to the end.
        for &id in ids.iter().skip(1).step_by(2) {
            timers.cancel(id);
        }
        timers.schedule(ids[0], now + s(5000));
        let heap = timers.0.as_ref().unwrap();
        assert_eq!(heap.live.get(&ids[0]), Some(&(now + s(5000))));
        assert_eq!(heap.live.get(&ids[1]), None);
        assert!(
            heap.deadlines.len() <= 2 * 500 + 16 + 1,
            "stale entries are dropped"
        );
        let mut fired = Vec::new();
        while timers.is_armed() {
            timers.expired().await;
            while let Some((at, id)) = timers.pop_due(Instant::now()) {
                assert_eq!(at, Instant::now(), "a timer fires at its deadline");
                fired.push(id);
            }
        }
        let mut expected: Vec<TimerId> = ids.iter().copied().skip(2).step_by(2).collect();
        expected.push(ids[0]);
        assert_eq!(fired, expected);
        assert!(timers.0.as_ref().unwrap().live.is_empty());
    }
}
