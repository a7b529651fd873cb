//! Each activity has its own handler.

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
        task reserve = work;
        boundary undo_charge on charge: compensation -> undo_all;
        boundary undo_reserve on reserve: compensation -> undo_all;
        task undo_all = work: compensation;
        end done;
        begin -> charge -> reserve -> done;
    }
}

fn main() {}
