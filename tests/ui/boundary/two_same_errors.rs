//! An activity has at most one interrupting boundary event per error code.

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
        boundary declined on work: error("DECLINED");
        boundary refused on work: error("DECLINED");
        end done;
        end failed;

        begin -> work -> done;
        declined -> failed;
        refused -> failed;
    }
}

fn main() {}
