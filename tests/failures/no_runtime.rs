//! No runtime: a start outside one is refused; an instance whose runtime is gone
//! ends `Lost`; its handle still answers.

use super::*;

/// A start outside any tokio runtime is refused with `NoRuntime`, not a panic, and
/// leaves nothing running.
#[test]
fn start_outside_a_runtime_fails_with_no_runtime() {
    let engine = Engine::new();
    let started = at_once(engine.start(&WAITS, Job::new()));
    assert!(
        matches!(started, Err(EngineError::NoRuntime)),
        "{started:?}"
    );
    assert_eq!(engine.running_instances(), 0);
}
