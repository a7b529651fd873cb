//! One scope has at most one interrupting event sub-process per event: the first takes
//! the scope over when the event comes, so the second would never run.

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
        event_subprocess on_cancel_again {
            start cancel_again: signal("cancel");
            task refund = work;
            end refunded;
            cancel_again -> refund -> refunded;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
