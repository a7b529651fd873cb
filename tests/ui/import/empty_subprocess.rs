// A collapsed sub-process with nothing drawn inside: refused, saying to draw its
// content or bind it as a task. The manual task and the none intermediate event pass
// at once, and the path ends implicitly after them: nothing more is reported.
thresh::process! {
    pub P: () from "empty_subprocess.bpmn" {}
}

fn main() {}
