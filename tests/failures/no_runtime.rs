//! No runtime: an instance whose runtime is gone ends `Lost`; its handle still answers.

use super::*;

#[test]
fn start_outside_a_runtime_fails_with_no_runtime() {
    let engine = Engine::new();
    let job = Job::new();
    let handle = engine.start(&WAITS, job.clone());
    assert!(handle.is_finished());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        assert_eq!(
            handle.outcome().await,
            Outcome::Failed(InstanceError::NoRuntime)
        );
        assert_eq!(handle.data().await, Some(job));
        assert!(handle.history().await.steps().is_empty());
        handle.cancel();
        assert_eq!(
            handle.outcome().await,
            Outcome::Failed(InstanceError::NoRuntime)
        );
    });
    assert_eq!(engine.running_instances(), 0);
}
