//! Issue 38's model 3 without its `may_deadlock`: the parallel join `j` is left with
//! a token (the multi-merge `m` sends it two, `p` one), and the OR-join `oj` waits for
//! ever for that token, which could still reach it. `j` is the fault; `oj` is reported
//! as waiting for it, with no hint to make it what it already is. Marked
//! `parallel j: may_deadlock;` the model is accepted (`tests/soundness_accepts.rs`).

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: i64,
}

async fn w(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        parallel p;
        task a = w;
        exclusive m: multi;
        parallel j;
        exclusive x;
        task c = w;
        inclusive oj;
        end e;

        s -> p;
        p -> a, m, j;
        a -> m;
        m -> j;
        j -> x;
        x -> c when |d| d.x > 0;
        x -> oj else;
        c -> oj;
        oj -> e;
    }
}

fn main() {}
