//! Who works a task and when goes on a user task only: a service task runs a handler.

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
        task a = work: assignee("alice") | priority(80);
        end done;

        begin -> a -> done;
    }
}

fn main() {}
