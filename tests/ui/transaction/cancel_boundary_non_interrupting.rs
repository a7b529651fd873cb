//! A cancel boundary always interrupts.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub charged: bool,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        transaction booking {
            start s;
            end stop: cancel;
            s -> stop;
        }
        boundary cancelled on booking: non_interrupting cancel;
        end done;
        end gave_up;
        begin -> booking -> done;
        cancelled -> gave_up;
    }
}

fn main() {}
