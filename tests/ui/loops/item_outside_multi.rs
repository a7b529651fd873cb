//! `#[item]` takes the item of a multi-instance sub-process around the task.

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
        subprocess sub {
            start ss;
            #[item]
            task a = |_d, _x: &u32, _i| async move { Ok(()) };
            end se;
            ss -> a -> se;
        }
        end e;
        s -> sub -> e;
    }
}

fn main() {}
