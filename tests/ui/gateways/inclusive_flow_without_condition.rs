//! Every non-default flow out of a splitting inclusive gateway needs a condition.

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
        inclusive split;
        task a = work;
        task b = work;
        inclusive join;
        end done;

        begin -> split;
        split -> a when |d| d.x > 0;
        split -> b;
        a, b -> join -> done;
    }
}

fn main() {}
