//! No flow enters or leaves an event sub-process: its start's trigger runs it, and it
//! ends at its own end events.

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
            start cancel: signal("cancel");
            task undo = work;
            end cancelled;
            cancel -> undo -> cancelled;
        }
        end done;

        begin -> intake -> on_cancel;
        on_cancel -> done;
        intake -> done;
    }
}

fn main() {}
