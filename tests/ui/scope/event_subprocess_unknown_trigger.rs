//! An event sub-process starts on a message, signal, timer, condition, error or
//! escalation; any other kind after the `:` is an error (with a suggestion).

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
            start cancel: singal("cancel");
            task undo = work;
            end cancelled;
            cancel -> undo -> cancelled;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
