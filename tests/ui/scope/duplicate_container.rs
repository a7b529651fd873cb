//! A duplicate id whose second copy is a sub-process: only the duplicate is reported —
//! what the dropped sub-process held is dropped with it, not moved up a level to
//! break rules there (a second none start, a second link catch).
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
        start b;
        task a = work;
        subprocess a {
            start sb;
            throw j: link("L");
            catch c: link("L");
            end se;
            sb -> j;
            c -> se;
        }
        catch c2: link("L");
        throw j2: link("L");
        end e;

        b -> a -> j2;
        c2 -> e;
    }
}

fn main() {}
