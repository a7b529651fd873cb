//! `output` merges a task handler's result; a user task has none.

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
        #[multi_instance(each = |d| d.items.clone(), output = |d, _i, v: u32| d.out.push(v))]
        user review;
        end e;
        s -> review -> e;
    }
}

fn main() {}
