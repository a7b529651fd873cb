// A task type `kind(..)` does not know, with the nearest one.
thresh::process! {
    pub P: () {
        start s;
        task notify = |_d| async move { Ok(()) }: kind(sned);
        end e;
        s -> notify -> e;
    }
}

fn main() {}
