//! A message thrown by an instance (a throw event) to one that a resume left
//! asleep in the store (eviction on): the throw loads it, as a publish from outside
//! does, and it takes the message once.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Tab {
    pub id: String,
    pub paid: u64,
}

process! {
    TAB_OPEN: Tab {
        start s;
        receive pay: message("tab-paid", key = |t| t.id.clone(), apply = |t, amount: &u64| t.paid += *amount);
        end   e;
        s -> pay -> e;
    }
}

process! {
    TAB_PAYER: Tab {
        start s;
        throw pay: message("tab-paid", key = |t| t.id.clone(), payload = |t| t.paid);
        end   e;
        s -> pay -> e;
    }
}

fn register(engine: &DurableEngine) -> Result<(), thresh::EngineError> {
    engine.evict_idle(Some(Duration::ZERO));
    engine.register(&TAB_OPEN)?;
    engine.register(&TAB_PAYER)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_thrown_to_an_asleep_instance_wakes_it() {
    for round in 0..3 {
        let store = test_store();
        let engine = store.engine().expect("open");
        register(&engine).expect("register");
        let id = format!("T-{round}");
        let open = engine
            .start(
                &TAB_OPEN,
                Tab {
                    id: id.clone(),
                    paid: 0,
                },
            )
            .await
            .expect("stored")
            .id();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while engine.evicted_instances() != 1 {
            assert!(std::time::Instant::now() < deadline, "never evicted");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let restarted = thresh::testing::restart(engine, &store, register)
            .await
            .expect("restarted");
        let engine = restarted.engine;
        assert_eq!(restarted.report.asleep, 1, "left asleep by the resume");

        let payer = engine
            .start(
                &TAB_PAYER,
                Tab {
                    id: id.clone(),
                    paid: 9,
                },
            )
            .await
            .expect("stored");
        assert!(matches!(
            payer.outcome().await,
            thresh::Outcome::Completed(_)
        ));
        let ended = tokio::time::timeout(HANG, async {
            loop {
                match engine.instance(open).await.expect("read") {
                    Some((Status::Running, _)) => {
                        tokio::time::sleep(Duration::from_millis(1)).await
                    }
                    Some((status, outcome)) => return (status, outcome.unwrap_or_default()),
                    None => panic!("not stored"),
                }
            }
        })
        .await
        .expect("the thrown message woke it");
        assert_eq!(ended.0, Status::Completed);
        assert!(ended.1.contains("\"paid\":9"), "{}", ended.1);
        engine
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
    }
}
