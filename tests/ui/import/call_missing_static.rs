// A call activity whose `calledElement` is written as a static's name (`SHIPPING`)
// that no static in scope has: a proc macro cannot see the scope, so rustc's
// "cannot find value" reports it, on the file's literal; its help names a similar
// static if one is in scope. Bind the call activity (`call ship = SHIPPING;`) or
// declare the called process.
#[derive(Clone, Debug, Default, thresh::ProcessData)]
pub struct Order {
    pub id: String,
}

thresh::process! {
    pub P: Order from "call_missing_static.bpmn" {}
}

fn main() {}
