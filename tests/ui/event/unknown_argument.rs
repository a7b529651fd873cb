//! An unknown message argument gets a "did you mean".

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch paid: message("payment", keys = |d| d.id.clone());
        end done;

        begin -> paid -> done;
    }
}

fn main() {}
