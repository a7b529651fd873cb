//! A multi-merge excuses only itself: `mm0` is marked `multi`, `mm1` is not, and
//! tokens reach `mm1` from parallel `p` at once. Declared with `mm0`'s branch
//! first (`multi_hides_no_other_merge_reversed.rs` declares `mm1`'s first): the
//! verdict does not depend on the order.

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
        task a = w;
        task c = w;
        exclusive mm0: multi;
        exclusive mm1;
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
