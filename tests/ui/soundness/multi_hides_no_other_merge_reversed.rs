//! `multi_hides_no_other_merge.rs` with `mm1`'s branch declared first: the
//! unmarked `mm1` is reported all the same.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: i64,
}

async fn w(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start s;
        parallel p;
        task c = w;
        exclusive mm1;
        task a = w;
        exclusive mm0: multi;
        end e;

        s -> p;
        p -> a, mm0, c, mm1;
        a -> mm0;
        c -> mm1;
        mm0 -> e;
        mm1 -> e;
    }
}

fn main() {}
