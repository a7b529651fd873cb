//! A message start event of an event sub-process waits inside a running instance, so
//! it needs a correlation key, like any message catch.

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
            start cancel: message("cancel");
            task undo = work;
            end cancelled;
            cancel -> undo -> cancelled;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
