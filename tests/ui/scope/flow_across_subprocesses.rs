//! A flow is written where both its ends are: not from one sub-process into a sibling,
//! not from a nested sub-process to the top level, not from inside a sub-process back
//! to the sub-process itself.

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
        subprocess check {
            start s1;
            task verify = work;
            end e1;
            s1 -> verify -> e1;
            verify -> assess;
        }
        subprocess handle {
            start s2;
            task assess = work;
            subprocess pay {
                start s3;
                task transfer = work;
                end e3;
                s3 -> transfer -> e3;
                transfer -> done;
            }
            end e2;
            s2 -> assess -> pay -> e2;
            assess -> handle;
        }
        end done;

        begin -> check -> handle -> done;
    }
}

fn main() {}
