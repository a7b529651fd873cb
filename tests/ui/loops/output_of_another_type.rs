//! The output mapping takes what the handler returns (`u32` here): a mapping annotated
//! with another type no longer fits, and rustc reports the mapping's closure.

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

async fn double(_: &mut D, x: &u32, _i: usize) -> Result<u32, TaskError> {
    Ok(x * 2)
}

process! {
    pub P: D {
        start s;
        #[multi_instance(each = |d| d.items.clone(), output = |d, _i, v: String| d.n = v.len() as u32)]
        task a = double;
        end e;
        s -> a -> e;
    }
}

fn main() {}
