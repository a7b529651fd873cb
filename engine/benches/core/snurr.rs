//! The same three shapes on snurr (a synchronous Rust BPMN interpreter: one thread, no
//! async handlers, no events, no history), for the side-by-side figures of
//! `cargo bench -p thresh --bench core`. Its BPMN files are generated here, into the
//! target directory, from the shapes' descriptions below.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use snurr::{Process, ProcessBuilder};

use super::support::{timed, Run};

/// The data snurr's handlers see (`&T`: snurr hands every handler a shared reference).
#[derive(Debug, Default)]
pub struct Count(AtomicU64);

/// A shape: its name and its flow elements as BPMN 2.0 XML (inside `<process>`).
pub struct Shape {
    pub name: &'static str,
    pub tasks: Vec<String>,
    elements: String,
}

fn task(id: &str, incoming: &str, outgoing: &str) -> String {
    format!(
        r#"<task id="{id}" name="{id}"><incoming>{incoming}</incoming><outgoing>{outgoing}</outgoing></task>"#
    )
}

fn flow(id: &str, from: &str, to: &str) -> String {
    format!(r#"<sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}"/>"#)
}

/// start -> t1 -> ... -> tn -> end.
pub fn chain(name: &'static str, n: usize) -> Shape {
    let tasks: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
    let mut x = String::from(r#"<startEvent id="begin"><outgoing>f0</outgoing></startEvent>"#);
    for (i, t) in tasks.iter().enumerate() {
        let (from, to) = if i == 0 {
            ("begin", t.as_str())
        } else {
            (tasks[i - 1].as_str(), t.as_str())
        };
        x += &flow(&format!("f{i}"), from, to);
        x += &task(t, &format!("f{i}"), &format!("f{}", i + 1));
    }
    x += &flow(&format!("f{n}"), &tasks[n - 1], "done");
    x += &format!(r#"<endEvent id="done"><incoming>f{n}</incoming></endEvent>"#);
    Shape {
        name,
        tasks,
        elements: x,
    }
}

/// start -> AND split -> n tasks -> AND join -> end.
pub fn parallel(name: &'static str, n: usize) -> Shape {
    let tasks: Vec<String> = (1..=n).map(|i| format!("p{i}")).collect();
    let mut x = String::from(r#"<startEvent id="begin"><outgoing>in</outgoing></startEvent>"#);
    x += &flow("in", "begin", "fork");
    let outs: String = (1..=n)
        .map(|i| format!("<outgoing>a{i}</outgoing>"))
        .collect();
    let ins: String = (1..=n)
        .map(|i| format!("<incoming>b{i}</incoming>"))
        .collect();
    x += &format!(r#"<parallelGateway id="fork"><incoming>in</incoming>{outs}</parallelGateway>"#);
    for (i, t) in tasks.iter().enumerate() {
        let k = i + 1;
        x += &flow(&format!("a{k}"), "fork", t);
        x += &task(t, &format!("a{k}"), &format!("b{k}"));
        x += &flow(&format!("b{k}"), t, "join");
    }
    x += &format!(r#"<parallelGateway id="join">{ins}<outgoing>out</outgoing></parallelGateway>"#);
    x += &flow("out", "join", "done");
    x += r#"<endEvent id="done"><incoming>out</incoming></endEvent>"#;
    Shape {
        name,
        tasks,
        elements: x,
    }
}

impl Shape {
    /// The shape as a snurr process whose every task counts one step.
    pub fn build(&self) -> Process<Count> {
        let path = self.write();
        let mut builder =
            ProcessBuilder::<Count>::new(&path).expect("snurr reads the generated file");
        for t in &self.tasks {
            builder = builder.task(t.as_str(), |c: &Count| {
                c.0.fetch_add(1, Relaxed);
                Default::default()
            });
        }
        builder.build().expect("snurr builds the generated process")
    }

    fn write(&self) -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("snurr");
        std::fs::create_dir_all(&dir).expect("a directory for the generated files");
        let path = dir.join(format!("{}.bpmn", self.name));
        let xml = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="defs_{0}" targetNamespace="http://thresh/bench"><process id="{0}" isExecutable="true">{1}</process></definitions>
"#,
            self.name, self.elements
        );
        std::fs::write(&path, xml).expect("the generated file is written");
        path
    }
}

/// Run `instances` instances one after another on this thread; checks each ran every task.
pub fn run(process: &Process<Count>, tasks: u64, instances: u64, units: u64) -> Run {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime for the timer");
    rt.block_on(timed(units, async {
        for _ in 0..instances {
            let out = process
                .run(Count::default())
                .expect("snurr runs the process");
            assert_eq!(out.0.load(Relaxed), tasks, "every task ran once");
        }
    }))
}
