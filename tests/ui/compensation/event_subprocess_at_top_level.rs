//! A compensation event sub-process sits in a sub-process.

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
        task charge = work;
        boundary undo on charge: compensation -> refund;
        task refund = work: compensation;
        end done;
        begin -> charge -> done;
        event_subprocess undo_all {
            start s: compensation;
            end e;
            s -> e;
        }
    }
}

fn main() {}
