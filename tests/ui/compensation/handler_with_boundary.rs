//! A compensation handler takes no boundary events.

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
        task charge = work;
        boundary undo on charge: compensation -> refund;
        task refund = work: compensation;
        boundary slow on refund: timer(std::time::Duration::from_secs(5));
        end done;
        end late;
        begin -> charge -> done;
        slow -> late;
    }
}

fn main() {}
