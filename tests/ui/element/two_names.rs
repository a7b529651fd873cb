// An element has one name for the pictures.
thresh::process! {
    pub P: () {
        start s: "Begin" | "Start";
        end e;
        s -> e;
    }
}

fn main() {}
