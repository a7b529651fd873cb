//! An activity has at most one interrupting boundary event per timer.

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
        boundary too_late on work: timer(std::time::Duration::from_secs(60));
        end done;
        end failed;

        begin -> work -> done;
        late -> failed;
        too_late -> failed;
    }
}

fn main() {}
