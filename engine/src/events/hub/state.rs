//! The hub's state under its lock: names interned once, subscription ids, the
//! choices (an event-based gateway's arms), and where each subscription is, so a
//! removal finds it without a scan.

use std::sync::Arc;

use super::*;

impl State {
    /// The one `Arc` of a message name that catches wait on (names come from the
    /// processes' graphs, so the set stays as small as their catalogue).
    pub(super) fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(name) = self.names.get(name) {
            return Arc::clone(name);
        }
        let name: Arc<str> = name.into();
        self.names.insert(Arc::clone(&name));
        name
    }

    pub(super) fn next_id(&mut self) -> SubId {
        self.next_sub += 1;
        self.next_sub
    }

    /// Enter `sub` into `choice`; `false` if the choice is already made.
    pub(super) fn joins(&mut self, sub: SubId, choice: Option<ChoiceId>) -> bool {
        match choice {
            None => true,
            Some(choice) => match self.choices.get_mut(&choice) {
                Some(members) => {
                    members.push(sub);
                    true
                }
                None => false,
            },
        }
    }

    /// Make `choice`: every member's subscription goes. `false` if it was made
    /// already (a member served, or its loop closed it).
    pub(super) fn claim(&mut self, choice: ChoiceId) -> bool {
        let Some(members) = self.choices.remove(&choice) else {
            return false;
        };
        for member in members {
            self.remove(member);
        }
        true
    }

    /// Take `sub` out of wherever it is; where it was, or `None` if it was gone.
    pub(super) fn remove(&mut self, sub: SubId) -> Option<Place> {
        let place = self.subs.remove(&sub)?;
        match &place {
            Place::Signal(name, choice) => {
                if let Some(subscribers) = self.signals.get_mut(name) {
                    subscribers.remove(&sub);
                    if subscribers.is_empty() {
                        self.signals.remove(name);
                    }
                }
                self.leave(sub, *choice);
            }
            Place::MessageStarter(name) => {
                if let Some(starters) = self.message_starters.get_mut(name) {
                    starters.retain(|(s, _)| *s != sub);
                }
            }
            Place::SignalStarter(name) => {
                if let Some(starters) = self.signal_starters.get_mut(name) {
                    starters.retain(|(s, _)| *s != sub);
                }
            }
            Place::Message(at, choice) => {
                if let Some(waiters) = self.waiters.get_mut(at) {
                    waiters.retain(|(s, _)| *s != sub);
                    if waiters.is_empty() {
                        self.no_waiters(at);
                    }
                }
                self.leave(sub, *choice);
            }
        }
        Some(place)
    }

    /// Add a waiter for `at`, behind the others.
    pub(super) fn add_waiter(&mut self, at: MessageKey, waiter: Waiter) {
        match self.waiters.entry(at) {
            std::collections::hash_map::Entry::Occupied(mut waiting) => {
                waiting.get_mut().push_back(waiter);
            }
            std::collections::hash_map::Entry::Vacant(vacant) => {
                #[cfg(feature = "postgres")]
                if let Some(names) = &mut self.wait_names {
                    *names.entry(vacant.key().0.clone()).or_default() += 1;
                }
                // Usually one waiter per (name, key): room for exactly one.
                let mut waiters = VecDeque::with_capacity(1);
                waiters.push_back(waiter);
                vacant.insert(waiters);
            }
        }
    }

    /// No waiter is left for `at`: it leaves the map.
    pub(super) fn no_waiters(&mut self, at: &MessageKey) {
        let removed = self.waiters.remove(at).is_some();
        #[cfg(feature = "postgres")]
        if let (true, Some(names)) = (removed, &mut self.wait_names) {
            if let Some(count) = names.get_mut(&at.0) {
                *count -= 1;
                if *count == 0 {
                    names.remove(&at.0);
                }
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = removed;
    }

    /// `sub` leaves its open choice (it moved to another key, or was unsubscribed).
    pub(super) fn leave(&mut self, sub: SubId, choice: Option<ChoiceId>) {
        if let Some(members) = choice.and_then(|c| self.choices.get_mut(&c)) {
            members.retain(|&m| m != sub);
        }
    }
}
