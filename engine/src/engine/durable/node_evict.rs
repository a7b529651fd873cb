//! A node's evicted instances (feature `postgres`; `evict.rs` for eviction, README
//! "Durable instances"): what it holds asleep keeps its lease through the node's
//! renewals, which know it by owner, not by loop; one whose lease another node took
//! (this node's renewals failed for a lease) is forgotten here.

use std::collections::HashSet;

use tracing::warn;

use super::cluster::Node;
use super::Inner;
use crate::store::PostgresStore;

impl Node {
    /// Forget the instances held asleep here whose leases another node took (this
    /// node's renewals failed for a lease): no loop to stop, but a wake here would
    /// load one only to be fenced, and a request for it must go to its owner.
    pub(super) fn sweep_asleep(&self, store: &PostgresStore, kept: &HashSet<u64>) {
        let Some(durable) = self.durable.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let candidates = durable.asleep_not_in(kept);
        if candidates.is_empty() {
            return;
        }
        // Not renewed: ended, or taken over here after the renewal read (still
        // ours), or moved. Only the moved ones go.
        match store.moved(&candidates) {
            Ok(moved) if !moved.is_empty() => {
                warn!(node = %self.id, instances = moved.len(), "lost the leases of instances held asleep here: forgotten");
                durable.forget_asleep(&moved);
            }
            Ok(_) => {}
            Err(e) => warn!(node = %self.id, error = %e, "checking for lost leases failed"),
        }
    }
}

impl Inner {
    /// The instances asleep here that are not among `owned` (a node's renewal:
    /// the instances it still owns).
    pub(super) fn asleep_not_in(&self, owned: &std::collections::HashSet<u64>) -> Vec<u64> {
        let asleep = self.dormancy.asleep.lock();
        let asleep = asleep.unwrap_or_else(|p| p.into_inner());
        asleep
            .keys()
            .filter(|id| !owned.contains(id))
            .copied()
            .collect()
    }

    /// The process of instance `id` if it is evicted here (a request for it read
    /// before it loads).
    pub(super) fn evicted_process(&self, id: u64) -> Option<&'static str> {
        let dormancy = &self.dormancy;
        let dormant = dormancy.dormant.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dormant) = dormant.get(&id) {
            return Some(dormant.process.name);
        }
        drop(dormant);
        let asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
        asleep.get(&id).map(|asleep| asleep.process.name)
    }

    /// Forget the asleep instances `ids` (another node owns them now).
    pub(super) fn forget_asleep(&self, ids: &[u64]) {
        let dormancy = &self.dormancy;
        let mut asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
        for id in ids {
            if let Some(gone) = asleep.remove(id) {
                dormancy.count(&gone, -1);
            }
        }
    }
}
