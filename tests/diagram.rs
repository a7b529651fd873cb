//! The pictures of a process (`thresh::diagram`), checked on a set of test processes
//! that use every element kind and on every example's process:
//! - the layout: no two shapes overlap (but a container and its content, a boundary
//!   event and its host), every shape lies inside its container, every boundary
//!   event sits on its host's bottom border, every route is orthogonal and joins
//!   its source to its target, the same process always gives the same output (in
//!   this run and in a second run of the test binary);
//! - the BPMN export: every element and flow is there with its id, and the files
//!   are written to `target/diagrams/bpmn/` for `tests/diagram/js/check.js`
//!   (bpmn-moddle and bpmnlint, run by `.ci/run`);
//! - the SVG and Mermaid outputs, with the SVGs written to `target/diagrams/svg/`;
//!   with `THRESH_CHROMIUM=1`, each SVG is rendered to PNG by headless Chromium and
//!   the test fails when a render fails.

#![allow(dead_code)]

#[path = "diagram/processes.rs"]
mod processes;

#[path = "diagram/markers.rs"]
mod markers;

#[path = "diagram/clear.rs"]
mod clear;

#[allow(clippy::all, unused)]
#[path = "../examples/approval.rs"]
mod approval;
#[allow(clippy::all, unused)]
#[path = "../examples/claims.rs"]
mod claims;
#[allow(clippy::all, unused)]
#[path = "../examples/loan.rs"]
mod loan;
#[allow(clippy::all, unused)]
#[path = "../examples/order.rs"]
mod order;
#[allow(clippy::all, unused)]
#[path = "../examples/payment.rs"]
mod payment;
#[allow(clippy::all, unused)]
#[path = "../examples/review.rs"]
mod review;
#[allow(clippy::all, unused)]
#[path = "../examples/saga.rs"]
mod saga;
#[allow(clippy::all, unused)]
#[path = "../examples/shipping.rs"]
mod shipping;

use std::path::PathBuf;

use thresh::diagram::{Layout, Point};

/// A process of any data type, as the checks need it.
struct Any {
    name: &'static str,
    layout: fn() -> Layout,
    bpmn: fn() -> String,
    svg: fn() -> String,
    mermaid: fn() -> String,
    nodes: fn() -> Vec<&'static str>,
    /// Each flow's (source, target) node indices.
    ends: fn() -> Vec<(usize, usize)>,
}

macro_rules! any {
    ($($p:path),* $(,)?) => {
        vec![$(Any {
            name: stringify!($p),
            layout: || $p.layout(),
            bpmn: || $p.to_bpmn(),
            svg: || $p.to_svg(),
            mermaid: || $p.to_mermaid(),
            nodes: || $p.nodes().iter().map(|n| n.id()).collect(),
            ends: || $p.flows().iter().map(|f| (f.source(), f.target())).collect(),
        }),*]
    };
}

fn all() -> Vec<Any> {
    any![
        processes::GATEWAYS,
        processes::EVENTS,
        processes::SCOPES,
        processes::LOOPS,
        processes::STARTS,
        processes::INSTANTIATING,
        processes::INSTANTIATING_PARALLEL,
        processes::CALLS,
        processes::MULTI,
        processes::COMPENSATION,
        approval::APPROVAL,
        claims::CLAIMS,
        loan::LOAN,
        order::ORDER,
        payment::PAYMENT,
        payment::LEDGER,
        review::REVIEW,
        saga::SAGA,
        shipping::ORDER,
        shipping::SHIPPING,
        words::WORDS,
    ]
}

/// `target/diagrams/<kind>/`, made afresh.
fn out_dir(kind: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/diagrams")
        .join(kind);
    std::fs::create_dir_all(&dir).expect("create the output folder");
    dir
}

fn file_name(name: &str) -> String {
    name.replace("::", "_").to_lowercase()
}

#[test]
fn no_shapes_overlap_and_every_shape_is_in_its_container() {
    for p in all() {
        let layout = (p.layout)();
        assert!(
            layout.overlapping().is_empty(),
            "{}: overlapping shapes {:?}",
            p.name,
            layout.overlapping()
        );
        for shape in &layout.shapes {
            if let Some(c) = shape.container {
                let outer = layout
                    .shapes
                    .iter()
                    .find(|s| s.node == c)
                    .expect("the container has a shape");
                assert!(
                    outer.bounds.contains(&shape.bounds),
                    "{}: {} sticks out of {}",
                    p.name,
                    shape.id,
                    outer.id
                );
            }
            assert!(
                shape.bounds.x >= 0 && shape.bounds.y >= 0,
                "{}: {} is off the page",
                p.name,
                shape.id
            );
            assert!(
                shape.bounds.x + shape.bounds.width <= layout.width
                    && shape.bounds.y + shape.bounds.height <= layout.height
            );
        }
        assert_eq!(
            layout.shapes.len(),
            (p.nodes)().len(),
            "{}: a shape per node",
            p.name
        );
    }
}

#[test]
fn boundary_events_sit_on_their_hosts_bottom_border() {
    for p in all() {
        let layout = (p.layout)();
        for b in layout.shapes.iter().filter(|s| s.host.is_some()) {
            let host = layout
                .shapes
                .iter()
                .find(|s| Some(s.node) == b.host)
                .expect("the host has a shape");
            let c = b.bounds.center();
            assert_eq!(
                c.y,
                host.bounds.y + host.bounds.height,
                "{}: {} is not on the bottom border",
                p.name,
                b.id
            );
            assert!(
                c.x > host.bounds.x && c.x < host.bounds.x + host.bounds.width,
                "{}: {}",
                p.name,
                b.id
            );
        }
        // Boundaries on one host do not overlap each other (checked above), and none
        // overlaps a shape other than its host (also above).
    }
}

fn on_border(p: Point, b: &thresh::diagram::Bounds) -> bool {
    let inside_x = p.x >= b.x && p.x <= b.x + b.width;
    let inside_y = p.y >= b.y && p.y <= b.y + b.height;
    ((p.x == b.x || p.x == b.x + b.width) && inside_y)
        || ((p.y == b.y || p.y == b.y + b.height) && inside_x)
}

/// Whether `p` lies on the outline of the shape drawn in `b`: its box's border, or,
/// for a gateway's diamond or an event's circle (`tag`, the element's BPMN type),
/// that curve, to a pixel.
fn on_outline(p: Point, b: &thresh::diagram::Bounds, tag: &str) -> bool {
    let c = b.center();
    let (dx, dy) = (f64::from((p.x - c.x).abs()), f64::from((p.y - c.y).abs()));
    let (hw, hh) = (f64::from(b.width) / 2.0, f64::from(b.height) / 2.0);
    if tag.ends_with("Gateway") {
        (dx / hw + dy / hh - 1.0).abs() * hw <= 1.0
    } else if tag.ends_with("Event") {
        ((dx * dx + dy * dy).sqrt() - hw).abs() <= 1.0
    } else {
        on_border(p, b)
    }
}

#[test]
fn routes_are_orthogonal_and_join_their_ends() {
    for p in all() {
        let layout = (p.layout)();
        for edge in &layout.edges {
            let w = &edge.waypoints;
            assert!(w.len() >= 2, "{}: {} has a route", p.name, edge.id);
            for pair in w.windows(2) {
                assert!(
                    pair[0].x == pair[1].x || pair[0].y == pair[1].y,
                    "{}: {} has a slanted segment {:?}",
                    p.name,
                    edge.id,
                    pair
                );
            }
        }
        // Every route starts on its source's border and ends on its target's.
        let bpmn = (p.bpmn)();
        for edge in &layout.edges {
            let flow_tag = bpmn
                .lines()
                .find(|l| l.contains(&format!("<bpmn:sequenceFlow id=\"{}\"", edge.id)))
                .unwrap_or_else(|| panic!("{}: {} is exported", p.name, edge.id));
            let attr = |name: &str| {
                let start =
                    flow_tag.find(&format!("{name}=\"")).expect("the attribute") + name.len() + 2;
                flow_tag[start..]
                    .split('"')
                    .next()
                    .expect("a value")
                    .to_string()
            };
            let (source, target) = (attr("sourceRef"), attr("targetRef"));
            let s = layout.shape(&source).expect("source shape");
            let t = layout.shape(&target).expect("target shape");
            let (first, last) = (edge.waypoints[0], edge.waypoints[edge.waypoints.len() - 1]);
            assert!(
                on_border(first, &s.bounds),
                "{}: {} starts off {source}: {first:?} {:?}",
                p.name,
                edge.id,
                s.bounds
            );
            let target_tag = bpmn
                .lines()
                .find(|l| l.contains(&format!(" id=\"{target}\"")) && !l.contains("sequenceFlow"))
                .and_then(|l| l.trim_start().strip_prefix("<bpmn:"))
                .and_then(|l| l.split([' ', '>']).next())
                .unwrap_or("");
            assert!(
                on_outline(last, &t.bounds, target_tag),
                "{}: {} ends off {target}: {last:?} {:?}",
                p.name,
                edge.id,
                t.bounds
            );
        }
    }
}

/// Set for the second run of [`the_same_process_gives_the_same_pictures`]: the file
/// that run writes every picture to.
const PICTURES_TO: &str = "THRESH_DIAGRAM_PICTURES_TO";

/// Every process's pictures, one `(process, kind, text)` each.
fn pictures() -> Vec<(&'static str, &'static str, String)> {
    let mut all_pictures = Vec::new();
    for p in all() {
        all_pictures.push((p.name, "bpmn", (p.bpmn)()));
        all_pictures.push((p.name, "svg", (p.svg)()));
        all_pictures.push((p.name, "mermaid", (p.mermaid)()));
    }
    all_pictures
}

/// The pictures as one text, each after a header line that names it.
fn pictures_text() -> String {
    let mut text = String::new();
    for (name, kind, picture) in pictures() {
        text.push_str(&format!("\u{1e}{name} {kind}\n{picture}\n"));
    }
    text
}

/// The pictures do not depend on anything but the process: two calls in this process
/// agree, and so does a second run of this test binary (another process: other hash
/// seeds, other addresses), which writes its pictures to a file.
#[test]
fn the_same_process_gives_the_same_pictures() {
    if let Some(path) = std::env::var_os(PICTURES_TO) {
        std::fs::write(path, pictures_text()).expect("write the pictures");
        return;
    }
    for ((name, kind, first), (_, _, second)) in pictures().into_iter().zip(pictures()) {
        assert!(
            first == second,
            "{name}: two {kind} pictures differ in one process"
        );
    }
    let path = out_dir("second-run").join("pictures.txt");
    let _ = std::fs::remove_file(&path);
    let run = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "the_same_process_gives_the_same_pictures",
            "--quiet",
        ])
        .env(PICTURES_TO, &path)
        .output()
        .expect("run the test binary again");
    assert!(run.status.success(), "the second run failed: {run:?}");
    let there = std::fs::read_to_string(&path).expect("the second run's pictures");
    let here = pictures_text();
    for (mine, theirs) in here.split('\u{1e}').zip(there.split('\u{1e}')) {
        let header = mine.lines().next().unwrap_or_default();
        assert!(
            mine == theirs,
            "{header}: differs in a second run of the test binary"
        );
    }
    assert_eq!(
        here.len(),
        there.len(),
        "the second run drew other processes"
    );
}

#[test]
fn bpmn_export_has_every_element_and_is_written_for_the_js_check() {
    let dir = out_dir("bpmn");
    for p in all() {
        let xml = (p.bpmn)();
        for id in (p.nodes)() {
            assert!(
                xml.contains(&format!(" id=\"{id}\"")),
                "{}: element {id}",
                p.name
            );
            assert!(
                xml.contains(&format!("bpmnElement=\"{id}\"")),
                "{}: shape of {id}",
                p.name
            );
        }
        assert!(xml.contains("isExecutable=\"true\""));
        std::fs::write(dir.join(format!("{}.bpmn", file_name(p.name))), xml)
            .expect("write the file");
    }
}

fn tag_of<'a>(xml: &'a str, id: &str) -> &'a str {
    xml.lines()
        .find(|l| l.contains(&format!(" id=\"{id}\"")))
        .unwrap_or_else(|| panic!("element {id}"))
}

#[test]
fn bpmn_elements_and_definitions_are_the_right_ones() {
    let xml = processes::EVENTS.to_bpmn();
    assert!(tag_of(&xml, "shout").starts_with("    <bpmn:intermediateThrowEvent"));
    assert!(tag_of(&xml, "ready").starts_with("    <bpmn:intermediateCatchEvent"));
    assert!(tag_of(&xml, "approve").starts_with("    <bpmn:userTask"));
    assert!(
        tag_of(&xml, "answer").contains("<bpmn:receiveTask")
            && tag_of(&xml, "answer").contains("messageRef=\"Message_answer\"")
    );
    assert!(tag_of(&xml, "jump").starts_with("    <bpmn:intermediateThrowEvent"));
    assert!(tag_of(&xml, "next").starts_with("    <bpmn:intermediateCatchEvent"));
    assert_eq!(xml.matches("<bpmn:linkEventDefinition id=").count(), 2);
    assert_eq!(
        xml.matches("name=\"next\" />").count(),
        2,
        "both link events carry the pair's name"
    );
    assert!(
        !xml.contains("Flow_jump_next"),
        "a link throw has no outgoing sequence flow"
    );
    for def in [
        "signal",
        "message",
        "escalation",
        "conditional",
        "error",
        "terminate",
    ] {
        assert!(
            xml.contains(&format!("<bpmn:{def}EventDefinition")),
            "{def}"
        );
    }
    assert!(xml.contains("<bpmn:error id=\"Error_BROKEN\" name=\"BROKEN\" errorCode=\"BROKEN\" />"));
    assert!(xml.contains("errorRef=\"Error_BROKEN\""));

    let xml = processes::GATEWAYS.to_bpmn();
    assert!(
        tag_of(&xml, "triage").contains("<bpmn:exclusiveGateway")
            && tag_of(&xml, "triage").contains("default=\"Flow_triage_skipped\"")
    );
    assert!(tag_of(&xml, "gather").contains("gatewayDirection=\"Converging\""));
    assert!(
        tag_of(&xml, "pick").contains("<bpmn:inclusiveGateway")
            && tag_of(&xml, "pick").contains("gatewayDirection=\"Diverging\"")
    );
    assert!(tag_of(&xml, "approved").contains("<bpmn:complexGateway"));
    assert!(tag_of(&xml, "gate").contains("<bpmn:eventBasedGateway"));
    assert!(
        xml.contains("|j| j.n &lt; 10 &amp;&amp; !j.ok</bpmn:conditionExpression>"),
        "conditions escaped"
    );
    assert!(xml.contains(
        "<bpmn:timeDuration xsi:type=\"bpmn:tFormalExpression\">PT1H</bpmn:timeDuration>"
    ));
    assert!(xml.contains("<bpmn:documentation>Nothing to do.</bpmn:documentation>"));

    let xml = processes::SCOPES.to_bpmn();
    assert!(tag_of(&xml, "outer").contains("<bpmn:subProcess"));
    assert!(tag_of(&xml, "inner_watch").contains("triggeredByEvent=\"true\""));
    assert!(
        tag_of(&xml, "nudged").contains("attachedToRef=\"outer\"")
            && tag_of(&xml, "nudged").contains("cancelActivity=\"false\"")
    );
    assert!(!tag_of(&xml, "cancelled").contains("cancelActivity"));
    assert!(tag_of(&xml, "watch").contains("isInterrupting=\"false\""));
    assert!(tag_of(&xml, "outer_di").contains("isExpanded=\"true\""));
    assert!(xml
        .contains("<bpmn:timeCycle xsi:type=\"bpmn:tFormalExpression\">R3/PT1M</bpmn:timeCycle>"));

    let xml = processes::COMPENSATION.to_bpmn();
    assert!(tag_of(&xml, "booking").contains("<bpmn:transaction"));
    assert!(
        tag_of(&xml, "refund").contains("<bpmn:serviceTask")
            && tag_of(&xml, "refund").contains("isForCompensation=\"true\"")
    );
    assert!(tag_of(&xml, "undo_charge").contains("attachedToRef=\"charge\""));
    assert!(xml.contains("<bpmn:association id=\"Association_undo_charge_refund\" associationDirection=\"One\" sourceRef=\"undo_charge\" targetRef=\"refund\" />"));
    assert!(xml.contains("bpmnElement=\"Association_undo_flight_cancel_flight\""));
    assert!(xml.contains(
        "<bpmn:compensateEventDefinition id=\"undo_one_definition\" activityRef=\"charge\" />"
    ));
    assert!(xml.contains("<bpmn:compensateEventDefinition id=\"undone_definition\" />"));
    assert_eq!(xml.matches("<bpmn:cancelEventDefinition").count(), 2);
    assert!(tag_of(&xml, "undo_booking").contains("triggeredByEvent=\"true\""));

    let mermaid = processes::COMPENSATION.to_mermaid();
    assert!(
        mermaid.contains("undo_charge -. compensation .-> refund"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("subgraph booking[\"transaction: booking\"]"),
        "{mermaid}"
    );

    let xml = processes::INSTANTIATING_PARALLEL.to_bpmn();
    assert!(
        tag_of(&xml, "first").contains("instantiate=\"true\"")
            && tag_of(&xml, "first").contains("eventGatewayType=\"Parallel\"")
    );
}

#[test]
fn svgs_and_mermaid_are_written() {
    let dir = out_dir("svg");
    for p in all() {
        let svg = (p.svg)();
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")
                && svg.trim_end().ends_with("</svg>")
        );
        assert!(
            !svg.contains("href=\"http") && !svg.contains("@import"),
            "self-contained"
        );
        for id in (p.nodes)() {
            assert!(
                svg.contains(&format!("<g id=\"{id}\"")),
                "{}: {id} drawn",
                p.name
            );
        }
        std::fs::write(dir.join(format!("{}.svg", file_name(p.name))), svg)
            .expect("write the file");
        let mermaid = (p.mermaid)();
        assert!(mermaid.starts_with("flowchart LR\n"));
    }
}

/// The SVG of an instance of STUCK waiting at its user task after three rounds of
/// its loop, and of an instance of BROKEN whose task failed.
async fn instance_svgs() -> Vec<(String, String)> {
    use processes::{Job, BROKEN, STUCK};
    let engine = thresh::Engine::with_config(thresh::EngineConfig::fail_fast());
    let stuck = engine.start(&STUCK, Job::default()).await.unwrap();
    thresh::testing::expect_open_work(&stuck, "approve").await;
    // Let the other branch finish and wait at the join.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    let waiting = STUCK.to_svg_with(&stuck.history().await);
    stuck.cancel();
    let broken = engine.start(&BROKEN, Job::default()).await.unwrap();
    let outcome = broken.outcome().await;
    assert_eq!(outcome.kind(), "failed");
    let failed = BROKEN.to_svg_with(&broken.history().await);
    vec![
        ("instance_stuck".into(), waiting),
        ("instance_broken".into(), failed),
    ]
}

#[tokio::test]
async fn an_instance_is_drawn_on_its_process() {
    let svgs = instance_svgs().await;
    let (waiting, failed) = (&svgs[0].1, &svgs[1].1);
    assert!(
        waiting.contains("<g id=\"approve\" class=\"waiting\">"),
        "the user task waits"
    );
    assert!(
        waiting.contains("<g id=\"join\" class=\"waiting\">"),
        "the other token waits at the join"
    );
    assert!(waiting.contains("<g id=\"notify\" class=\"passed\">"));
    assert!(waiting.contains("<g id=\"done\" class=\"idle\">"));
    // `count` ran three times: its badge says 3.
    let count_at = waiting.find("<g id=\"count\"").expect("count drawn");
    assert!(waiting[count_at..].contains(">3</text>"));
    assert!(
        failed.contains("<g id=\"charge\" class=\"failed\">") && failed.contains("card declined")
    );
    assert!(failed.contains("<g id=\"prepare\" class=\"passed\">"));
    let dir = out_dir("svg");
    for (name, svg) in &svgs {
        std::fs::write(dir.join(format!("{name}.svg")), svg).expect("write the file");
    }
}

/// With `THRESH_CHROMIUM=1` (`.ci/run` sets it), every example's SVG, three test
/// processes' and two instances' are rendered to PNG by headless Chromium in
/// `target/diagrams/png/`; a failed render or a missing or empty PNG fails the test.
#[tokio::test]
async fn svgs_render_in_chromium() {
    if std::env::var("THRESH_CHROMIUM").as_deref() != Ok("1") {
        eprintln!("skipped: set THRESH_CHROMIUM=1 to render the SVGs in headless Chromium");
        return;
    }
    let dir = out_dir("png");
    let mut svgs: Vec<(String, String)> = all()
        .iter()
        .filter(|p| {
            !p.name.starts_with("processes::")
                || [
                    "processes::GATEWAYS",
                    "processes::EVENTS",
                    "processes::SCOPES",
                ]
                .contains(&p.name)
        })
        .map(|p| (file_name(p.name), (p.svg)()))
        .collect();
    svgs.extend(instance_svgs().await);
    for (name, svg) in svgs {
        let svg_path = dir.join(format!("{name}.svg"));
        let png_path = dir.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&png_path);
        std::fs::write(&svg_path, &svg).expect("write the svg");
        let size = |attr: &str| -> u32 {
            let at = svg.find(&format!("{attr}=\"")).expect("a size") + attr.len() + 2;
            svg[at..]
                .split('"')
                .next()
                .and_then(|v| v.parse().ok())
                .expect("a number")
        };
        let profile =
            std::env::temp_dir().join(format!("thresh-chromium-{}-{name}", std::process::id()));
        let output = std::process::Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--screenshot={}", png_path.display()))
            // Headless Chromium draws nothing in a very small window: at least 800×400.
            .arg(format!(
                "--window-size={},{}",
                size("width").clamp(800, 4000),
                size("height").clamp(400, 4000)
            ))
            .arg(format!("file://{}", svg_path.display()))
            .output()
            .expect("run chromium (apt-get install -y chromium)");
        let _ = std::fs::remove_dir_all(&profile);
        let png = std::fs::metadata(&png_path);
        assert!(
            output.status.success() && png.as_ref().is_ok_and(|m| m.len() > 1000),
            "{name}: chromium did not render: {:?}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The README shows `examples/order.rs`'s process as `to_mermaid()` writes it.
#[test]
fn the_readme_shows_the_order_process_in_mermaid() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let start = readme.find("```mermaid\n").expect("a mermaid block") + "```mermaid\n".len();
    let end = start + readme[start..].find("```").expect("its end");
    assert_eq!(
        &readme[start..end],
        order::ORDER.to_mermaid(),
        "update the README's mermaid block"
    );
}

mod words {
    use thresh::ProcessData;

    #[derive(Clone, Debug, Default, ProcessData)]
    pub struct W {
        pub n: u32,
        pub urgent: bool,
    }

    thresh::process! {
        /// A link whose name is neither event's id, a conditional catch and a complex
        /// join with a conditioned activation: what the graph keeps in words.
        pub WORDS: W {
            start     begin;
            parallel  fork;
            task      a = |_w| async move { Ok(()) };
            task      b = |_w| async move { Ok(()) };
            complex   both: activate(count = 2) | activate(count = 1, require = [a], when = |w| w.urgent);
            throw     leave: link("over there");
            catch     arrive: link("over there");
            catch     big: condition(|w| w.n > 3, on = [n]);
            end       done;

            begin -> fork -> a, b;
            a, b -> both -> leave;
            arrive -> big -> done;
        }
    }
}

#[test]
fn bpmn_keeps_link_names_conditions_and_activation_rules() {
    let xml = words::WORDS.to_bpmn();
    assert_eq!(
        xml.matches("<bpmn:linkEventDefinition id=").count(),
        2,
        "{xml}"
    );
    assert_eq!(
        xml.matches("name=\"over there\" />").count(),
        2,
        "both events of the pair carry the name written in `link(..)`"
    );
    assert!(xml.contains(
        "<bpmn:condition xsi:type=\"bpmn:tFormalExpression\">|w| w.n &gt; 3</bpmn:condition>"
    ));
    assert!(xml.contains(
        "<bpmn:activationCondition xsi:type=\"bpmn:tFormalExpression\">activate(count = 2) | activate(count = 1, require = [a], when = |w| w.urgent)</bpmn:activationCondition>"
    ));
    let arrive = words::WORDS.node("arrive").expect("arrive");
    assert_eq!(arrive.id(), "arrive");
}

/// Issue 37's layout rules over the examples' layout-less exports (`diagram/clear.rs`;
/// the import corpus is checked the same way in `tests/import_corpus.rs`).
#[test]
fn no_labels_overlap_and_no_flow_crosses_a_shape() {
    let (mut found, mut associations) = (Vec::new(), 0);
    for p in all() {
        let (layout, ends) = ((p.layout)(), (p.ends)());
        associations += layout.associations.len();
        found.extend(
            clear::problems(&layout, &ends)
                .into_iter()
                .map(|m| format!("{}: {m}", p.name)),
        );
    }
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found.join("\n")
    );
    assert!(
        associations > 0,
        "compensation associations are checked too"
    );
}
