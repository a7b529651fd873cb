//! A link carries nothing but its name: no `key`.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

process! {
    pub P: D {
        start begin;
        throw jump: link("next", key = |d| d.id.clone());
        catch next: link("next");
        end done;

        begin -> jump;
        next -> done;
    }
}

fn main() {}
