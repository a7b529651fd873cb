//! A boundary event is entered through its activity, so it has no incoming flow.

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
        boundary late on work: timer(std::time::Duration::from_secs(60));
        end done;
        end too_late;

        begin -> work -> done;
        begin -> late -> too_late;
    }
}

fn main() {}
