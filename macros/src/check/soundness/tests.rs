//! The analysis on parsed models: its verdicts, its budget, and its cost.

use super::{analyse, Class, Verdict};
use crate::ctx::Ctx;
use crate::parse::Input;

/// The verdicts on the one process of `src` (the body of a `process!`).
pub fn verdicts(src: &str, budget: usize) -> Vec<Verdict> {
    let input: Input = syn::parse_str(src).expect("the process parses");
    let ctx = Ctx::new();
    let ast = &input.processes[0];
    let model = crate::model::build(&ctx, ast);
    crate::check::all(&ctx, &model);
    if let Some(e) = ctx.finish() {
        panic!("the model has errors: {e}");
    }
    analyse(&model, budget)
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

fn classes(src: &str) -> Vec<Class> {
    verdicts(src, super::MAX_STATES)
        .iter()
        .flat_map(|v| v.findings.iter().map(|f| f.class))
        .collect()
}

#[test]
fn exclusive_split_into_parallel_join_deadlocks() {
    let found = classes(
        "P: D { start s; exclusive pick; task a = w; task b = w; parallel join; end e;
           s -> pick; pick -> a when |d| d.x; pick -> b else; a, b -> join -> e; }",
    );
    assert_eq!(found, [Class::Deadlock]);
}

#[test]
fn parallel_split_into_parallel_join_is_sound() {
    let found = classes(
        "P: D { start s; parallel fork; task a = w; task b = w; parallel join; end e;
           s -> fork -> a, b -> join -> e; }",
    );
    assert_eq!(found, []);
}

fn wide(n: usize) -> String {
    let tasks: String = (0..n).map(|i| format!("task t{i} = w; ")).collect();
    let ids: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
    format!(
        "P: D {{ start s; parallel fork; {tasks} parallel join; end e; s -> fork -> {} -> join -> e; }}",
        ids.join(", ")
    )
}

#[test]
fn twenty_parallel_branches_are_explored_completely() {
    let v = verdicts(&wide(20), super::MAX_STATES);
    assert!(v[0].complete && v[0].findings.is_empty());
}

#[test]
fn a_budget_too_small_leaves_the_verdict_incomplete_but_keeps_witnessed_findings() {
    // The classic mismatch behind a wide parallel block, with a budget of 2 markings.
    let src = "P: D { start s; exclusive pick; task a = w; task b = w; parallel join;
        parallel f2; task c = w; task d = w; parallel j2; end e;
        s -> pick; pick -> a when |d| d.x; pick -> b else; a, b -> join -> f2 -> c, d -> j2 -> e; }";
    let v = verdicts(src, 2);
    assert!(!v[0].complete);
    let found: Vec<Class> = v[0].findings.iter().map(|f| f.class).collect();
    assert_eq!(
        found,
        [Class::Deadlock],
        "the structural rule finds the mismatch"
    );
}

/// The process of a test file: the text inside its first `process! { ... }`.
fn process_in(path: &str) -> String {
    let text = std::fs::read_to_string(path).expect("the file is there");
    let start = text.find("process! {").expect("a process") + "process! {".len();
    let end = text[start..].find("\n}\n").expect("its end") + start;
    text[start..end].to_string()
}

/// How long the analysis takes on the large model and on 20 parallel branches.
/// `cargo test -p thresh-macros --release -- --ignored --nocapture expansion_time`
#[test]
#[ignore]
fn expansion_time() {
    let large = process_in(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/large_model.rs"
    ));
    for (name, src) in [
        ("tests/large_model.rs", large),
        ("20 parallel branches", wide(20)),
    ] {
        let input: Input = syn::parse_str(&src).expect("parses");
        let started = std::time::Instant::now();
        let ctx = Ctx::new();
        let model = crate::model::build(&ctx, &input.processes[0]);
        crate::check::all(&ctx, &model);
        let checked = started.elapsed();
        let verdicts = analyse(&model, super::MAX_STATES);
        let total = started.elapsed();
        let states: usize = verdicts.iter().map(|(_, v)| v.states).sum();
        let complete = verdicts.iter().all(|(_, v)| v.complete);
        println!(
            "{name}: {} nodes; model and checks {checked:?}, soundness {:?} ({states} markings, complete: {complete})",
            model.nodes.len(),
            total - checked
        );
    }
}

#[test]
fn parallel_split_into_exclusive_merge_lacks_synchronisation() {
    let src = |marker: &str| {
        format!(
            "P: D {{ start s; parallel fork; task a = w; task b = w; exclusive xm{marker}; task c = w; end e;
               s -> fork -> a, b -> xm -> c -> e; }}"
        )
    };
    assert_eq!(classes(&src("")), [Class::LackOfSync]);
    assert_eq!(classes(&src(": multi")), []);
}

#[test]
fn a_loop_through_an_exclusive_merge_is_sound() {
    let found = classes(
        "P: D { start s; exclusive again; task a = w; exclusive more; end e;
           s -> again -> a -> more; more -> again when |d| d.x; more -> e else; }",
    );
    assert_eq!(found, []);
}

#[test]
fn an_uneven_join_leaves_a_token_behind() {
    let found = classes(
        "P: D { start s; parallel fork; task x1 = w; task x2 = w; task y1 = w; exclusive xm;
           task a = w; task b = w; parallel join; task c = w; end done;
           s -> fork -> x1, x2, y1; x1, x2 -> xm -> a -> join; y1 -> b -> join; join -> c -> done; }",
    );
    assert_eq!(found, [Class::ImproperCompletion, Class::LackOfSync]);
}

#[test]
fn a_dead_task_behind_a_deadlock() {
    let found = classes(
        "P: D { start s; exclusive pick; task a = w; task b = w; parallel join; task c = w; end e;
           s -> pick; pick -> a when |d| d.x; pick -> b else; a, b -> join -> c -> e; }",
    );
    assert_eq!(found, [Class::Deadlock, Class::Dead]);
}

#[test]
fn inclusive_split_into_inclusive_join_is_sound_and_into_parallel_join_is_not() {
    let src = |join: &str| {
        format!(
            "P: D {{ start s; inclusive os; task a = w; task b = w; {join} j; end e;
               s -> os; os -> a when |d| d.x; os -> b when |d| d.y; a, b -> j -> e; }}"
        )
    };
    assert_eq!(classes(&src("inclusive")), []);
    assert_eq!(classes(&src("parallel")), [Class::Deadlock]);
}

/// A way out that only an interrupting event (here a timer event sub-process) offers
/// does not make a join fire: the deadlock is still reported, and `may_deadlock` is how
/// a model says that waiting for the way out is its design.
#[test]
fn a_deadlock_only_an_interrupting_event_sub_process_ends_is_reported() {
    let model = |marker: &str| {
        format!(
            "P: D {{ start s; exclusive pick; task a = w; task b = w; parallel join{marker}; end e;
               s -> pick; pick -> a when |d| d.x; pick -> b else; a, b -> join -> e;
               event_subprocess t {{ start ts: timer(std::time::Duration::from_secs(1)); end te; ts -> te; }} }}"
        )
    };
    assert_eq!(classes(&model("")), [Class::Deadlock]);
    assert_eq!(classes(&model(": may_deadlock")), []);
}

/// The same inside a sub-process whose interrupting timer boundary would end the wait.
#[test]
fn a_deadlock_only_a_boundary_on_the_sub_process_ends_is_reported() {
    let found = classes(
        "P: D { start s; subprocess inner { start is; exclusive pick; task a = w; task b = w;
               parallel join; end ie; is -> pick; pick -> a when |d| d.x; pick -> b else;
               a, b -> join -> ie; }
           boundary late on inner: timer(std::time::Duration::from_secs(1)); end e; end l;
           s -> inner -> e; late -> l; }",
    );
    assert_eq!(found, [Class::Deadlock]);
}

/// The elements each finding of `src` is at, with its class.
fn found_at(src: &str) -> Vec<(Class, String)> {
    let input: Input = syn::parse_str(src).expect("the process parses");
    let ctx = Ctx::new();
    let model = crate::model::build(&ctx, &input.processes[0]);
    crate::check::all(&ctx, &model);
    if let Some(e) = ctx.finish() {
        panic!("the model has errors: {e}");
    }
    analyse(&model, super::MAX_STATES)
        .into_iter()
        .flat_map(|(_, v)| v.findings)
        .map(|f| (f.class, model.nodes[f.at].id.to_string()))
        .collect()
}

/// Issue 38, model 1: a `multi` on one merge hides no lack of synchronisation at
/// another, whichever is declared first.
#[test]
fn a_multi_merge_excuses_only_itself_in_any_declaration_order() {
    let first = "P: D { start s; parallel p; task a = w; task c = w; exclusive mm0: multi;
        exclusive mm1; end e; s -> p; p -> a, mm0, c, mm1; a -> mm0; c -> mm1; mm0 -> e; mm1 -> e; }";
    let reversed = "P: D { start s; parallel p; task c = w; exclusive mm1; task a = w;
        exclusive mm0: multi; end e; s -> p; p -> a, mm0, c, mm1; a -> mm0; c -> mm1; mm0 -> e; mm1 -> e; }";
    for src in [first, reversed] {
        assert_eq!(found_at(src), [(Class::LackOfSync, "mm1".to_string())]);
    }
}

/// Issue 38, model 2: the doubling declared at `mm0` is not reported; the next one,
/// at the unmarked `jm` (a token from `p` and one from `mm0`), is.
#[test]
fn a_lack_behind_a_multi_merge_is_reported() {
    let src = |marker: &str| {
        format!(
            "P: D {{ start s; parallel p; task a = w; exclusive mm0: multi; exclusive jm{marker}; end e;
               s -> p; p -> a, mm0, jm; a -> mm0; mm0 -> jm; jm -> e; }}"
        )
    };
    assert_eq!(found_at(&src("")), [(Class::LackOfSync, "jm".to_string())]);
    assert_eq!(found_at(&src(": multi")), []);
}

/// What a multi-merge sends on is its own doubling's echo: two of its tokens meeting
/// again further on is no new lack.
#[test]
fn the_echo_of_a_multi_merge_is_not_reported() {
    let found = found_at(
        "P: D { start s; parallel p; task a = w; task b = w; exclusive mm: multi; exclusive x;
           task c = w; task d = w; exclusive y; end e;
           s -> p -> a, b -> mm -> x; x -> c when |d| d.x; x -> d else; c, d -> y -> e; }",
    );
    assert_eq!(found, []);
}

/// Issue 38, model 3: the OR-join `oj` waits for the token left at the `may_deadlock`
/// join `j`: that is the declared waiting, and nothing behind it is reported.
#[test]
fn what_waits_for_a_may_deadlock_join_is_not_reported() {
    let src = |marker: &str| {
        format!(
            "P: D {{ start s; parallel p; task a = w; exclusive m: multi; parallel j{marker};
               exclusive x; task c = w; inclusive oj; end e;
               s -> p; p -> a, m, j; a -> m; m -> j; j -> x;
               x -> c when |d| d.x > 0; x -> oj else; c -> oj; oj -> e; }}"
        )
    };
    assert_eq!(found_at(&src(": may_deadlock")), []);
    // Unmarked, `j`'s improper completion is reported, and `oj` as waiting for it.
    assert_eq!(
        found_at(&src("")),
        [
            (Class::Deadlock, "j".to_string()),
            (Class::Dead, "oj".to_string())
        ]
    );
}

/// A dead join's hint never proposes what it already is: the OR-join `oj` waits for
/// the token held at the complex gateway `cx` (whose activation can no longer hold),
/// and is told to become an exclusive merge, not an inclusive join.
#[test]
fn a_dead_or_join_is_not_told_to_become_an_inclusive_join() {
    let src = "P: D { start s; parallel p; task a = w; task q = w; exclusive x; task c1 = w;
        task c2 = w; complex cx: activate(count = 2); inclusive oj; end e;
        s -> p -> a, q; a -> x; x -> c1 when |d| d.x; x -> c2 else; c1, c2 -> cx;
        cx -> oj; q -> oj; oj -> e; }";
    let input: Input = syn::parse_str(src).expect("the process parses");
    let ctx = Ctx::new();
    let model = crate::model::build(&ctx, &input.processes[0]);
    crate::check::all(&ctx, &model);
    assert!(ctx.finish().is_none());
    let messages: Vec<(String, String)> = analyse(&model, super::MAX_STATES)
        .into_iter()
        .flat_map(|(_, v)| v.findings)
        .map(|f| (model.nodes[f.at].id.to_string(), f.message))
        .collect();
    let oj = &messages
        .iter()
        .find(|(at, _)| at == "oj")
        .expect("oj is dead")
        .1;
    assert!(oj.ends_with("make `oj` an exclusive merge"), "{oj}");
}

/// A multi-merge before the parallel split whose branches meet is no reason to drop
/// the parallel-join hint: each of its tokens forks and joins on its own.
#[test]
fn a_multi_merge_before_the_split_keeps_the_join_hint() {
    let src = "P: D { start s; parallel p0; task a = w; exclusive mm: multi; parallel p;
        task b = w; task c = w; exclusive x; end e;
        s -> p0 -> a, mm; a -> mm; mm -> p -> b, c -> x -> e; }";
    let input: Input = syn::parse_str(src).expect("the process parses");
    let ctx = Ctx::new();
    let model = crate::model::build(&ctx, &input.processes[0]);
    crate::check::all(&ctx, &model);
    assert!(ctx.finish().is_none());
    let findings: Vec<_> = analyse(&model, super::MAX_STATES)
        .into_iter()
        .flat_map(|(_, v)| v.findings)
        .collect();
    assert_eq!(findings.len(), 1);
    assert_eq!(model.nodes[findings[0].at].id.to_string(), "x");
    assert!(
        findings[0].message.contains("make `x` a parallel join"),
        "{}",
        findings[0].message
    );
}
