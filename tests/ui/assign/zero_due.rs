//! A due time of zero would make the task overdue as it opens.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

#[allow(dead_code)]
async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        user a: due(0d);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
