//! A duration needs a unit the DSL knows.

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
        task a = work: timeout(30sec);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
