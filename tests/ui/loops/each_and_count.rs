//! `each` and `count` are alternatives.

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
        #[multi_instance(each = |d| d.items.clone(), count = |d| d.n)]
        task a = |_d, _x: &u32, _i| async move { Ok(()) };
        end e;
        s -> a -> e;
    }
}

fn main() {}
