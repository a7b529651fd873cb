//! A boundary event needs the event it catches.

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
        boundary late on work;
        end done;
        end too_late;

        begin -> work -> done;
        late -> too_late;
    }
}

fn main() {}
