//! An activity has one compensation boundary at most.

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
        boundary undo_again on charge: compensation -> refund_again;
        task refund = work: compensation;
        task refund_again = work: compensation;
        end done;
        begin -> charge -> done;
    }
}

fn main() {}
