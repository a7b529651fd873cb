//! A loop or multi-instance marker goes on an activity, not on a gateway.

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
        #[multi_instance(each = |d| d.items.clone())]
        exclusive x;
        task a = work;
        end e;
        s -> x -> a -> e;
    }
}

fn main() {}
