//! An element whose incoming flows come only from unreachable elements.

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
        start begin;
        task a = work;
        task ping = work;
        exclusive pong;
        end done;

        begin -> a -> done;
        ping -> pong;
        pong -> ping when |d| d.x < 3;
        pong -> done else;
    }
}

fn main() {}
