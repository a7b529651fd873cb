//! `when` qualifies exactly one flow, not a hop to several targets.

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
        exclusive choose;
        task a = work;
        task b = work;
        exclusive merge;
        end done;

        begin -> choose;
        choose -> a, b when |d| d.x > 0;
        a, b -> merge -> done;
    }
}

fn main() {}
