//! `non_interrupting` marks the trigger after it; on its own it is no trigger.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        task intake = work;
        event_subprocess on_ping {
            start ping: non_interrupting;
            task note = work;
            end noted;
            ping -> note -> noted;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
