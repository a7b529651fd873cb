//! `non_interrupting` belongs on a boundary event or an event sub-process's start; a
//! process's own start interrupts nothing.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin: non_interrupting signal("ping");
        task intake = work;
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
