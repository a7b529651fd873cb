//! A user task runs no handler: nothing to retry.

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
        user a: retry(3);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
