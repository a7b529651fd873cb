//! A conditional start event belongs in an event sub-process, never at the top level.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start ready: condition(|d| d.score > 70);
        task work = work;
        end done;

        ready -> work -> done;
    }
}

fn main() {}
