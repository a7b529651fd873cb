// Loop and multi-instance markers the import cannot map: a collection, a completion
// condition, a loop condition or a computed count the file has and no binding gives
// (a); an unbounded loop with no condition (d); a loopMaximum of 0 (e); a binding's
// marker on an element the file draws none on (f), saying what the file says (g), or
// of the other kind (h).
#[derive(Clone, Debug, Default, thresh::ProcessData)]
pub struct D {
    pub n: u32,
}

thresh::process! {
    pub P: D from "markers.bpmn" {
        #[multi_instance(count = |_d| 3)]
        user b;
        #[multi_instance(count = |_d| 1)]
        user f;
        #[multi_instance(sequential, count = |_d| 2)]
        user g;
        #[multi_instance(count = |_d| 2)]
        user h;
    }
}

fn main() {}
