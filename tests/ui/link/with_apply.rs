//! A link carries nothing but its name: no `apply`.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        throw jump: link("next");
        catch next: link("next", apply = |d, n: &u32| d.score = *n);
        end done;

        begin -> jump;
        next -> done;
    }
}

fn main() {}
