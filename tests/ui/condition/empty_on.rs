//! A condition's `on = []` would never re-evaluate it.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        catch ready: condition(|d| d.score > 70, on = []);
        end done;

        begin -> ready -> done;
    }
}

fn main() {}
