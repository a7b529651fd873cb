//! T-1 (a waiting track is parked, not spinning) and T-3 (an event fired in the
//! subscribe/park window is not lost).

use super::*;

// ----- T-1: parked, not spinning ----------------------------------------------------

/// T-1 (FR-1, NFR-3). A hundred instances wait for a message and one waits at a
/// gateway for a message or a two-hour timer. With all of them waiting, the paused
/// clock jumps an hour ahead at once — which tokio does only when no task is ready,
/// so no waiting track (nor its loop) polls or spins. They are all still waiting, with
/// nothing new in their histories; the far timer has not fired. Then each message
/// completes its instance, with no time passing.
#[test]
fn t1_waiting_instances_are_parked_and_let_the_clock_jump() {
    on_paused_runtime(async {
        let engine = Engine::new();
        let mut waiting: Vec<_> = Vec::new();
        for i in 0..100 {
            waiting.push(engine.start(&PAY, deal(format!("t1-{i}"))).await.unwrap());
        }
        let gated = engine
            .start(&PAY_OR_GIVE_UP, deal("t1-gate"))
            .await
            .unwrap();
        for h in &waiting {
            expect_parked(h, "paid").await;
        }
        expect_parked(&gated, "gate").await;

        let t0 = Instant::now();
        an_hour_later().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(3600));
        // A timeout on the outcome elapses too: they still wait.
        let still = tokio::time::timeout(Duration::from_secs(1800), waiting[0].outcome()).await;
        assert!(still.is_err(), "{:?}", still);
        assert_eq!(t0.elapsed(), Duration::from_secs(5400));
        for h in &waiting {
            assert!(!h.is_finished());
            assert_eq!(steps(&h.history().await), pay_parked());
        }
        assert_eq!(
            steps(&gated.history().await),
            [
                (0, "placed", Happening::Started),
                (0, "gate", Happening::Parked)
            ]
        );

        for i in 0..waiting.len() {
            let published = engine
                .publish_message("payment", format!("t1-{i}"), i as u64 + 1)
                .await
                .unwrap();
            assert_eq!(published, Published::Delivered);
        }
        assert_eq!(
            engine
                .publish_message("payment", "t1-gate", 7_u64)
                .await
                .unwrap(),
            Published::Delivered
        );
        for (i, h) in waiting.iter().enumerate() {
            let (outcome, history) = finish(h).await;
            assert_eq!(completed(outcome, &history).paid, i as u64 + 1);
            assert_eq!(steps(&history), pay_completed());
        }
        let (outcome, history) = finish(&gated).await;
        assert_eq!(completed(outcome, &history).paid, 7);
        assert_eq!(
            steps(&history),
            [
                (0, "placed", Happening::Started),
                (0, "gate", Happening::Parked),
                (0, "gate", routed(&["paid"])),
                (0, "paid", caught(&["paid"])),
                (0, "done", Happening::Ended),
            ]
        );
        // Delivering and running them took no time at all.
        assert_eq!(t0.elapsed(), Duration::from_secs(5400));
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                delivered: 101,
                ..BrokerStats::default()
            }
        );
        engine.shutdown(HANG).await.expect("every loop stops");
        assert_eq!(engine.running_instances(), 0);
    });
}

/// T-1, measured: while 200 instances wait on a real-clock runtime, its one worker is
/// idle — busy for a small part of the time at most (a spinning track would keep it
/// busy throughout). The bound is loose on purpose; what it asserts is "parked".
#[test]
fn t1_waiting_instances_keep_the_worker_idle() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let engine = Engine::new();
        let mut waiting: Vec<_> = Vec::new();
        for i in 0..200 {
            waiting.push(engine.start(&PAY, deal(format!("idle-{i}"))).await.unwrap());
        }
        for h in &waiting {
            expect_parked(h, "paid").await;
        }
        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.worker_total_busy_duration(0);
        let window = Duration::from_millis(300);
        tokio::time::sleep(window).await;
        let busy = metrics.worker_total_busy_duration(0) - before;
        assert!(
            busy < window / 3,
            "the worker was busy {busy:?} of {window:?} while every instance waited"
        );
        for (i, h) in waiting.iter().enumerate() {
            assert!(!h.is_finished());
            engine
                .publish_message("payment", format!("idle-{i}"), 1_u64)
                .await
                .unwrap();
        }
        for h in &waiting {
            let (outcome, history) = finish(h).await;
            completed(outcome, &history);
            assert_eq!(steps(&history), pay_completed());
        }
    });
}

// ----- T-3: nothing lost in the park window ----------------------------------------

/// T-3 (FR-5). The message is published before the start (buffered), right after it
/// (the loop may not have run yet), after a random pause, from another thread while
/// the loop runs, or once the instance is parked; `prep` is ready at once or yields
/// 1–3 times first, so the park itself moves around. The instance always completes
/// with that message's payload, and the broker delivered it exactly once.
async fn t3_a_message_in_the_park_window_is_not_lost(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("t3-{i}");
    let amount = 1_000 + i as u64;
    let data = Deal {
        spins: (i / 5 % 4) as u32,
        ..deal(&id)
    };
    let (handle, published) = match i % 5 {
        0 => {
            let published = engine
                .publish_message("payment", &id, amount)
                .await
                .unwrap();
            assert_eq!(published, Published::Buffered);
            (engine.start(&PAY, data).await.unwrap(), published)
        }
        1 => {
            let handle = engine.start(&PAY, data).await.unwrap();
            (
                handle,
                engine
                    .publish_message("payment", &id, amount)
                    .await
                    .unwrap(),
            )
        }
        2 => {
            let handle = engine.start(&PAY, data).await.unwrap();
            jitter().await;
            (
                handle,
                engine
                    .publish_message("payment", &id, amount)
                    .await
                    .unwrap(),
            )
        }
        3 => {
            let handle = engine.start(&PAY, data).await.unwrap();
            let publisher = engine.clone();
            let key = id.clone();
            let published = std::thread::spawn(move || {
                std::thread::yield_now();
                at_once(publisher.publish_message("payment", key, amount)).unwrap()
            })
            .join()
            .expect("publisher thread");
            (handle, published)
        }
        _ => {
            let handle = engine.start(&PAY, data).await.unwrap();
            expect_parked(&handle, "paid").await;
            let published = engine
                .publish_message("payment", &id, amount)
                .await
                .unwrap();
            assert_eq!(published, Published::Delivered);
            (handle, published)
        }
    };
    assert_ne!(published, Published::Dropped);
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).paid, amount);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            ..BrokerStats::default()
        },
        "run {i}: published {published:?}"
    );
    engine.shutdown(HANG).await.expect("the loop stops");
}

on_both_runtimes!(500 => t3_a_message_in_the_park_window_is_not_lost);

/// A message published before any catch waits is buffered and delivered when the
/// catch subscribes.
#[tokio::test(start_paused = true)]
async fn a_message_buffered_before_subscribe_is_delivered() {
    let engine = Engine::new();
    assert_eq!(
        engine
            .publish_message("payment", "early", 42_u64)
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 1,
            ..BrokerStats::default()
        }
    );
    let (outcome, history) = run(&engine, &PAY, deal("early")).await;
    assert_eq!(completed(outcome, &history).paid, 42);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            ..BrokerStats::default()
        }
    );
}
