//! A boundary event sits on an activity, and an event sub-process is not one: it is
//! not entered by a flow, so there is no work of it running on a path to guard.

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
        boundary late on on_cancel: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> intake -> done;
        late -> too_late;
    }
}

fn main() {}
