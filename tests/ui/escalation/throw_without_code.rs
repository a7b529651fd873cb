//! An escalation throw event needs its code.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task work = work;
        throw late: escalation;
        end done;

        begin -> work -> late -> done;
    }
}

fn main() {}
