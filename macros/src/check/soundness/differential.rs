//! The generator of `tests/soundness_differential.rs`: random small models, the
//! analysis' verdict on each, and for each deadlock the data that takes its run.
//!
//! A rejected model does not compile, and a proc-macro crate exports no functions, so
//! the analysis cannot be called from the root package. Instead this unit test runs
//! the analysis on each generated model and writes the file: every model, the
//! verdict, and — for a model it rejects — the same model with the joins it named
//! marked `may_deadlock` and the merges marked `multi` (markers change nothing at run
//! time), beside the condition bits that drive the witness run. A model called sound
//! is written unmarked, so the macro itself confirms the verdict when the file
//! compiles. `soundness_differential_rs_is_current` fails when the checked-in file
//! differs from the output; rewrite it with
//!
//! ```text
//! cargo test -p thresh-macros -- --ignored write_soundness_differential
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{analyse, Class};
use crate::ctx::Ctx;
use crate::model::Kind;
use crate::parse::Input;

const MODELS: usize = 90;
/// Models of crossing branches added after them (see `generate`).
const CROSSING: usize = 30;
const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/soundness_differential.rs"
);

pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One generated model: its declarations (by name, with kind keyword), flows, and
/// the bit each conditional flow reads.
#[derive(Default)]
struct Gen {
    decls: Vec<(String, String)>,
    flows: Vec<String>,
    /// (source, target) of each conditional flow, by bit.
    bits: Vec<(String, String)>,
    count: usize,
    /// Loops made so far: loop `l` counts its turns in `D::turns[l]`.
    loops: usize,
}

/// At most this many loops per model (`D::turns` has one counter each).
const MAX_LOOPS: usize = 8;

const KINDS: [&str; 3] = ["exclusive", "parallel", "inclusive"];

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.count += 1;
        format!("{prefix}{}", self.count)
    }

    /// A block: a task, or a split and a join (of random kinds) around 2 or 3
    /// branches. Returns its first and last node.
    /// `in_loop`: inside a loop's body, where inclusive joins may not stand (an OR-join
    /// on a cycle is a compile error), so joins there are exclusive or parallel.
    fn block(&mut self, rng: &mut Rng, depth: u32, in_loop: bool) -> (String, String) {
        if depth == 0 || rng.below(3) == 0 {
            let t = self.fresh("t");
            self.decls.push(("task".into(), format!("{t} = w")));
            return (t.clone(), t);
        }
        if self.loops < MAX_LOOPS && rng.below(5) == 0 {
            return self.looped(rng, depth);
        }
        let split_kind = KINDS[rng.below(3) as usize];
        // Half the joins match their split, so sound models are common too.
        let join_kind = if rng.below(2) == 0 {
            split_kind
        } else {
            KINDS[rng.below(3) as usize]
        };
        let join_kind = match join_kind {
            "inclusive" if in_loop => KINDS[rng.below(2) as usize],
            kind => kind,
        };
        let split = self.fresh("s");
        let join = self.fresh("j");
        self.decls.push((split_kind.into(), split.clone()));
        let n = 2 + rng.below(2) as usize;
        let mut lasts = Vec::new();
        for b in 0..n {
            let (first, last) = self.block(rng, depth - 1, in_loop);
            let guard = match split_kind {
                "parallel" => String::new(),
                _ if b + 1 == n => " else".into(),
                _ => {
                    let k = self.bits.len();
                    self.bits.push((split.clone(), first.clone()));
                    format!(" when |d| bit(d, {k})")
                }
            };
            self.flows.push(format!("{split} -> {first}{guard};"));
            lasts.push(last);
        }
        self.decls.push((join_kind.into(), join.clone()));
        self.flows.push(format!("{} -> {join};", lasts.join(", ")));
        (split, join)
    }

    /// A loop: an exclusive merge, a body, a task counting the turn, and an exclusive
    /// split back to the merge (its condition bit, and at most two turns, so every run
    /// ends) or on to a task after the loop.
    fn looped(&mut self, rng: &mut Rng, depth: u32) -> (String, String) {
        let l = self.loops;
        self.loops += 1;
        let merge = self.fresh("m");
        self.decls.push(("exclusive".into(), merge.clone()));
        let (first, last) = self.block(rng, depth - 1, true);
        let turn = self.fresh("c");
        self.decls.push((
            "task".into(),
            format!("{turn} = |d| async move {{ d.turns[{l}] += 1; Ok(()) }}"),
        ));
        let back = self.fresh("x");
        self.decls.push(("exclusive".into(), back.clone()));
        let after = self.fresh("t");
        self.decls.push(("task".into(), format!("{after} = w")));
        let k = self.bits.len();
        self.bits.push((back.clone(), merge.clone()));
        self.flows.push(format!("{merge} -> {first};"));
        self.flows.push(format!("{last} -> {turn} -> {back};"));
        self.flows.push(format!(
            "{back} -> {merge} when |d| bit(d, {k}) && d.turns[{l}] < 2;"
        ));
        self.flows.push(format!("{back} -> {after} else;"));
        (merge, after)
    }

    fn text(&self, name: &str, markers: &HashMap<String, &str>) -> String {
        let mut s = format!("pub {name}: D {{\n        start begin;\n");
        for (kw, decl) in &self.decls {
            let id = decl.split(' ').next().expect("an id");
            match markers.get(id) {
                Some(marker) => writeln!(s, "        {kw} {decl}: {marker};").unwrap(),
                None => writeln!(s, "        {kw} {decl};").unwrap(),
            }
        }
        s.push_str("        end done;\n");
        for f in &self.flows {
            writeln!(s, "        {f}").unwrap();
        }
        s.push_str("    }");
        s
    }
}

enum Verdict {
    Sound,
    /// Rejected for a deadlock: the condition bits of its witness run.
    Deadlock(u64),
}

/// A witness run's choices: each gateway (`"kind name"`) with the flows it took, as
/// (source, target) names.
type Choices = Vec<(String, Vec<(String, String)>)>;

/// The analysis' findings on a model text: (class, element, choices); `None` when a
/// scope was too large to explore completely (a loop whose body multiplies tokens),
/// where the verdict would be partial.
fn findings(text: &str) -> Option<Vec<(Class, String, Choices)>> {
    let input: Input = syn::parse_str(text).expect("the generated model parses");
    let ctx = Ctx::new();
    let model = crate::model::build(&ctx, &input.processes[0]);
    crate::check::all(&ctx, &model);
    assert!(
        ctx.finish().is_none(),
        "the generated model is well formed:\n{text}"
    );
    let name = |v: usize| model.nodes[v].id.to_string();
    let mut out = Vec::new();
    for (_, verdict) in analyse(&model, super::MAX_STATES) {
        if !verdict.complete {
            return None;
        }
        for f in verdict.findings {
            let choices = f
                .choices
                .iter()
                .map(|(v, flows)| {
                    let flows = flows
                        .iter()
                        .map(|&fl| (name(model.flows[fl].source), name(model.flows[fl].target)))
                        .collect();
                    let kind = match model.nodes[*v].kind {
                        Kind::Exclusive => "exclusive",
                        _ => "inclusive",
                    };
                    (format!("{kind} {}", name(*v)), flows)
                })
                .collect();
            out.push((f.class, name(f.at), choices));
        }
    }
    Some(out)
}

/// The bits that make each gateway take the flows the witness took; `None` when the
/// run needs one gateway to choose differently on two passes (data cannot do that).
fn witness_bits(g: &Gen, choices: &[(String, Vec<(String, String)>)]) -> Option<u64> {
    let mut set: HashMap<usize, bool> = HashMap::new();
    // A loop goes back at most once more than its first pass (`turns < 2`): a run
    // that goes back twice through one loop is not one the data can take.
    let mut backs: HashMap<&(String, String), usize> = HashMap::new();
    for (_, taken) in choices {
        for t in taken.iter().filter(|t| t.1.starts_with('m')) {
            *backs.entry(t).or_default() += 1;
        }
    }
    if backs.values().any(|&n| n > 1) {
        return None;
    }
    for (gateway, taken) in choices {
        let (_, node) = gateway.split_once(' ').expect("kind and node");
        // This gateway's conditional flows, by bit, in declared order.
        let own: Vec<usize> = (0..g.bits.len()).filter(|&k| g.bits[k].0 == node).collect();
        for &k in &own {
            // Set exactly the taken flows' bits: an exclusive split takes the first
            // true condition, an inclusive one every true one; none, the default.
            let value = taken.iter().any(|t| *t == g.bits[k]);
            if *set.entry(k).or_insert(value) != value {
                return None;
            }
        }
    }
    Some(
        set.iter()
            .filter(|(_, &v)| v)
            .fold(0, |acc, (&k, _)| acc | 1 << k),
    )
}

fn generate() -> String {
    let mut rng = Rng(0x5eed_2024_0016);
    let mut cases: Vec<(Gen, String, Verdict)> = Vec::new();
    let mut multi = 0;
    while cases.len() < MODELS {
        let mut g = Gen::default();
        let (first, last) = g.block(&mut rng, 3, false);
        if g.bits.len() > 60 || g.decls.len() > 40 {
            continue;
        }
        g.flows.insert(0, format!("begin -> {first};"));
        g.flows.push(format!("{last} -> done;"));
        let name = format!("M{}", cases.len());
        let plain = g.text(&name, &HashMap::new());
        let Some(found) = findings(&plain) else {
            continue;
        };
        if found.is_empty() {
            cases.push((g, plain, Verdict::Sound));
            continue;
        }
        let Some((_, _, choices)) = found
            .iter()
            .find(|(c, _, _)| matches!(c, Class::Deadlock | Class::ImproperCompletion))
        else {
            // Rejected for lack of synchronisation only: nothing to drive.
            continue;
        };
        let Some(bits) = witness_bits(&g, choices) else {
            continue;
        };
        // Mark what the analysis named, until it names nothing more.
        let mut markers: HashMap<String, &str> = HashMap::new();
        let mut text = plain;
        for _ in 0..4 {
            let Some(found) = findings(&text) else { break };
            if found.is_empty() {
                break;
            }
            for (class, at, _) in found {
                let marker = match class {
                    Class::Deadlock | Class::ImproperCompletion => "may_deadlock",
                    Class::LackOfSync => "multi",
                    Class::Dead => "",
                };
                markers.insert(at, marker);
            }
            if markers.values().any(|m| m.is_empty()) {
                break;
            }
            text = g.text(&name, &markers);
        }
        if markers.values().any(|m| m.is_empty()) || findings(&text) != Some(Vec::new()) {
            continue;
        }
        cases.push((g, text, Verdict::Deadlock(bits)));
    }
    // Models whose parallel branches cross (`marked.rs`), accepted as generated or once
    // the merges the analysis named are marked `multi` (markers change nothing at run
    // time): called sound, they must complete on every run like any other.
    let mut rng = Rng(0x5eed_0038_0090);
    let mut crossing = 0;
    while crossing < CROSSING {
        let c = super::marked::Crossing::generate(&mut rng);
        let mut g = Gen {
            decls: c
                .decls
                .iter()
                .map(|(kw, id, rest)| (kw.to_string(), format!("{id}{rest}")))
                .collect(),
            flows: c.flows.clone(),
            ..Gen::default()
        };
        g.flows.insert(0, format!("begin -> {};", c.decls[0].1));
        let name = format!("M{}", cases.len());
        let mut markers: HashMap<String, &str> = HashMap::new();
        let mut text = g.text(&name, &markers);
        let mut accepted = false;
        for _ in 0..8 {
            let Some(found) = findings(&text) else { break };
            if found.is_empty() {
                accepted = true;
                break;
            }
            if found
                .iter()
                .any(|(class, _, _)| *class != Class::LackOfSync)
            {
                break;
            }
            for (_, at, _) in found {
                markers.insert(at, "multi");
            }
            text = g.text(&name, &markers);
        }
        if accepted {
            multi += usize::from(!markers.is_empty());
            cases.push((g, text, Verdict::Sound));
            crossing += 1;
        }
    }
    assert!(
        multi >= CROSSING / 2,
        "enough crossing models needed a multi ({multi})"
    );
    // Loops are on both sides of the check: sound ones run with random data, rejected
    // ones driven into their deadlock.
    let looped = |sound: bool| {
        cases
            .iter()
            .filter(|(g, _, v)| g.loops > 0 && matches!(v, Verdict::Sound) == sound)
            .count()
    };
    assert!(
        looped(true) >= 20 && looped(false) >= 5,
        "enough models with loops"
    );
    render(&cases)
}

fn render(cases: &[(Gen, String, Verdict)]) -> String {
    let mut s = String::from(PROLOGUE);
    for (_, text, _) in cases {
        writeln!(s, "process! {{\n    {text}\n}}\n").unwrap();
    }
    s.push_str("/// Each model with the analysis' verdict: `None` sound, `Some(bits)` rejected for a\n/// deadlock, with the condition bits of the run it found.\nconst CASES: &[(&Process<D>, Option<u64>)] = &[\n");
    for (i, (_, _, verdict)) in cases.iter().enumerate() {
        match verdict {
            Verdict::Sound => writeln!(s, "    (&M{i}, None),").unwrap(),
            Verdict::Deadlock(bits) => writeln!(s, "    (&M{i}, Some({bits:#x})),").unwrap(),
        }
    }
    s.push_str("];\n");
    s.push_str(EPILOGUE);
    s
}

const PROLOGUE: &str = r#"//! Differential check of the compile-time soundness analysis against the engine:
//! random models of exclusive, parallel and inclusive splits and joins, and loops
//! (an exclusive merge, a body, an exclusive split back, at most two turns). A model the
//! analysis called sound must never end in `Deadlock`, whatever its conditions
//! choose; a model it rejected for a deadlock must end in one when the data takes the
//! run the analysis named. The last models' parallel branches cross (merges and joins
//! over any two open branches), each accepted as generated or once the merges the
//! analysis named for a lack of synchronisation are marked `multi`: called sound, they
//! complete on every run too, their multi-merges passing every token on.
//!
//! Generated by `macros/src/check/soundness/differential.rs` (the analysis runs there,
//! on each model; a rejected model would not compile, so it is written with the joins
//! the analysis named marked `may_deadlock` and its merges `multi`, which change
//! nothing at run time). Do not edit it by hand: change the generator and run
//! `cargo test -p thresh-macros -- --ignored write_soundness_differential`.

use thresh::{process, Engine, InstanceError, Outcome, Process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct D {
    /// Bit `k` is the condition of the `k`-th conditional flow.
    pub bits: u64,
    /// Loop `l`'s turns so far (a loop goes back at most twice).
    pub turns: [u8; 8],
}

async fn w(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

fn bit(d: &D, k: u32) -> bool {
    d.bits >> k & 1 == 1
}

"#;

const EPILOGUE: &str = r#"
async fn outcome(engine: &Engine, process: &'static Process<D>, bits: u64) -> Outcome<D> {
    let data = D {
        bits,
        ..D::default()
    };
    engine.start(process, data).await.unwrap().outcome().await
}

/// No model called sound deadlocks, over many runs with random conditions.
#[tokio::test]
async fn sound_models_never_deadlock() {
    let engine = Engine::new();
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut runs = 0;
    for (i, (process, verdict)) in CASES.iter().enumerate() {
        if verdict.is_some() {
            continue;
        }
        for _ in 0..64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let result = outcome(&engine, process, state).await;
            assert!(
                matches!(result, Outcome::Completed(_)),
                "M{i}, called sound, ended {result:?} with bits {state:#x}"
            );
            runs += 1;
        }
    }
    assert!(runs >= 64 * 10, "enough sound models ({runs} runs)");
}

/// Every model rejected for a deadlock deadlocks on the run the analysis named.
#[tokio::test]
async fn rejected_models_deadlock_on_their_witness() {
    let engine = Engine::new();
    let mut rejected = 0;
    for (i, (process, verdict)) in CASES.iter().enumerate() {
        let Some(bits) = *verdict else { continue };
        let result = outcome(&engine, process, bits).await;
        assert!(
            matches!(result, Outcome::Failed(InstanceError::Deadlock { .. })),
            "M{i}, rejected for a deadlock, ended {result:?} with bits {bits:#x}"
        );
        rejected += 1;
    }
    assert!(rejected >= 10, "enough rejected models ({rejected})");
}
"#;

#[test]
fn soundness_differential_rs_is_current() {
    let on_disk = std::fs::read_to_string(FILE).unwrap_or_default();
    assert!(
        on_disk == generate(),
        "tests/soundness_differential.rs is not the generator's output: run `cargo test -p thresh-macros -- --ignored write_soundness_differential`"
    );
}

#[test]
#[ignore]
fn write_soundness_differential() {
    std::fs::write(FILE, generate()).expect("written");
}
