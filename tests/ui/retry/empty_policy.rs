//! An empty retry policy says nothing: the attempts are needed.

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
        task a = work: retry();
        end done;

        begin -> a -> done;
    }
}

fn main() {}
