//! The loop's armed conditional events: edge-triggered (they fire on a false→true
//! change), evaluated once when armed and again after every commit whose changed
//! fields meet their dependency list (no list: every commit).
//!
//! Made on first need, like the timers: most instances arm none.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::data::ChangedFields;
use crate::graph::{Condition, NodeIdx};
use crate::instance::outcome::panic_message;

/// Identifies an armed conditional event within its instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ConditionId(u64);

pub(crate) struct Conditions<D: 'static>(Option<Box<Armed<D>>>);

impl<D> Default for Conditions<D> {
    fn default() -> Self {
        Self(None)
    }
}

struct Armed<D: 'static> {
    /// In arming order: edges found in one commit fire in this order.
    armed: Vec<ArmedCondition<D>>,
    /// Found true (at arming, or on an edge) and not fired yet.
    due: Vec<ConditionId>,
    last: u64,
}

struct ArmedCondition<D: 'static> {
    id: ConditionId,
    node: NodeIdx,
    condition: Condition<D>,
    on: &'static [&'static str],
    /// The value at the last evaluation.
    last: bool,
}

impl<D> Conditions<D> {
    fn armed(&mut self) -> &mut Armed<D> {
        self.0.get_or_insert_with(|| {
            Box::new(Armed {
                armed: Vec::new(),
                due: Vec::new(),
                last: 0,
            })
        })
    }

    /// Arm the condition of `node`, whose value when armed is `now` (true: it is due
    /// at once — it fires as soon as the arming is complete).
    pub fn arm(
        &mut self,
        node: NodeIdx,
        condition: Condition<D>,
        on: &'static [&'static str],
        now: bool,
    ) -> ConditionId {
        let armed = self.armed();
        armed.last += 1;
        let id = ConditionId(armed.last);
        armed.armed.push(ArmedCondition {
            id,
            node,
            condition,
            on,
            last: now,
        });
        if now {
            armed.due.push(id);
        }
        id
    }

    /// The value condition `id` had at its last evaluation.
    #[cfg(feature = "durable")]
    pub fn last_of(&self, id: ConditionId) -> Option<bool> {
        let armed = self.0.as_ref()?;
        armed.armed.iter().find(|c| c.id == id).map(|c| c.last)
    }

    /// Arm a condition a checkpoint recorded, whose value was `last` then and is
    /// `now`: due only on a false→true edge across the restart.
    #[cfg(feature = "durable")]
    pub fn rearm(
        &mut self,
        node: NodeIdx,
        condition: Condition<D>,
        on: &'static [&'static str],
        last: bool,
        now: bool,
    ) -> ConditionId {
        let id = self.arm(node, condition, on, now && !last);
        if let Some(armed) = &mut self.0 {
            if let Some(c) = armed.armed.iter_mut().find(|c| c.id == id) {
                c.last = now;
            }
        }
        id
    }

    pub fn disarm(&mut self, id: ConditionId) {
        if let Some(armed) = &mut self.0 {
            armed.armed.retain(|c| c.id != id);
        }
    }

    /// Re-evaluate, on `data` as one commit left it, the conditions whose
    /// dependencies meet `changed`; the false→true edges become due, in arming order
    /// (after those due already, which keep their turn). A panicking condition stops
    /// the evaluation: `Err` with its node and message.
    pub fn recheck(&mut self, data: &D, changed: &ChangedFields) -> Result<(), (NodeIdx, String)> {
        let Some(armed) = &mut self.0 else {
            return Ok(());
        };
        for c in &mut armed.armed {
            if !(c.on.is_empty() || c.on.iter().any(|f| changed.contains(f))) {
                continue;
            }
            let now = catch_unwind(AssertUnwindSafe(|| (c.condition)(data)))
                .map_err(|panic| (c.node, panic_message(panic)))?;
            if now && !c.last {
                armed.due.push(c.id);
            }
            c.last = now;
        }
        Ok(())
    }

    /// Whether any condition is armed or due (what every commit that changed a
    /// field asks before `recheck`: inline).
    #[inline]
    pub fn any_armed(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|armed| !armed.armed.is_empty() || !armed.due.is_empty())
    }

    /// Whether a condition is due (what every task's start asks: inline).
    #[inline]
    pub fn any_due(&self) -> bool {
        self.0.as_ref().is_some_and(|armed| !armed.due.is_empty())
    }

    /// Take the conditions that are due, in the order they became so.
    pub fn take_due(&mut self) -> Vec<ConditionId> {
        match &mut self.0 {
            Some(armed) => std::mem::take(&mut armed.due),
            None => Vec::new(),
        }
    }

    /// Drop every condition (the instance is stopping).
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// Whether the box is made (on first need: something was armed).
    pub fn is_made(&self) -> bool {
        self.0.is_some()
    }
}
