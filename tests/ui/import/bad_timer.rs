// A timer the import cannot read: a cron line, not ISO 8601.
thresh::process! {
    pub P: () from "bad_timer.bpmn" {}
}

fn main() {}
