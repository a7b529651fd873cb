//! A timer read off the data takes a `Duration`, a `SystemTime` or a `TimerSpec`.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub seconds: u64,
}

process! {
    pub P: D {
        start s;
        catch wait: timer(|d| d.seconds);
        end done;
        s -> wait -> done;
    }
}

fn main() {}
