//! One compensation event sub-process per sub-process.

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
            end e;
            s -> charge -> e;
            event_subprocess undo1 {
                start u1: compensation;
                end e1;
                u1 -> e1;
            }
            event_subprocess undo2 {
                start u2: compensation;
                end e2;
                u2 -> e2;
            }
        }
        end done;
        begin -> pay -> done;
    }
}

fn main() {}
