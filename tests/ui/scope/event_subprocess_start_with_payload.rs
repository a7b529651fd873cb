//! An event sub-process's start waits for its event, so it takes what comes with
//! `apply`; `payload` is what a throw sends.

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
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping", payload = |d| d.score);
            task answer = work;
            end answered;
            ping -> answer -> answered;
        }
        end done;

        begin -> intake -> done;
    }
}

fn main() {}
