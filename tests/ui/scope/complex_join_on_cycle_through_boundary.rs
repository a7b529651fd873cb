//! A complex join on a loop back through a boundary event on a sub-process is
//! rejected like any complex join on a cycle.
use std::time::Duration;
use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub x: u32,
}

process! {
    pub P: D {
        start b;
        complex cx: activate(count = 1);
        subprocess s {
            start sb;
            user u;
            end se;
            sb -> u -> se;
        }
        boundary retry on s: timer(Duration::from_secs(60));
        end e;

        b -> cx -> s -> e;
        retry -> cx;
    }
}

fn main() {}
