//! A process has at most one none start event.

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
        start again;
        task a = work;
        end done;

        begin -> a -> done;
        again -> a;
    }
}

fn main() {}
