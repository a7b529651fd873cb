//! An error boundary event cannot be `non_interrupting`: an error ends the activity that threw it.

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
        task work = work;
        boundary failed on work: non_interrupting error("DECLINED");
        end done;
        end declined;

        begin -> work -> done;
        failed -> declined;
    }
}

fn main() {}
