//! The history's buffers: scratch, growth and drops.

use super::*;

fn first_step(steps: usize) -> History {
    let mut history = History::lazy(8);
    history.lend_scratch();
    assert!(history.scratch);
    for _ in 0..steps {
        history.push(TrackId(0), "t", Happening::TaskStarted);
    }
    history.return_scratch();
    history
}

#[test]
fn a_long_first_step_sizes_the_next_new_scratch_buffer() {
    // On a thread of its own: the scratch buffers are the thread's.
    std::thread::spawn(|| {
        let long = first_step(200);
        assert_eq!((long.steps().len(), long.steps.capacity()), (200, 200));
        // The long one kept its buffer: the next is made at its length, so a
        // second as long never grows it (nor is cut).
        let mut again = History::lazy(8);
        again.lend_scratch();
        assert!(again.scratch);
        assert_eq!(again.steps.capacity(), 200);
        again.return_scratch();
        // A short one is copied out at its length; the buffer stays the thread's.
        let short = first_step(3);
        assert_eq!((short.steps().len(), short.steps.capacity()), (3, 3));
        // Past `SCRATCH_COPY` steps, the buffer is kept, cut to its length.
        let medium = first_step(SCRATCH_COPY + 1);
        assert_eq!(medium.steps.capacity(), SCRATCH_COPY + 1);
    })
    .join()
    .unwrap();
}

#[test]
fn a_history_drops_its_steps_one_by_one_only_when_one_owns_heap_memory() {
    let mut plain = History::lazy(8);
    plain.push(TrackId(0), "t", Happening::TaskStarted);
    plain.push(
        TrackId(0),
        "t",
        Happening::Completed {
            changed: Cow::Borrowed(&[]),
        },
    );
    plain.push(
        TrackId(0),
        "g",
        Happening::Routed {
            to: Cow::Borrowed(&["x", "y"]),
        },
    );
    plain.push(
        TrackId(0),
        "g",
        Happening::Routed {
            to: Vec::new().into(),
        },
    );
    assert!(!plain.owns_heap);
    let copy = plain.clone();
    assert_eq!(copy, plain);
    drop(plain);
    assert_eq!(copy.steps().len(), 4, "a clone keeps its own steps");

    for owner in [
        Happening::Completed {
            changed: vec!["a"].into(),
        },
        Happening::Caught {
            changed: vec!["a"].into(),
        },
        Happening::Routed {
            to: vec!["x"].into(),
        },
        Happening::Failed {
            message: "boom".into(),
        },
        Happening::ErrorThrown { code: "E1".into() },
        Happening::Escalated { code: "up".into() },
    ] {
        let mut history = History::lazy(8);
        history.push(TrackId(0), "t", Happening::TaskStarted);
        history.push(TrackId(0), "t", owner.clone());
        // Set once, kept for the steps that follow.
        history.push(TrackId(0), "e", Happening::Ended);
        assert!(history.owns_heap, "{owner:?} owns heap memory");
        let copy = history.clone();
        assert!(copy.owns_heap);
        assert_eq!(copy.steps()[1].what, owner);
    }
    // Under valgrind or miri, the loop above must leak nothing.
}

/// Collects the `node` field of every TRACE event.
struct TraceNodes(std::sync::Mutex<Vec<String>>);

impl tracing::Subscriber for TraceNodes {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Node<'a>(&'a mut Option<String>);
        impl tracing::field::Visit for Node<'_> {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "node" {
                    *self.0 = Some(value.to_string());
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn fmt::Debug) {}
        }
        if *event.metadata().level() == tracing::Level::TRACE {
            let mut node = None;
            event.record(&mut Node(&mut node));
            self.0.lock().unwrap().extend(node);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn a_recorded_step_is_a_trace_event_whether_or_not_the_history_keeps_it() {
    let nodes = std::sync::Arc::new(TraceNodes(std::sync::Mutex::new(Vec::new())));
    tracing::subscriber::with_default(nodes.clone(), || {
        let mut kept = History::lazy(8);
        kept.record(TrackId(0), "a", Happening::TaskStarted, false);
        let mut off = History::off();
        off.record(
            TrackId(0),
            "b",
            Happening::Failed {
                message: "x".into(),
            },
            true,
        );
        // A step pushed, not recorded (a restored one), is no event.
        kept.push(TrackId(0), "c", Happening::Ended);
        assert_eq!(kept.steps().len(), 2);
        assert!(off.steps().is_empty());
    });
    assert_eq!(*nodes.0.lock().unwrap(), ["a", "b"]);
}
