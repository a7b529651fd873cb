//! A failing store: a full disk fails what it must and names the cause.

use super::*;

/// A store that refuses every write once `full` is set (a full disk).
struct FullAfter {
    inner: MemoryStore,
    full: std::sync::atomic::AtomicBool,
}

impl Store for FullAfter {
    fn apply(&self, batch: &[thresh::store::Write]) -> Result<(), thresh::store::StoreError> {
        if self.full.load(Ordering::SeqCst) {
            return Err(thresh::store::StoreError::DiskFull {
                path: "test".into(),
            });
        }
        self.inner.apply(batch)
    }
    fn instance(
        &self,
        id: u64,
    ) -> Result<Option<thresh::store::InstanceRecord>, thresh::store::StoreError> {
        self.inner.instance(id)
    }
    fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<thresh::store::InstanceRecord>, thresh::store::StoreError> {
        self.inner.list(process, status)
    }
    fn messages(&self) -> Result<Vec<thresh::store::MessageRecord>, thresh::store::StoreError> {
        self.inner.messages()
    }
    fn deployments(
        &self,
    ) -> Result<Vec<thresh::store::DeploymentRecord>, thresh::store::StoreError> {
        self.inner.deployments()
    }
    fn next_ids(&self) -> Result<thresh::store::Ids, thresh::store::StoreError> {
        self.inner.next_ids()
    }
    fn tasks(
        &self,
        query: &thresh::TaskQuery,
    ) -> Result<Vec<thresh::store::TaskRecord>, thresh::store::StoreError> {
        self.inner.tasks(query)
    }
    fn claim_task(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<thresh::store::TaskRecord>, thresh::store::StoreError> {
        self.inner.claim_task(instance, number, user)
    }
}

/// A full disk: the start that cannot be stored is refused with the cause; an
/// instance whose checkpoint cannot be stored fails naming it; a completion that
/// cannot be stored is not acknowledged. Nothing panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_fails_the_instance_and_names_the_cause() {
    let store = Arc::new(FullAfter {
        inner: MemoryStore::new(),
        full: std::sync::atomic::AtomicBool::new(false),
    });
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    // Its checkpoint at the user task is stored (past its birth record); then the
    // disk fills.
    tokio::time::timeout(HANG, async {
        while store
            .inner
            .instance(handle.id().0)
            .expect("read")
            .is_none_or(|r| r.seq < 2)
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("checkpointed");
    store.full.store(true, Ordering::SeqCst);
    let refused = engine.start(&APPROVAL, Order::default()).await;
    assert!(
        matches!(&refused, Err(thresh::EngineError::Store(e)) if e.to_string().contains("full")),
        "{:?}",
        refused.map(|h| h.id())
    );
    let completed = handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await;
    assert!(
        matches!(&completed, Err(thresh::WorkError::NotStored { message }) if message.contains("full")),
        "{completed:?}"
    );
    let outcome = outcome(&handle).await;
    assert!(
        matches!(outcome.error(), Some(thresh::InstanceError::Checkpoint { message }) if message.contains("full")),
        "{outcome:?}"
    );
    engine.shutdown(HANG).await.expect("shutdown");
}
