//! A user task of another process (over another data type) is refused by the
//! handle: the error names the data type the handle's process runs on.

use thresh::{process, InstanceHandle, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Expense {
    pub approved: bool,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Leave {
    pub granted: bool,
}

process! {
    pub LEAVE: Leave {
        start s;
        user grant;
        end e;
        s -> grant -> e;
    }
}

async fn approve(handle: &InstanceHandle<Expense>) {
    handle.complete(LEAVE::user.grant, |_| {}).await.unwrap();
}

fn main() {
    let _ = approve;
}
