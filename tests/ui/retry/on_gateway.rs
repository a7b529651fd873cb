//! A gateway runs no handler: nothing to time out.

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
        exclusive a: timeout(30s);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
