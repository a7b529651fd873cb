//! A start event cannot be a link.

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
        start begin: link("go");
        task handle = work;
        end done;

        begin -> handle -> done;
    }
}

fn main() {}
