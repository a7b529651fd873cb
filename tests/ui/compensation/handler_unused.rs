//! A task marked as a compensation handler that no boundary names.

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
        task refund = work: compensation;
        end done;
        begin -> charge -> done;
    }
}

fn main() {}
