//! A start event's outgoing flow cannot be the default flow.

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

        begin -> a else;
        a -> done;
    }
}

fn main() {}
