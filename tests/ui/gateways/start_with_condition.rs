//! A start event's outgoing flow cannot have a condition.

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
        task a = work;
        end done;

        begin -> a when |d| d.x > 0;
        a -> done;
    }
}

fn main() {}
