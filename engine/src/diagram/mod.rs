//! Pictures of a process: BPMN 2.0 XML with diagram interchange, SVG (of the
//! process, and of an instance on it) and Mermaid.
//!
//! All three come from one deterministic layered layout ([`Layout`], see
//! [`Process::layout`]): the same process always gives the same file. Element ids in
//! the BPMN export are the node ids of the `process!` block.
//!
//! ```
//! use thresh::{process, ProcessData};
//!
//! #[derive(Clone, Debug, Default, ProcessData)]
//! pub struct Order { pub total: u64 }
//!
//! process! {
//!     pub ORDER: Order {
//!         start received;
//!         task  pack = |o| async move { o.total += 1; Ok(()) };
//!         end   shipped;
//!         received -> pack -> shipped;
//!     }
//! }
//!
//! let xml = ORDER.to_bpmn();
//! assert!(xml.contains(r#"<bpmn:serviceTask id="pack" name="pack">"#));
//! let svg = ORDER.to_svg();
//! assert!(svg.starts_with("<svg"));
//! let mermaid = ORDER.to_mermaid();
//! assert!(mermaid.starts_with("flowchart LR"));
//! ```

mod bpmn;
mod layout;
mod mermaid;
mod model;
mod overlay;
mod svg;
mod xml;

pub use layout::{Bounds, Edge, Layout, Point, Shape};
use overlay::Overlay;

use crate::graph::{Graph, Process};
use crate::History;
use model::Model;

impl<D> Process<D> {
    /// The layout every picture of this process is drawn from: a shape per node
    /// (sub-processes as containers sized to their content, boundary events on their
    /// host's bottom border) and an orthogonal route per sequence flow.
    ///
    /// ```
    /// # use thresh::{process, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)]
    /// # pub struct Job { pub n: u32 }
    /// process! {
    ///     pub JOB: Job {
    ///         start s;
    ///         task  work = |j| async move { j.n += 1; Ok(()) };
    ///         end   e;
    ///         s -> work -> e;
    ///     }
    /// }
    /// let layout = JOB.layout();
    /// let (s, work) = (layout.shape("s").unwrap(), layout.shape("work").unwrap());
    /// assert_eq!((work.bounds.width, work.bounds.height), (100, 80));
    /// assert!(s.bounds.x < work.bounds.x);
    /// assert!(layout.overlapping().is_empty());
    /// ```
    pub fn layout(&self) -> Layout {
        layout::layout(&Model::of(self.graph()))
    }

    /// The process as a BPMN 2.0 XML document (`definitions` with one executable
    /// `process` and its `BPMNDiagram`), ready for bpmn.io or Camunda Modeler.
    /// Element ids are the node ids; names are the ids with spaces for underscores;
    /// conditions are `conditionExpression`s holding their Rust source.
    ///
    /// ```
    /// # use thresh::{process, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)]
    /// # pub struct Job { pub ok: bool }
    /// process! {
    ///     pub JOB: Job {
    ///         start     s;
    ///         exclusive check;
    ///         end       good;
    ///         end       bad;
    ///         s -> check;
    ///         check -> good when |j| j.ok;
    ///         check -> bad else;
    ///     }
    /// }
    /// let xml = JOB.to_bpmn();
    /// assert!(xml.contains(r#"default="Flow_check_bad""#));
    /// assert!(xml.contains(r#"<bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">|j| j.ok</bpmn:conditionExpression>"#));
    /// assert!(xml.contains(r#"<bpmndi:BPMNShape id="check_di" bpmnElement="check""#));
    /// ```
    pub fn to_bpmn(&self) -> String {
        let model = Model::of(self.graph());
        let layout = layout::layout(&model);
        bpmn::write(&model, &layout)
    }

    /// The process as a self-contained SVG image in BPMN notation (no external fonts
    /// or styles), drawn from [`Process::layout`].
    ///
    /// ```
    /// # use thresh::{process, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)]
    /// # pub struct Job { pub n: u32 }
    /// process! {
    ///     pub JOB: Job {
    ///         start s;
    ///         user  approve;
    ///         end   e;
    ///         s -> approve -> e;
    ///     }
    /// }
    /// let svg = JOB.to_svg();
    /// assert!(svg.starts_with("<svg") && svg.contains(">approve</text>"));
    /// ```
    pub fn to_svg(&self) -> String {
        let model = Model::of(self.graph());
        let layout = layout::layout(&model);
        svg::draw(&model, &layout, None)
    }

    /// An instance drawn on its process, from its [`History`]: the nodes it passed
    /// tinted, with how often; where its tokens wait now highlighted; what failed in
    /// red. Get the history with [`InstanceHandle::history`](crate::InstanceHandle::history).
    ///
    /// ```
    /// # use thresh::{process, Engine, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)]
    /// # pub struct Job { pub n: u32 }
    /// process! {
    ///     pub JOB: Job {
    ///         start s;
    ///         task  work = |j| async move { j.n += 1; Ok(()) };
    ///         user  approve;
    ///         end   e;
    ///         s -> work -> approve -> e;
    ///     }
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let engine = Engine::new();
    /// let handle = engine.start(&JOB, Job::default()).await.unwrap();
    /// while handle.open_work().await.is_empty() {
    ///     tokio::task::yield_now().await;
    /// }
    /// let history = handle.history().await;
    /// let svg = JOB.to_svg_with(&history);
    /// assert!(svg.contains(r#"class="waiting""#)); // approve waits for a person
    /// # handle.cancel();
    /// # });
    /// ```
    pub fn to_svg_with(&self, history: &History) -> String {
        svg_with(self.graph(), history)
    }

    /// The process as a Mermaid flowchart (`flowchart LR`), for Markdown that renders
    /// Mermaid (GitHub does).
    ///
    /// ```
    /// # use thresh::{process, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)]
    /// # pub struct Job { pub ok: bool }
    /// process! {
    ///     pub JOB: Job {
    ///         start     s;
    ///         exclusive check;
    ///         end       good;
    ///         end       bad;
    ///         s -> check;
    ///         check -> good when |j| j.ok;
    ///         check -> bad else;
    ///     }
    /// }
    /// let text = JOB.to_mermaid();
    /// assert!(text.starts_with("flowchart LR\n"));
    /// assert!(text.contains("check -->|else| bad"));
    /// ```
    pub fn to_mermaid(&self) -> String {
        mermaid::write(&Model::of(self.graph()))
    }
}

/// Coverage's view of a history (`testing`): how often each node was reached and
/// each flow taken, indexed like the process's nodes and flows — the same reading
/// of the history as [`Process::to_svg_with`].
#[cfg(feature = "testing")]
pub(crate) fn taken<D>(
    process: &crate::graph::Graph<D>,
    history: &History,
) -> (Vec<usize>, Vec<usize>) {
    let overlay = Overlay::of(&Model::of(process), history);
    (
        overlay.nodes.iter().map(|n| n.visits).collect(),
        overlay.flows,
    )
}

/// The process drawn with these counts (`testing`): nodes reached and flows taken
/// tinted, as [`Process::to_svg_with`] draws an instance, with nothing waiting.
#[cfg(feature = "testing")]
pub(crate) fn svg_with_counts<D>(
    process: &crate::graph::Graph<D>,
    nodes: &[usize],
    flows: &[usize],
) -> String {
    let model = Model::of(process);
    let layout = layout::layout(&model);
    let overlay = Overlay {
        nodes: nodes
            .iter()
            .map(|&visits| overlay::NodeState {
                visits,
                ..overlay::NodeState::default()
            })
            .collect(),
        flows: flows.to_vec(),
    };
    svg::draw(&model, &layout, Some(&overlay))
}

/// [`Process::to_svg_with`] of any graph (a durable picture draws the version an
/// instance was stored with).
pub(crate) fn svg_with<D>(graph: &Graph<D>, history: &History) -> String {
    let model = Model::of(graph);
    let layout = layout::layout(&model);
    let overlay = Overlay::of(&model, history);
    svg::draw(&model, &layout, Some(&overlay))
}
