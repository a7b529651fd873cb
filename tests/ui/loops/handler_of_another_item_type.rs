//! The handler takes the item type of the collection: rustc says where they differ.

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
        task a = |_d, x: &String, _i| { let _ = x.len(); async move { Ok(()) } };
        end e;
        s -> a -> e;
    }
}

fn main() {}
