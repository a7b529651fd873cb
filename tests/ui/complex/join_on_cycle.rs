//! A converging complex gateway cannot lie on a cycle: its join is single-pass.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub urgent: bool,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        complex join: activate(count = 1);
        task review = work;
        exclusive again;
        end done;

        begin -> join -> review -> again;
        again -> join when |d| d.urgent;
        again -> done else;
    }
}

fn main() {}
