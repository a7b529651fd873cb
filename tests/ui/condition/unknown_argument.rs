//! An unknown condition argument gets a "did you mean".

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        catch ready: condition(|d| d.score > 70, of = [score]);
        end done;

        begin -> ready -> done;
    }
}

fn main() {}
