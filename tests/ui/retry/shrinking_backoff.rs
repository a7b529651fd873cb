//! A backoff's longest wait is at least its first; the multiplier at least 1.

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
        task a = work: retry(4, backoff = 5min..1s, multiplier = 0.5);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
