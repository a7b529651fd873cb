//! An interrupting boundary skips its activity's normal path: a parallel join
//! waiting for that path and the boundary's waits for ever (deadlock).

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
    pub y: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        task pay = work;
        boundary late on pay: timer(std::time::Duration::from_secs(60));
        parallel join;
        end e;

        s -> pay -> join;
        late -> join;
        join -> e;
    }
}

fn main() {}
