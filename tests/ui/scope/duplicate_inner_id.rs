//! A duplicate id, `a` at the top level and again inside sub-process `s`: only the
//! duplicate is reported, not the flows inside `s` that name it as crossing.
use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start b;
        task a = work;
        subprocess s {
            start sb;
            task a = work;
            end se;
            sb -> a -> se;
        }
        end e;

        b -> a -> s -> e;
    }
}

fn main() {}
