//! The one timer of the evicted instances (`evict.rs`): the due-time index's
//! earliest entry is slept on; what falls due is woken — a dormant instance by an
//! input on its kept intake, an asleep one loaded on a new intake.

use std::sync::{Arc, Weak};

use tokio::time::Instant;

use super::Inner;
use crate::instance::Input;

/// The one timer of the evicted instances: it wakes each at its earliest due time.
pub(super) async fn drive_timer(
    inner: Weak<Inner>,
    core: Weak<crate::engine::Inner>,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        let Some(engine) = inner.upgrade() else {
            return;
        };
        let dormancy = &engine.dormancy;
        let now = Instant::now();
        let mut due = Vec::new();
        let next = {
            let mut index = dormancy.due.lock().unwrap_or_else(|p| p.into_inner());
            while let Some(&(at, id)) = index.first() {
                if at > now {
                    break;
                }
                index.pop_first();
                due.push(id);
            }
            index.first().map(|&(at, _)| at)
        };
        if !due.is_empty() {
            let mut asleep = Vec::new();
            {
                let dormant = dormancy.dormant.lock().unwrap_or_else(|p| p.into_inner());
                for id in due {
                    match dormant.get(&id) {
                        Some(dormant) => {
                            let _ = dormant.intake.sender().send(Input::Wake);
                        }
                        None => asleep.push(id),
                    }
                }
            }
            // Nothing to send to: loaded here, on new intakes.
            if let (false, Some(core), Some(runtime)) =
                (asleep.is_empty(), core.upgrade(), dormancy.runtime.get())
            {
                for id in asleep {
                    let (durable, core) = (Arc::clone(&engine), Arc::clone(&core));
                    runtime.spawn(async move { durable.load(&core, id).await.map(|_| ()) });
                }
            }
        }
        let earlier = dormancy.earlier.clone();
        drop(engine);
        let earlier = earlier.notified();
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = earlier => {}
            _ = stop.cancelled() => return,
        }
    }
}
