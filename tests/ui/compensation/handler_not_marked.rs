//! The handler a compensation boundary names is a task marked `: compensation`.

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
        task refund = work;
        end done;
        begin -> charge -> done;
    }
}

fn main() {}
