//! The process as the drawings see it: every node classified as the BPMN element it
//! is, with its event definition, and every flow that is drawn as a sequence flow.
//!
//! [`Model`] is not generic over the process data, so the layout and the writers
//! are compiled once; it is built from a [`Graph`] by [`Model::of`], and a unit
//! test can build one by hand.

use std::collections::BTreeSet;

use crate::graph::{Graph, NodeKind, Throw, Trigger};

mod timer;
pub(crate) use timer::{timer_text, TimerText};

/// A process, erased of its data type.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    /// The process's name (`ORDER`, or its header's `= "order"`).
    pub name: String,
    /// Its version (1: none declared).
    pub version: u32,
    /// The process's doc comment.
    pub doc: String,
    pub nodes: Vec<MNode>,
    /// Indexed like the process's flows; `drawn` is false for the direct flow of a
    /// link pair (a link throw has no outgoing sequence flow in BPMN).
    pub flows: Vec<MFlow>,
    /// Compensation associations: (compensation boundary, its handler).
    pub associations: Vec<(usize, usize)>,
    /// Imported from a diagram: its flows have the diagram's ids (an inline
    /// process's have none), and its elements are named only where it names them.
    pub imported: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct MNode {
    pub id: String,
    /// Its name in the diagram it was imported from (empty: none).
    pub name: String,
    /// The BPMN element type that diagram gives it (`sendTask`, ...; empty: none).
    pub tag: String,
    /// Where that diagram draws it (`Node::drawing`).
    pub drawing: Vec<i32>,
    pub doc: String,
    pub elem: Elem,
    /// The sub-process or event sub-process this node is written in.
    pub scope: Option<usize>,
    pub incoming: Vec<usize>,
    pub outgoing: Vec<usize>,
    pub default: Option<usize>,
    /// A converging complex gateway's activation rule as written (empty otherwise).
    pub activation: String,
    /// An activity's loop or multi-instance marker.
    pub looping: Option<LoopMark>,
}

/// An activity's loop or multi-instance marker, as the pictures show it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LoopMark {
    /// Multi-instance: `items` is `each = ...` or `count = ...` as written.
    Multi {
        sequential: bool,
        items: String,
        completion: String,
    },
    /// The standard loop.
    Standard {
        test_before: bool,
        condition: String,
        max: Option<u32>,
    },
}

/// Which BPMN element a node is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Elem {
    /// `startEvent`; `interrupting` is false only for a non-interrupting start of an
    /// event sub-process.
    Start {
        def: Option<EventDef>,
        interrupting: bool,
    },
    /// `endEvent`.
    End {
        def: Option<EventDef>,
    },
    /// `intermediateCatchEvent`.
    Catch(EventDef),
    /// `intermediateThrowEvent`.
    Throw(EventDef),
    /// `boundaryEvent` on `host`.
    Boundary {
        host: usize,
        def: EventDef,
        interrupting: bool,
    },
    Gateway(Gateway),
    /// `serviceTask`.
    ServiceTask,
    /// `userTask`.
    UserTask,
    /// `receiveTask` with its message name.
    ReceiveTask(Option<String>),
    /// `subProcess`.
    SubProcess,
    /// `transaction`.
    Transaction,
    /// `serviceTask isForCompensation="true"`: a compensation handler, joined to its
    /// activity's compensation boundary by an association.
    CompensationTask,
    /// `subProcess triggeredByEvent="true"`.
    EventSubProcess,
    /// `callActivity` with the called process's name (`calledElement`).
    CallActivity(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gateway {
    Exclusive,
    Parallel,
    Inclusive,
    Complex,
    /// `eventBasedGateway`; `instantiate` at process start, `parallel` for a parallel
    /// instantiating gateway.
    EventBased {
        instantiate: bool,
        parallel: bool,
    },
}

/// An event definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EventDef {
    Message(String),
    Signal(String),
    Timer(TimerText),
    /// The condition's source text.
    Conditional(String),
    Error(Option<String>),
    Escalation(Option<String>),
    Terminate,
    /// The link's name, as written in `link("..")`.
    Link(String),
    /// `compensateEventDefinition`, with its `activityRef` (none: the whole scope).
    Compensate(Option<String>),
    /// `cancelEventDefinition`.
    Cancel,
}

#[derive(Clone, Debug)]
pub(crate) struct MFlow {
    /// A unique id: the imported flow's, else `Flow_<source>_<target>`.
    pub id: String,
    /// The imported flow's name (empty: none).
    pub name: String,
    /// Where the diagram it was imported from draws it (`Flow::drawing`).
    pub drawing: Vec<i32>,
    pub source: usize,
    pub target: usize,
    /// The condition's source text, when it has one.
    pub condition: Option<String>,
    /// The default flow of its source.
    pub default: bool,
    /// Drawn as a sequence flow (everything but a link pair's direct flow).
    pub drawn: bool,
}

impl Elem {
    /// Events: drawn as circles.
    pub fn is_event(&self) -> bool {
        matches!(
            self,
            Elem::Start { .. }
                | Elem::End { .. }
                | Elem::Catch(_)
                | Elem::Throw(_)
                | Elem::Boundary { .. }
        )
    }

    /// Expanded containers.
    pub fn is_container(&self) -> bool {
        matches!(
            self,
            Elem::SubProcess | Elem::EventSubProcess | Elem::Transaction
        )
    }

    /// The event definition of an event, if it has one.
    pub fn event_def(&self) -> Option<&EventDef> {
        match self {
            Elem::Start { def, .. } | Elem::End { def } => def.as_ref(),
            Elem::Catch(d) | Elem::Throw(d) | Elem::Boundary { def: d, .. } => Some(d),
            _ => None,
        }
    }
}

impl Model {
    /// The model of a process.
    pub fn of<D>(process: &Graph<D>) -> Model {
        let graph_nodes = process.nodes();
        let links = link_roles(process);
        let mut nodes: Vec<MNode> = graph_nodes
            .iter()
            .enumerate()
            .map(|(i, n)| MNode {
                id: n.id.to_string(),
                name: n.label.to_string(),
                tag: n.tag.to_string(),
                drawing: n.drawing.to_vec(),
                doc: n.doc.trim().to_string(),
                elem: elem_of(&n.kind, n.text, links[i], Some(i), process),
                scope: n.scope,
                incoming: n.incoming.to_vec(),
                outgoing: n.outgoing.to_vec(),
                default: n.default,
                activation: match n.kind {
                    NodeKind::Complex { .. } => n.text.to_string(),
                    _ => String::new(),
                },
                looping: process.loop_of(i).map(|l| match &l.kind {
                    crate::loops::LoopKind::Multi(m) => LoopMark::Multi {
                        sequential: m.sequential,
                        items: m.items_text.to_string(),
                        completion: m.completion_text.to_string(),
                    },
                    crate::loops::LoopKind::Standard(l) => LoopMark::Standard {
                        test_before: l.test_before,
                        condition: l.condition_text.to_string(),
                        max: l.max,
                    },
                }),
            })
            .collect();
        let mut taken: BTreeSet<String> = nodes.iter().map(|n| n.id.clone()).collect();
        // Imported flows keep their ids (so an export re-imports with the same flow
        // bindings); the others are named after their ends, around them.
        taken.extend(process.flows().iter().map(|f| f.id.to_string()));
        let flows = process
            .flows()
            .iter()
            .enumerate()
            .map(|(f, flow)| {
                let link_pair = links.get(flow.source) == Some(&Some(LinkRole::Throw))
                    && links.get(flow.target) == Some(&Some(LinkRole::Catch));
                let source = graph_nodes.get(flow.source).map_or("", |n| n.id);
                let target = graph_nodes.get(flow.target).map_or("", |n| n.id);
                let id = match flow.id {
                    "" => unique(&mut taken, format!("Flow_{source}_{target}")),
                    id => id.to_string(),
                };
                let text = flow.condition_text.trim();
                MFlow {
                    id,
                    name: flow.label.to_string(),
                    drawing: flow.drawing.to_vec(),
                    source: flow.source,
                    target: flow.target,
                    condition: (flow.condition.is_some() || !text.is_empty())
                        .then(|| text.to_string()),
                    default: graph_nodes.get(flow.source).and_then(|n| n.default) == Some(f),
                    drawn: !link_pair,
                }
            })
            .collect();
        // Only flows that are drawn count as a node's incoming and outgoing.
        let model_flows: &Vec<MFlow> = &flows;
        for node in &mut nodes {
            node.incoming
                .retain(|&f| model_flows.get(f).is_some_and(|f| f.drawn));
            node.outgoing
                .retain(|&f| model_flows.get(f).is_some_and(|f| f.drawn));
        }
        let associations = graph_nodes
            .iter()
            .enumerate()
            .filter_map(|(b, n)| match n.kind {
                NodeKind::CompensationBoundary { handler, .. } => Some((b, handler)),
                _ => None,
            })
            .collect();
        Model {
            name: process.name().to_string(),
            version: process.version(),
            doc: process.doc().trim().to_string(),
            nodes,
            flows,
            associations,
            imported: process.flows().iter().any(|f| !f.id.is_empty()),
        }
    }

    /// The nodes written directly in `scope` (`None`: the top level), in order.
    pub fn members(&self, scope: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(move |&n| self.nodes[n].scope == scope)
    }

    /// The boundary events on `host`, in order.
    pub fn boundaries_of(&self, host: usize) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&n| matches!(self.nodes[n].elem, Elem::Boundary { host: h, .. } if h == host))
            .collect()
    }

    /// Whether the process was imported from a diagram.
    pub fn imported(&self) -> bool {
        self.imported
    }

    /// A node's label: its name, else its id with underscores as spaces.
    pub fn label(&self, n: usize) -> String {
        let node = &self.nodes[n];
        match node.name.as_str() {
            "" => node.id.replace('_', " "),
            name => name.to_string(),
        }
    }
}

/// `base`, or `base_2`, `base_3`, ... whichever is not taken yet.
fn unique(taken: &mut BTreeSet<String>, base: String) -> String {
    let mut id = base.clone();
    let mut k = 2;
    while taken.contains(&id) {
        id = format!("{base}_{k}");
        k += 1;
    }
    taken.insert(id.clone());
    id
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinkRole {
    Throw,
    Catch,
}

/// Which link nodes throw and which catch. The graph has no direction on a link node:
/// a throw is entered by ordinary flows (or from a catch's way on) and has one flow
/// to its catch; a catch is entered only from throws.
fn link_roles<D>(process: &Graph<D>) -> Vec<Option<LinkRole>> {
    let nodes = process.nodes();
    let flows = process.flows();
    let is_link = |n: usize| {
        nodes
            .get(n)
            .is_some_and(|n| matches!(n.kind, NodeKind::Link))
    };
    let mut roles: Vec<Option<LinkRole>> = vec![None; nodes.len()];
    // Seed: a link entered by a non-link node is a throw.
    for (i, n) in nodes.iter().enumerate() {
        if is_link(i)
            && n.incoming
                .iter()
                .any(|&f| flows.get(f).is_some_and(|f| !is_link(f.source)))
        {
            roles[i] = Some(LinkRole::Throw);
        }
    }
    // Propagate: after a throw comes its catch; after a catch, a throw.
    loop {
        let mut changed = false;
        for f in flows {
            if !(is_link(f.source) && is_link(f.target)) || roles[f.target].is_some() {
                continue;
            }
            let role = match roles[f.source] {
                Some(LinkRole::Throw) => LinkRole::Catch,
                Some(LinkRole::Catch) => LinkRole::Throw,
                None => continue,
            };
            roles[f.target] = Some(role);
            changed = true;
        }
        if !changed {
            break;
        }
    }
    // Anything left (a link cycle with no way in): one outgoing flow to a link is a
    // throw, the rest catch.
    for (i, n) in nodes.iter().enumerate() {
        if is_link(i) && roles[i].is_none() {
            let throws = n.outgoing.len() == 1
                && n.outgoing
                    .iter()
                    .all(|&f| flows.get(f).is_some_and(|f| is_link(f.target)));
            roles[i] = Some(if throws {
                LinkRole::Throw
            } else {
                LinkRole::Catch
            });
        }
    }
    roles
}

fn elem_of<D>(
    kind: &NodeKind<D>,
    text: &str,
    link: Option<LinkRole>,
    me: Option<usize>,
    process: &Graph<D>,
) -> Elem {
    match kind {
        NodeKind::Start => Elem::Start {
            def: None,
            interrupting: true,
        },
        NodeKind::End => Elem::End { def: None },
        NodeKind::Terminate => Elem::End {
            def: Some(EventDef::Terminate),
        },
        NodeKind::Task(_) if me.is_some_and(|me| compensation_handler(process, me)) => {
            Elem::CompensationTask
        }
        NodeKind::Task(_) => Elem::ServiceTask,
        NodeKind::Exclusive => Elem::Gateway(Gateway::Exclusive),
        NodeKind::Parallel => Elem::Gateway(Gateway::Parallel),
        NodeKind::Inclusive { .. } => Elem::Gateway(Gateway::Inclusive),
        NodeKind::Complex { .. } => Elem::Gateway(Gateway::Complex),
        NodeKind::Catch(t) => Elem::Catch(trigger_def(t, text)),
        NodeKind::Receive(t) => Elem::ReceiveTask(match t {
            Trigger::Message { name, .. } => Some(name.to_string()),
            _ => None,
        }),
        NodeKind::User => Elem::UserTask,
        NodeKind::Throw(t) => Elem::Throw(throw_def(t)),
        NodeKind::ThrowEnd(t) => Elem::End {
            def: Some(throw_def(t)),
        },
        NodeKind::EventGate => Elem::Gateway(Gateway::EventBased {
            instantiate: false,
            parallel: false,
        }),
        NodeKind::InstantiatingGate { parallel } => Elem::Gateway(Gateway::EventBased {
            instantiate: true,
            parallel: *parallel,
        }),
        NodeKind::Boundary {
            activity,
            trigger,
            interrupting,
        } => Elem::Boundary {
            host: *activity,
            def: trigger_def(trigger, text),
            interrupting: *interrupting,
        },
        NodeKind::ErrorEnd { code } => Elem::End {
            def: Some(EventDef::Error(Some(code.to_string()))),
        },
        NodeKind::Escalate { code, end } => {
            let def = EventDef::Escalation(Some(code.to_string()));
            if *end {
                Elem::End { def: Some(def) }
            } else {
                Elem::Throw(def)
            }
        }
        NodeKind::StartEvent(t) => Elem::Start {
            def: Some(trigger_def(t, text)),
            interrupting: true,
        },
        NodeKind::EventSubStart {
            trigger,
            interrupting,
        } => Elem::Start {
            def: Some(trigger_def(trigger, text)),
            interrupting: *interrupting,
        },
        NodeKind::Link => {
            let name = if text.is_empty() {
                link_name(process, me, link)
            } else {
                text.to_string()
            };
            match link {
                Some(LinkRole::Throw) => Elem::Throw(EventDef::Link(name)),
                _ => Elem::Catch(EventDef::Link(name)),
            }
        }
        NodeKind::SubProcess {
            transaction: true, ..
        } => Elem::Transaction,
        NodeKind::SubProcess { .. } => Elem::SubProcess,
        NodeKind::Call(call) => Elem::CallActivity(call.callee.to_string()),
        NodeKind::EventSubProcess { .. } => Elem::EventSubProcess,
        NodeKind::Compensate { activity, end } => {
            let activity = activity
                .and_then(|a| process.nodes().get(a))
                .map(|a| a.id.to_string());
            let def = EventDef::Compensate(activity);
            if *end {
                Elem::End { def: Some(def) }
            } else {
                Elem::Throw(def)
            }
        }
        NodeKind::CancelEnd => Elem::End {
            def: Some(EventDef::Cancel),
        },
        NodeKind::CompensationBoundary { activity, .. } => Elem::Boundary {
            host: *activity,
            def: EventDef::Compensate(None),
            interrupting: true,
        },
        NodeKind::CancelBoundary { activity } => Elem::Boundary {
            host: *activity,
            def: EventDef::Cancel,
            interrupting: true,
        },
        NodeKind::CompensationStart => Elem::Start {
            def: Some(EventDef::Compensate(None)),
            interrupting: true,
        },
    }
}

/// Whether node `me` is the handler of a compensation boundary.
fn compensation_handler<D>(process: &Graph<D>, me: usize) -> bool {
    process
        .nodes()
        .iter()
        .any(|n| matches!(n.kind, NodeKind::CompensationBoundary { handler, .. } if handler == me))
}

/// A link's name when the graph has none (a graph built by hand): its catch's id (a
/// throw's catch is the target of its one flow).
fn link_name<D>(process: &Graph<D>, me: Option<usize>, role: Option<LinkRole>) -> String {
    let nodes = process.nodes();
    let Some(me) = me.and_then(|m| nodes.get(m).map(|n| (m, n))) else {
        return String::new();
    };
    match role {
        Some(LinkRole::Throw) => {
            me.1.outgoing
                .iter()
                .filter_map(|&f| process.flows().get(f))
                .filter_map(|f| nodes.get(f.target))
                .find(|t| matches!(t.kind, NodeKind::Link))
                .map_or_else(|| me.1.id.to_string(), |t| t.id.to_string())
        }
        _ => me.1.id.to_string(),
    }
}

/// A trigger's definition; `text` is its node's [`Node::text`](crate::graph::Node).
fn trigger_def<D>(trigger: &Trigger<D>, text: &str) -> EventDef {
    match trigger {
        Trigger::Message { name, .. } => EventDef::Message(name.to_string()),
        Trigger::Signal { name, .. } => EventDef::Signal(name.to_string()),
        Trigger::Timer(timer) => EventDef::Timer(match timer.fixed() {
            Some(spec) => timer_text(&spec),
            // Read off each instance's data: BPMN's expression form.
            None => TimerText {
                element: "timeDuration",
                text: format!("${{{text}}}"),
            },
        }),
        Trigger::Condition { .. } => EventDef::Conditional(text.to_string()),
        Trigger::Error { code, .. } => EventDef::Error(code.map(str::to_string)),
        Trigger::Escalation { code, .. } => EventDef::Escalation(code.map(str::to_string)),
    }
}

fn throw_def<D>(throw: &Throw<D>) -> EventDef {
    match throw {
        Throw::Signal { name, .. } => EventDef::Signal(name.to_string()),
        Throw::Message { name, .. } => EventDef::Message(name.to_string()),
    }
}
