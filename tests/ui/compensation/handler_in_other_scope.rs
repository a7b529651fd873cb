//! A handler is declared beside the activity it undoes.

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
        subprocess pay {
            start s;
            task charge = work;
            boundary undo on charge: compensation -> refund;
            end e;
            s -> charge -> e;
        }
        task refund = work: compensation;
        end done;
        begin -> pay -> done;
    }
}

fn main() {}
