use thresh::testing::{observe, Coverage};
use thresh::Engine;

use crate::tasks::{order, PACK};

static COVERAGE: Coverage = Coverage::new();

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coverage_assertions_and_the_overlay_read_a_multi_instance_run() {
    let engine = Engine::new();
    let h = engine.start(&PACK, order(&[2, 1, 0])).await.unwrap();
    h.outcome().await;
    observe(&h)
        .await
        .assert_passed(["s", "pack", "e"])
        .assert_outcome_completed()
        .assert_data("three labels", |o| o.labels.len() == 3);
    COVERAGE.add(&PACK, &h).await;
    COVERAGE.assert_at_least(&PACK, 100.0);
    let svg = PACK.to_svg_with(&h.history().await);
    // The activity is drawn passed once (its instances begin at it, spawned from
    // the token that reached it), with the parallel multi-instance marker's bars.
    assert!(svg.contains("<g id=\"pack\" class=\"passed\">"), "{svg}");
    let layout = PACK.layout();
    let pack = layout
        .shapes
        .iter()
        .find(|s| s.id == "pack")
        .unwrap()
        .bounds;
    let x = pack.x + pack.width / 2;
    for bar in [x - 4, x, x + 4] {
        assert!(
            svg.contains(&format!(
                "<line x1=\"{bar}\" y1=\"{}\"",
                pack.y + pack.height - 16
            )),
            "{svg}"
        );
    }
}
