//! The timers page and `GET /api/timers`: each running instance's armed timers,
//! earliest first, with the element and the time left, linking to the instance —
//! from the listing in memory, from the store on SQLite.

use super::*;

thresh::process! {
    pub REMINDED: Ticket {
        start s;
        user work;
        boundary nudge on work: non_interrupting timer(Duration::from_secs(3600));
        end e;
        end nudged;
        s -> work -> e;
        nudge -> nudged;
    }
}

pub(super) async fn lists_armed_timers<E: ConsoleEngine>(engine: E) {
    let router = console::router(engine).process(&REMINDED).into_router();
    let (_, csrf) = get(&router, "/api/csrf").await;
    let token = csrf["token"].as_str().unwrap().to_string();
    let mut ids = Vec::new();
    for title in ["a", "b"] {
        let body = json!({ "process": "REMINDED", "data": { "title": title, "done": false } });
        let (status, answer) =
            post(&router, "/api/instances", Some(&token), &body.to_string()).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        ids.push(answer["id"].as_str().unwrap().to_string());
        // Due times a few milliseconds apart.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let timers = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let (status, answer) = get(&router, "/api/timers").await;
            assert_eq!(status, StatusCode::OK);
            if answer["timers"].as_array().unwrap().len() == 2 {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both instances' timers listed");
    let listed: Vec<(&str, &str)> = timers["timers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["instance"].as_str().unwrap(),
                t["element"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [(ids[0].as_str(), "nudge"), (ids[1].as_str(), "nudge")]
    );
    let first = &timers["timers"][0];
    assert_eq!(first["process"], "REMINDED");
    assert_eq!(first["version"], 1);
    let left = first["due_in_ms"].as_i64().unwrap();
    assert!(left > 3_500_000 && left <= 3_600_000, "{left}");
    let (status, html) = page(&router, "/timers").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains(&format!("<a href=\"/instances/{}\">", ids[0])),
        "{html}"
    );
    assert!(html.contains("<td>nudge</td>"), "{html}");
    assert!(html.contains("59 min"), "{html}");
}
