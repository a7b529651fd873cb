//! The named activity is in the scope the throw compensates.

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
        subprocess pay {
            start s;
            task charge = work;
            boundary undo on charge: compensation -> refund;
            task refund = work: compensation;
            end e;
            s -> charge -> e;
        }
        throw back: compensation(charge);
        end done;
        begin -> pay -> back -> done;
    }
}

fn main() {}
