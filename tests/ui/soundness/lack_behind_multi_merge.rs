//! A lack of synchronisation behind a multi-merge: `mm0` is marked `multi` (its own
//! doubling is declared), but the unmarked merge `jm` gets a token from `p -> jm`
//! and one from `mm0 -> jm` at once: that doubling is nobody's declaration.

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
        exclusive mm0: multi;
        exclusive jm;
        end e;

        s -> p;
        p -> a, mm0, jm;
        a -> mm0;
        mm0 -> jm;
        jm -> e;
    }
}

fn main() {}
