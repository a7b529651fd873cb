//! A misspelt marker argument is named, with a suggestion.

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
        #[multi_instance(eahc = |d| d.items.clone())]
        task a = work;
        end e;
        s -> a -> e;
    }
}

fn main() {}
