//! A link jumps only within its own container: a link throw in a
//! sub-process does not pair with a link catch of its name at the top level, nor a
//! throw at the top level with a catch inside a sub-process. The error is at the
//! throw's name.

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub score: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub P: D {
        start begin;
        exclusive known;
        throw resume: link("resume");
        subprocess handle {
            start s;
            catch resumed: link("resume");
            task assess = work;
            exclusive passed;
            throw jump: link("retry");
            end e;
            s -> assess -> passed;
            resumed -> assess;
            passed -> e when |d| d.score > 0;
            passed -> jump else;
        }
        catch retry: link("retry");
        task again = work;
        end done;

        begin -> known;
        known -> resume when |d| d.id.is_empty();
        known -> handle else;
        handle -> done;
        retry -> again -> done;
    }
}

fn main() {}
