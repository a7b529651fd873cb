//! Two elements with the same identifier.

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
        task work_it = work;
        exclusive work_it;
        end done;

        begin -> work_it -> done;
    }
}

fn main() {}
