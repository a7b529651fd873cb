//! An unknown element in a flow with no near name: the error suggests declaring it.

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
        task check_stock = work;
        end done;

        begin -> check_stock -> shipment -> done;
    }
}

fn main() {}
