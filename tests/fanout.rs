//! Wide splits and joins: a parallel split and join of every width from 1 to 64
//! branches (64 processes, each written out by a declarative macro that expands to a
//! literal `process!`), and a 64-way inclusive split and OR-join taking random subsets
//! (the OR-join's bit masks are full at 64 incoming flows).
//!
//! Every scenario runs on a paused current-thread runtime and on a four-worker
//! multi-thread runtime (see `common`), at least 200 times each.

#[macro_use]
mod common;

use common::*;
use thresh::{process, Engine, Happening, Process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Wide {
    /// Bit `k`: the inclusive split takes branch `k`.
    mask: u64,
}

async fn branch(_: &mut Wide) -> Result<(), TaskError> {
    jitter().await;
    Ok(())
}

/// Declares one parallel fan-out process per prefix of the branch list: `$name` gets
/// the branches so far plus `$next`. At the end, `FANOUTS` lists them all, narrowest
/// first.
macro_rules! fanouts {
    (@step [$($done:ident)*] [$next:ident $($rest:ident)*] [$name:ident $($names:ident)*] [$($made:ident)*]) => {
        process! {
            $name: Wide {
                start s;
                parallel fork;
                $(task $done = branch;)*
                task $next = branch;
                parallel join;
                end done;

                s -> fork -> $($done,)* $next;
                $($done,)* $next -> join -> done;
            }
        }
        fanouts!(@step [$($done)* $next] [$($rest)*] [$($names)*] [$($made)* $name]);
    };
    (@step [$($done:ident)*] [] [] [$($made:ident)*]) => {
        static FANOUTS: &[&Process<Wide>] = &[$(&$made),*];
    };
    ([$($branch:ident)*] [$($name:ident)*]) => {
        fanouts!(@step [] [$($branch)*] [$($name)*] []);
    };
}

fanouts!(
    [
        b00 b01 b02 b03 b04 b05 b06 b07 b08 b09 b10 b11 b12 b13 b14 b15
        b16 b17 b18 b19 b20 b21 b22 b23 b24 b25 b26 b27 b28 b29 b30 b31
        b32 b33 b34 b35 b36 b37 b38 b39 b40 b41 b42 b43 b44 b45 b46 b47
        b48 b49 b50 b51 b52 b53 b54 b55 b56 b57 b58 b59 b60 b61 b62 b63
    ]
    [
        P01 P02 P03 P04 P05 P06 P07 P08 P09 P10 P11 P12 P13 P14 P15 P16
        P17 P18 P19 P20 P21 P22 P23 P24 P25 P26 P27 P28 P29 P30 P31 P32
        P33 P34 P35 P36 P37 P38 P39 P40 P41 P42 P43 P44 P45 P46 P47 P48
        P49 P50 P51 P52 P53 P54 P55 P56 P57 P58 P59 P60 P61 P62 P63 P64
    ]
);

/// The branch names `b00..` of a width.
fn branches(width: usize) -> Vec<String> {
    (0..width).map(|k| format!("b{k:02}")).collect()
}

async fn run_fanout(engine: &Engine, width: usize) {
    let process = FANOUTS[width - 1];
    assert_eq!(process.node("fork").expect("fork").outgoing().len(), width);
    let (outcome, h) = run(engine, process, Wide::default()).await;
    completed(outcome, &h);
    let mut tasks: Vec<String> = h.completed_tasks().iter().map(|t| t.to_string()).collect();
    tasks.sort_unstable();
    assert_eq!(tasks, branches(width), "width {width}\n{h}");
    assert_eq!(h.tracks(), width);
    assert_eq!(
        h.count("fork", |w| matches!(w, Happening::Spawned { .. })),
        width - 1
    );
    if width == 1 {
        // One incoming flow: the join is a pass-through.
        assert_eq!(routes(&h, "join"), [["done"]]);
        assert_eq!(h.fired("join"), 0);
    } else {
        assert_eq!(h.fired("join"), 1, "width {width}\n{h}");
        assert_eq!(h.count("join", |w| *w == Happening::Merged), width - 1);
        assert_eq!(h.count("join", |w| *w == Happening::Waiting), width - 1);
    }
    assert_eq!(h.ended_at(), ["done"]);
}

/// Run `i` uses width `i % 64 + 1`: 256 runs cover every width four times.
async fn parallel_fanout_of_every_width(engine: Engine, i: usize) {
    run_fanout(&engine, i % 64 + 1).await;
}

async fn parallel_fanout_of_64(engine: Engine, _: usize) {
    run_fanout(&engine, 64).await;
}

#[tokio::test(start_paused = true)]
async fn parallel_fanout_of_every_width_current_thread() {
    repeat(256, parallel_fanout_of_every_width).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_fanout_of_every_width_multi_thread() {
    repeat(256, parallel_fanout_of_every_width).await;
}

// ----- a 64-way inclusive split and OR-join ------------------------------------------

/// One inclusive split into 64 branches, each taken when its bit of `mask` is set,
/// and one OR-join of all 64.
macro_rules! wide_inclusive {
    ($name:ident: $(($branch:ident $bit:literal))*) => {
        process! {
            $name: Wide {
                start s;
                inclusive os;
                $(task $branch = branch;)*
                inclusive oj;
                end done;

                s -> os;
                $(os -> $branch when |w| w.mask >> $bit & 1 == 1;)*
                $($branch),* -> oj -> done;
            }
        }
    };
}

wide_inclusive!(INCLUSIVE_64:
    (b00 0) (b01 1) (b02 2) (b03 3) (b04 4) (b05 5) (b06 6) (b07 7)
    (b08 8) (b09 9) (b10 10) (b11 11) (b12 12) (b13 13) (b14 14) (b15 15)
    (b16 16) (b17 17) (b18 18) (b19 19) (b20 20) (b21 21) (b22 22) (b23 23)
    (b24 24) (b25 25) (b26 26) (b27 27) (b28 28) (b29 29) (b30 30) (b31 31)
    (b32 32) (b33 33) (b34 34) (b35 35) (b36 36) (b37 37) (b38 38) (b39 39)
    (b40 40) (b41 41) (b42 42) (b43 43) (b44 44) (b45 45) (b46 46) (b47 47)
    (b48 48) (b49 49) (b50 50) (b51 51) (b52 52) (b53 53) (b54 54) (b55 55)
    (b56 56) (b57 57) (b58 58) (b59 59) (b60 60) (b61 61) (b62 62) (b63 63)
);

async fn inclusive_fanout_of_64(engine: Engine, i: usize) {
    let mask = match i % 8 {
        0 => u64::MAX,
        1 => 1 << 63,
        2 => 1,
        3 => u64::MAX >> 1,
        _ => random() | 1 << (i % 64),
    };
    let (outcome, h) = run(&engine, &INCLUSIVE_64, Wide { mask }).await;
    completed(outcome, &h);
    let expected: Vec<String> = branches(64)
        .into_iter()
        .enumerate()
        .filter(|(k, _)| mask >> k & 1 == 1)
        .map(|(_, b)| b)
        .collect();
    let mut tasks: Vec<String> = h.completed_tasks().iter().map(|t| t.to_string()).collect();
    tasks.sort_unstable();
    assert_eq!(tasks, expected, "mask {mask:#x}\n{h}");
    assert_eq!(h.fired("oj"), 1, "mask {mask:#x}\n{h}");
    assert_eq!(
        h.count("oj", |w| *w == Happening::Merged),
        expected.len() - 1
    );
    assert_eq!(h.ended_at(), ["done"]);
}

flavors!(parallel_fanout_of_64, inclusive_fanout_of_64);
