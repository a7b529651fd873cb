//! A parallel gateway's outgoing flow cannot be the default flow.

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
        parallel fork;
        task a = work;
        task b = work;
        parallel join;
        end done;

        begin -> fork;
        fork -> a;
        fork -> b else;
        a, b -> join -> done;
    }
}

fn main() {}
