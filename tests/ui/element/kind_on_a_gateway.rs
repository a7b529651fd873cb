// `kind(..)` gives a task's BPMN type for the pictures: on a gateway it means nothing.
thresh::process! {
    pub P: () {
        start s;
        exclusive pick: "Pick" | kind(send);
        end e;
        s -> pick -> e;
    }
}

fn main() {}
