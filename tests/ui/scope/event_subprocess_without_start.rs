//! An event sub-process has its own start event, which names the event that runs it.

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
        start begin;
        task intake = work;
        event_subprocess on_cancel {
            task undo = work;
            end cancelled;
            undo -> cancelled;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
