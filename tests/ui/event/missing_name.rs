//! A message begins with its name as a string literal.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

process! {
    pub P: D {
        start begin;
        catch paid: message(key = |d| d.id.clone());
        end done;

        begin -> paid -> done;
    }
}

fn main() {}
