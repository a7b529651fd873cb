//! Soundness is decided in every scope: the deadlock inside a sub-process is
//! reported there.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
    pub y: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        subprocess check {
            start c1;
            exclusive pick;
            task a = work;
            task b = work;
            parallel join;
            end c2;
            c1 -> pick;
            pick -> a when |d| d.x > 0;
            pick -> b else;
            a, b -> join -> c2;
        }
        end e;

        s -> check -> e;
    }
}

fn main() {}
