//! The named activity has a compensation boundary.

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
        task ship = work;
        boundary undo on charge: compensation -> refund;
        task refund = work: compensation;
        throw back: compensation(ship);
        end done;
        begin -> charge -> ship -> back -> done;
    }
}

fn main() {}
