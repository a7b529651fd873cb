//! An activity has one loop marker at most.

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
        #[multi_instance(count = |d| d.n)]
        #[standard_loop(while = |d, _runs| d.n < 3)]
        task a = |_d, _x: &usize, _i| async move { Ok(()) };
        end e;
        s -> a -> e;
    }
}

fn main() {}
