//! A standard loop needs its `while` condition; `max` is at least 1.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub items: Vec<u32>,
    pub out: Vec<u32>,
    pub n: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        #[standard_loop(max = 3)]
        task a = work;
        #[standard_loop(while = |d, _runs| d.n < 3, max = 0)]
        task b = work;
        end e;
        s -> a -> b -> e;
    }
}

fn main() {}
