//! No flow crosses the edge of an event sub-process: a flow from outside cannot reach
//! an element inside it (it runs only when the trigger of its start event comes), and
//! a flow inside it cannot leave it (it ends at its own end events).

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
            undo -> done;
        }
        end done;

        begin -> intake -> undo;
        intake -> done;
    }
}

fn main() {}
