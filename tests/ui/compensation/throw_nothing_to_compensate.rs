//! A compensation throw in a scope where nothing can be undone.

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
        end undo_all: compensation;
        begin -> charge -> undo_all;
    }
}

fn main() {}
