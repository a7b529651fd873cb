//! A compensation boundary interrupts nothing.

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
        boundary undo on charge: non_interrupting compensation -> refund;
        task refund = work: compensation;
        end done;
        begin -> charge -> done;
    }
}

fn main() {}
