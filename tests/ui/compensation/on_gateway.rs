//! A compensation boundary sits on an activity.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub charged: bool,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        exclusive choose;
        boundary undo on choose: compensation -> refund;
        task refund = work: compensation;
        end done;
        begin -> choose -> done;
    }
}

fn main() {}
