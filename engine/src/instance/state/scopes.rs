//! The open scopes of an instance: the process itself, every running embedded
//! sub-process and every running event sub-process.
//!
//! The process's own scope ([`ROOT`]) is implicit: an instance with no sub-process
//! keeps an empty list (no allocation). Nested scopes are kept in opening order, so a
//! scope's children always come after it.

use std::collections::{BTreeMap, HashMap};

use crate::graph::NodeIdx;
use crate::instance::state::ids::TrackId;
use crate::instance::state::ids::{ScopeId, ROOT};

/// One open scope.
pub(crate) struct ScopeSlot {
    pub id: ScopeId,
    /// The sub-process or event sub-process it runs; `None` for the process.
    pub node: Option<NodeIdx>,
    pub parent: Option<ScopeId>,
    /// An embedded sub-process's token, waiting at its node in the parent scope.
    pub owner: Option<TrackId>,
    /// An interrupting event sub-process took over: the scope starts nothing else.
    pub interrupted: bool,
}

impl ScopeSlot {
    /// A running event sub-process (it has a node but no waiting token).
    pub fn is_event_sub(&self) -> bool {
        self.node.is_some() && self.owner.is_none()
    }
}

/// The process's own scope as a slot; its `interrupted` flag lives in [`Scopes`].
const ROOT_SLOT: ScopeSlot = ScopeSlot {
    id: ROOT,
    node: None,
    parent: None,
    owner: None,
    interrupted: false,
};

const ROOT_INTERRUPTED: ScopeSlot = ScopeSlot {
    interrupted: true,
    ..ROOT_SLOT
};

/// The open scopes. Kept by id — ids are given in opening order, so a scope's
/// children come after it — with each scope's count of open children, each
/// owner's scope, and the scopes that may have become empty since the loop last
/// looked: a 10 000-instance multi-instance sub-process costs no scan. The nested
/// scopes are boxed on first open: most instances never open one, and the loop's
/// future (a parked instance's memory) carries this field whole.
#[derive(Default)]
pub(crate) struct Scopes {
    nested: Option<Box<Nested>>,
    /// An interrupting event sub-process took the process's own scope over.
    root_interrupted: bool,
}

impl Drop for Scopes {
    #[inline]
    fn drop(&mut self) {
        super::drop_if_made(&mut self.nested);
    }
}

#[derive(Default)]
struct Nested {
    slots: BTreeMap<ScopeId, ScopeSlot>,
    children: HashMap<ScopeId, u32>,
    owners: HashMap<TrackId, ScopeId>,
    /// Scopes opened or that lost a child since [`Scopes::take_emptied`].
    emptied: Vec<ScopeId>,
    last: u32,
}

/// What [`Scopes::nested`] walks when no scope was ever opened.
static NONE_OPEN: BTreeMap<ScopeId, ScopeSlot> = BTreeMap::new();

impl Scopes {
    /// Open a scope running `node` inside `parent`; `parent == None` opens the
    /// process's own scope, which is always [`ROOT`].
    pub fn open(
        &mut self,
        node: Option<NodeIdx>,
        parent: Option<ScopeId>,
        owner: Option<TrackId>,
    ) -> ScopeId {
        if parent.is_none() {
            return ROOT;
        }
        let nested = self.nested_mut();
        nested.last += 1;
        let id = ScopeId(nested.last);
        nested.insert(ScopeSlot {
            id,
            node,
            parent,
            owner,
            interrupted: false,
        });
        id
    }

    fn nested_mut(&mut self) -> &mut Nested {
        self.nested.get_or_insert_with(Box::default)
    }

    pub fn close(&mut self, id: ScopeId) {
        let Some(nested) = self.nested.as_mut() else {
            return;
        };
        let Some(slot) = nested.slots.remove(&id) else {
            return;
        };
        if let Some(owner) = slot.owner {
            if nested.owners.get(&owner) == Some(&id) {
                nested.owners.remove(&owner);
            }
        }
        if let Some(parent) = slot.parent {
            if let Some(n) = nested.children.get_mut(&parent) {
                *n -= 1;
                if *n == 0 {
                    nested.children.remove(&parent);
                    nested.emptied.push(parent);
                }
            }
        }
    }

    pub fn get(&self, id: ScopeId) -> Option<&ScopeSlot> {
        match id {
            ROOT if self.root_interrupted => Some(&ROOT_INTERRUPTED),
            ROOT => Some(&ROOT_SLOT),
            _ => self.nested.as_ref()?.slots.get(&id),
        }
    }

    /// An interrupting event sub-process took `id` over.
    pub fn interrupt(&mut self, id: ScopeId) {
        if id == ROOT {
            self.root_interrupted = true;
        } else if let Some(slot) = self.nested.as_mut().and_then(|n| n.slots.get_mut(&id)) {
            slot.interrupted = true;
        }
    }

    pub fn is_interrupted(&self, id: ScopeId) -> bool {
        self.get(id).is_none_or(|s| s.interrupted)
    }

    /// Whether scope `inner` is `outer` or lies (transitively) inside it.
    pub fn within(&self, inner: ScopeId, outer: ScopeId) -> bool {
        let mut at = Some(inner);
        while let Some(s) = at {
            if s == outer {
                return true;
            }
            at = self.get(s).and_then(|slot| slot.parent);
        }
        false
    }

    /// The scope the sub-process token `owner` waits for.
    pub fn owned_by(&self, owner: TrackId) -> Option<ScopeId> {
        self.nested.as_ref()?.owners.get(&owner).copied()
    }

    /// Whether any scope is open inside `id`.
    pub fn has_children(&self, id: ScopeId) -> bool {
        self.nested
            .as_ref()
            .is_some_and(|n| n.children.contains_key(&id))
    }

    /// The scopes opened, or whose last child closed, since the last call: the
    /// only ones that can have become empty (with the tracks' own list).
    pub fn take_emptied(&mut self) -> Vec<ScopeId> {
        match &mut self.nested {
            Some(nested) => std::mem::take(&mut nested.emptied),
            None => Vec::new(),
        }
    }

    /// Whether no scope but the process's is open.
    pub fn is_empty(&self) -> bool {
        self.nested.as_ref().is_none_or(|n| n.slots.is_empty())
    }

    /// The last nested scope id given out, and whether the process's scope was
    /// taken over (for a checkpoint).
    #[cfg(feature = "durable")]
    pub fn counters(&self) -> (u32, bool) {
        (
            self.nested.as_ref().map_or(0, |n| n.last),
            self.root_interrupted,
        )
    }

    /// Put back the scopes a checkpoint recorded.
    #[cfg(feature = "durable")]
    pub fn restore(&mut self, nested: Vec<ScopeSlot>, last: u32, root_interrupted: bool) {
        self.root_interrupted = root_interrupted;
        if nested.is_empty() && last == 0 {
            return;
        }
        let inner = self.nested_mut();
        for slot in nested {
            inner.insert(slot);
        }
        inner.last = last;
    }

    /// The nested scopes, in opening order.
    pub fn nested(&self) -> impl DoubleEndedIterator<Item = &ScopeSlot> + ExactSizeIterator {
        self.nested
            .as_ref()
            .map_or(&NONE_OPEN, |n| &n.slots)
            .values()
    }
}

impl Nested {
    fn insert(&mut self, slot: ScopeSlot) {
        if let Some(parent) = slot.parent {
            *self.children.entry(parent).or_insert(0) += 1;
        }
        if let Some(owner) = slot.owner {
            self.owners.insert(owner, slot.id);
        }
        // Empty until something runs in it: the loop looks at it after the step.
        self.emptied.push(slot.id);
        self.slots.insert(slot.id, slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_close() {
        let mut scopes = Scopes::default();
        assert_eq!(scopes.open(None, None, None), ROOT);
        let a = scopes.open(Some(3), Some(ROOT), Some(TrackId(0)));
        let b = scopes.open(Some(5), Some(a), None);
        assert!(scopes.within(b, ROOT) && scopes.within(b, a) && !scopes.within(a, b));
        assert_eq!(scopes.owned_by(TrackId(0)), Some(a));
        assert!(scopes.has_children(a) && scopes.get(b).unwrap().is_event_sub());
        scopes.interrupt(ROOT);
        assert!(scopes.is_interrupted(ROOT) && !scopes.is_interrupted(a));
        scopes.close(b);
        assert!(!scopes.has_children(a) && scopes.is_interrupted(b));
        // Each opened scope, and `a` once its last child closed, may be empty now.
        assert_eq!(scopes.take_emptied(), [a, b, a]);
        assert!(scopes.take_emptied().is_empty());
    }
}
