//! A boundary event cannot be a link.

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
        boundary skip on work: link("skip");
        end done;

        begin -> work -> done;
        skip -> done;
    }
}

fn main() {}
