//! An event sub-process runs on the one trigger of its one start event; a second
//! trigger needs an event sub-process of its own.

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
            start abort: signal("abort");
            task undo = work;
            end cancelled;
            cancel -> undo -> cancelled;
            abort -> undo;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
