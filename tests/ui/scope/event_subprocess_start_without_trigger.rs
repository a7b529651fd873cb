//! An event sub-process is started by an event, so its start event names one; a none
//! start (`start s;`) has nothing to wait for.

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
            start cancel;
            task undo = work;
            end cancelled;
            cancel -> undo -> cancelled;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
