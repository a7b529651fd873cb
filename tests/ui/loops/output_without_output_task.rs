//! The output of a multi-instance sub-process comes from its `#[item(output)]` task.

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
        subprocess sub {
            start ss;
            #[item]
            task a = |_d, x: &u32, _i| { let x = *x; async move { Ok(x) } };
            end se;
            ss -> a -> se;
        }
        end e;
        s -> sub -> e;
    }
}

fn main() {}
