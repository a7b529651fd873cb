//! Only a compensation boundary names a handler.

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
        boundary late on charge: timer(std::time::Duration::from_secs(5)) -> refund;
        task refund = work;
        end done;
        begin -> charge -> done;
        late -> refund -> done;
    }
}

fn main() {}
