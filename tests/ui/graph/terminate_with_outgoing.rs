//! A terminate end event cannot have an outgoing flow.

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
        task b = work;
        end abort: terminate;
        end done;

        begin -> a -> abort;
        abort -> b -> done;
    }
}

fn main() {}
