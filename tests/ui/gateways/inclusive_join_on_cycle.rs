//! A converging inclusive gateway (OR-join) cannot lie on a cycle: its join is single-pass.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        exclusive entry;
        inclusive split;
        task a = work;
        task b = work;
        inclusive join;
        exclusive again;
        end done;

        begin -> entry -> split;
        split -> a when |d| d.x > 0;
        split -> b else;
        a, b -> join -> again;
        again -> entry when |d| d.x < 3;
        again -> done else;
    }
}

fn main() {}
