//! `when` qualifies exactly one flow, not a hop from several sources.

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
        exclusive merge;
        end done;

        begin -> fork -> a, b;
        a, b -> merge when |d| d.x > 0;
        merge -> done;
    }
}

fn main() {}
