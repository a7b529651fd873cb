//! A loop lost with its runtime (the runtime dropped while the instance waits): the
//! instance ends `Lost`, its handle still answers, and a message for it is buffered,
//! not swallowed.

use super::*;

// Each test below pinned a bug of the instance loop (it failed before its fix).

process! {
    WAITS: D {
        start s;
        user u;
        end e;
        s -> u -> e;
    }
}

#[test]
fn a_handle_answers_after_its_runtime_was_dropped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (engine, h) = rt.block_on(async {
        let engine = Engine::new();
        let h = engine.start(&WAITS, D::default()).await.unwrap();
        expect_open_work(&h, "u").await;
        (engine, h)
    });
    drop(rt); // the instance's loop is dropped: its end is `Lost`
    let rt2 = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt2.block_on(async {
        let outcome = h.outcome().await;
        assert_eq!(outcome.error(), Some(&InstanceError::Lost));
        let data = tokio::time::timeout(Duration::from_secs(2), h.data()).await;
        assert!(
            data.is_ok(),
            "handle.data() hung on a lost instance (doc: `None` only if the loop was lost)"
        );
    });
    drop(engine);
}

process! {
    RECEIVES: D {
        start s;
        receive r: message("probe-m", key = |d| d.id.clone());
        end e;
        s -> r -> e;
    }
}

/// A lost instance's subscription swallows the message: its intake was never closed.
#[test]
fn a_message_for_a_lost_instance_is_buffered() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (engine, h) = rt.block_on(async {
        let engine = Engine::new();
        let h = engine
            .start(
                &RECEIVES,
                D {
                    x: 0,
                    id: "lost".into(),
                },
            )
            .await
            .unwrap();
        for _ in 0..1000 {
            if h.history()
                .await
                .count("r", |w| *w == thresh::Happening::Parked)
                > 0
            {
                break;
            }
            tokio::task::yield_now().await;
        }
        (engine, h)
    });
    drop(rt);
    let rt2 = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt2.block_on(async {
        assert_eq!(h.outcome().await.error(), Some(&InstanceError::Lost));
        let published = engine.publish_message("probe-m", "lost", ()).await.unwrap();
        assert_ne!(
            published,
            thresh::Published::Delivered,
            "the message went into the dead instance's intake and is gone"
        );
    });
}
