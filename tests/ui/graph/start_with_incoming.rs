//! A start event cannot have an incoming flow.

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
        exclusive again;
        end done;

        begin -> a -> again;
        again -> begin when |d| d.x < 3;
        again -> done else;
    }
}

fn main() {}
