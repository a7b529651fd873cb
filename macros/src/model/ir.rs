//! The model's types: the process, its nodes and kinds, its flows.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Ident, Type, Visibility};

use crate::parse::{ActivationAst, EventAst, EventTrigger, Guard};

pub struct Model<'a> {
    pub vis: &'a Visibility,
    pub name: &'a Ident,
    /// The name the engines know the process by: the header's `= "order"`, else
    /// the static's identifier.
    pub process_name: String,
    /// The header's `version N`; 1 when not given.
    pub version: u32,
    pub data: &'a Type,
    pub doc: String,
    /// Non-doc attributes of the process (e.g. `#[allow(...)]`), kept on the static.
    pub attrs: Vec<&'a syn::Attribute>,
    pub nodes: Vec<Node<'a>>,
    pub flows: Vec<Flow<'a>>,
    /// The scopes (`None`: the top level) that lost a declaration to an error (a
    /// duplicate id, an unknown keyword, a task without handler): there, rules that
    /// need every element, such as "has an end event", stand down rather than pile
    /// consequences onto that error.
    pub incomplete: Vec<Option<usize>>,
    /// For each node, the node whose handler fn it runs (`handler_fns`): itself,
    /// or the first plain task written with the same handler.
    pub handler_fn: Vec<usize>,
    /// What the diagram of an imported process says beyond the structure.
    pub file: Option<&'a crate::parse::FileMeta>,
}

/// For each node, the node whose handler fn it runs: a plain task (no loop or
/// multi-instance marker) written with the same handler expression as an earlier
/// one — token for token, in the same process, so it means the same — runs that
/// one's fn. A handler used by several tasks is then one fn and one future type:
/// one target for the loop's calls (a different target at every step of a chain
/// is an indirect branch the processor mispredicts), and less to compile.
pub fn handler_fns(nodes: &[Node<'_>]) -> Vec<usize> {
    use quote::ToTokens;
    let mut first: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    nodes
        .iter()
        .enumerate()
        .map(|(n, node)| match node.handler {
            Some(handler)
                if node.kind == Kind::Task && node.looping.is_none() && node.item.is_none() =>
            {
                *first
                    .entry(handler.to_token_stream().to_string())
                    .or_insert(n)
            }
            _ => n,
        })
        .collect()
}

pub struct Node<'a> {
    pub id: &'a Ident,
    pub kind: Kind,
    /// A task's handler, or a call activity's binding, as written after its `=`.
    pub handler: Option<&'a Expr>,
    pub doc: String,
    /// Flow indices, in declaration order.
    pub incoming: Vec<usize>,
    pub outgoing: Vec<usize>,
    pub default: Option<usize>,
    /// A flow into (`loose_in`) or out of (`loose_out`) this node names an element
    /// that did not resolve, which is reported already. The path rules give the node
    /// the benefit of the doubt, so one typo does not cascade into "unreachable" and
    /// "no incoming flow" errors.
    pub loose_in: bool,
    pub loose_out: bool,
    /// A complex gateway's activation rule: its triples, as written.
    pub activation: Vec<ActivationAst>,
    /// The event of a catch, receive task, throw or throwing end, as written.
    pub event: Option<EventAst>,
    /// A boundary event: the activity it is attached to.
    pub attached_to: Option<usize>,
    /// A boundary event's `on activity`: the activity's name as written there, where
    /// errors about the attachment point.
    pub on: Option<&'a Ident>,
    /// An activity: its boundary events, in declaration order.
    pub boundaries: Vec<usize>,
    /// A boundary event's (or event sub-process start's) `non_interrupting` marker.
    pub non_interrupting: Option<&'a Ident>,
    /// The sub-process or event sub-process this element is written in; `None` at the
    /// process's top level. Flows, links and boundaries stay within one scope.
    pub scope: Option<usize>,
    /// A soundness marker, as written after the `:` (`exclusive m: multi;` a deliberate
    /// multi-merge, `parallel j: may_deadlock;` a join that may wait for ever): the
    /// soundness analysis does not report that finding at this element.
    pub marker: Option<Marker>,
    /// `task t = h: spawn;`: its handler runs on its own tokio task from the start.
    pub spawn: bool,
    /// Its name for the pictures (`task t = h: "Check stock";`).
    pub label: Option<String>,
    /// A task's BPMN type for the pictures (`kind(send)` → `sendTask`).
    pub element: Option<&'static str>,
    /// `task t = h: retry(..) | timeout(..);`: its retry policy and timeout, as
    /// written (checked by `check/policy.rs`).
    pub policy: Option<crate::parse::policy::PolicyAst>,
    /// `user u: assignee(..) | groups(..) | due(..) | priority(..);`: who works a
    /// user task and when, as written (checked by `check/assign.rs`; not in the
    /// fingerprint: it says who works the task, not how the process runs).
    pub assign: Option<crate::parse::assign::AssignAst>,
    /// A loop or multi-instance marker (`#[multi_instance(..)]`, `#[standard_loop(..)]`).
    pub looping: Option<crate::parse::loops::LoopAst>,
    /// `#[item]`: a task inside a multi-instance sub-process that takes its item.
    pub item: Option<&'a syn::Attribute>,
    /// A sub-process declared `transaction name { ... }`.
    pub transaction: bool,
    /// A task declared `task refund = handler: compensation;`: a compensation
    /// handler, joined to its activity's compensation boundary by an association.
    pub for_compensation: bool,
    /// A compensation boundary's handler as written after `->`, and resolved.
    pub association: Option<&'a Ident>,
    pub handler_node: Option<usize>,
    /// A compensation throw's activity, `compensation(charge)`, as written (`None`:
    /// the whole scope), and resolved.
    pub compensate: Option<Ident>,
    pub compensate_target: Option<usize>,
}

/// A deliberate pattern, declared on its element (see [`Node::marker`]).
#[derive(Clone, Copy)]
pub enum Marker {
    /// `exclusive m: multi;` — every token passes (WCP-8), on purpose.
    Multi,
    /// `parallel j: may_deadlock;` (or inclusive) — the join may wait for ever.
    MayDeadlock,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Start,
    End,
    Terminate,
    /// A service or script task; its handler is [`Node::handler`].
    Task,
    Exclusive,
    Parallel,
    Inclusive,
    Complex,
    /// Intermediate catch event.
    Catch(EventTrigger),
    /// Receive task (a message).
    Receive,
    /// User task, completed through the instance handle.
    User,
    /// Intermediate throw event (signal or message).
    Throw(EventTrigger),
    /// End event that throws (signal or message).
    ThrowEnd(EventTrigger),
    /// Exclusive event-based gateway.
    EventGate,
    /// Start event with a trigger (message, signal, timer): starts a deployed process.
    StartEvent(EventTrigger),
    /// Instantiating event-based gateway (`event_based g: instantiate;`, or
    /// `instantiate(parallel)`): a start whose arms' messages start instances.
    InstantiatingGate {
        parallel: bool,
    },
    /// Boundary event on an activity (`attached_to` on the node).
    Boundary {
        interrupting: bool,
        trigger: EventTrigger,
    },
    /// Error end event.
    ErrorEnd,
    /// Escalation throw, or escalation end event when `end`.
    Escalate {
        end: bool,
    },
    /// Embedded sub-process (`subprocess name { ... }`): an activity whose work is
    /// its own scope, begun at its none start.
    SubProcess,
    /// Event sub-process (`event_subprocess name { ... }`): no flows in or out; its
    /// start's trigger runs it inside the enclosing scope.
    EventSubProcess,
    /// The start event of an event sub-process, with its trigger.
    EventSubStart {
        trigger: EventTrigger,
        interrupting: bool,
    },
    /// Call activity (`call name = PROCESS(input = .., output = ..);`): its binding
    /// is [`Node::handler`], read by `model::call::parts`.
    Call,
    /// Compensation throw (`throw x: compensation;` / `compensation(activity)`), or a
    /// compensation end event when `end`.
    Compensate {
        end: bool,
    },
    /// A transaction's cancel end event (`end x: cancel;`).
    CancelEnd,
}

/// Where an element is written: what kind of scope holds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ScopeKind {
    Process,
    SubProcess,
    EventSubProcess,
}

impl Kind {
    /// How a message names this kind of element.
    pub fn describe(&self) -> &'static str {
        match self {
            Kind::Start => "start event",
            Kind::StartEvent(_) => "start event",
            Kind::InstantiatingGate { .. } => "instantiating event-based gateway",
            Kind::End => "end event",
            Kind::Terminate => "terminate end event",
            Kind::Task => "task",
            Kind::Exclusive => "exclusive gateway",
            Kind::Parallel => "parallel gateway",
            Kind::Inclusive => "inclusive gateway",
            Kind::Complex => "complex gateway",
            Kind::Catch(EventTrigger::Link) => "link catch event",
            Kind::Catch(_) => "catch event",
            Kind::Receive => "receive task",
            Kind::User => "user task",
            Kind::Throw(EventTrigger::Link) => "link throw event",
            Kind::Throw(_) => "throw event",
            Kind::ThrowEnd(_) => "throwing end event",
            Kind::EventGate => "event-based gateway",
            Kind::Boundary { .. } => "boundary event",
            Kind::ErrorEnd => "error end event",
            Kind::Escalate { end: false } => "escalation throw event",
            Kind::Escalate { end: true } => "escalation end event",
            Kind::SubProcess => "sub-process",
            Kind::EventSubProcess => "event sub-process",
            Kind::EventSubStart { .. } => "event sub-process start event",
            Kind::Call => "call activity",
            Kind::Compensate { end: false } => "compensation throw event",
            Kind::Compensate { end: true } => "compensation end event",
            Kind::CancelEnd => "cancel end event",
        }
    }

    /// [`describe`](Self::describe) with its indefinite article: "an end event".
    pub fn describe_with_article(&self) -> String {
        let what = self.describe();
        // By sound: "an end event", but "a user task".
        let article = if what.starts_with(['a', 'e', 'i', 'o']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {what}")
    }

    /// A start event, none or with a trigger.
    pub fn is_start(&self) -> bool {
        matches!(
            self,
            Kind::Start
                | Kind::StartEvent(_)
                | Kind::InstantiatingGate { .. }
                | Kind::EventSubStart { .. }
        )
    }

    /// An activity: what a boundary event may sit on.
    pub fn is_activity(&self) -> bool {
        matches!(
            self,
            Kind::Task | Kind::Receive | Kind::User | Kind::SubProcess | Kind::Call
        )
    }

    /// An event-based gateway, mid-flow or instantiating.
    pub fn is_event_gate(&self) -> bool {
        matches!(self, Kind::EventGate | Kind::InstantiatingGate { .. })
    }

    pub fn is_end(&self) -> bool {
        matches!(
            self,
            Kind::End
                | Kind::Terminate
                | Kind::ThrowEnd(_)
                | Kind::ErrorEnd
                | Kind::Escalate { end: true }
                | Kind::Compensate { end: true }
                | Kind::CancelEnd
        )
    }

    /// Whether the element carries an event (`: message(..)`, `signal(..)`, `timer(..)`).
    pub fn has_event(&self) -> bool {
        matches!(
            self,
            Kind::Catch(_)
                | Kind::Receive
                | Kind::Throw(_)
                | Kind::ThrowEnd(_)
                | Kind::Boundary { .. }
                | Kind::StartEvent(_)
                | Kind::EventSubStart { .. }
                | Kind::ErrorEnd
                | Kind::Escalate { .. }
        )
    }
}

pub struct Flow<'a> {
    pub source: usize,
    pub target: usize,
    /// The source and target as written in this flow statement: errors about the
    /// flow span from one to the other.
    pub source_ident: &'a Ident,
    pub target_ident: &'a Ident,
    pub condition: Option<&'a Expr>,
    pub guard: Option<&'a Guard>,
    /// The direct edge a link throw/catch pair resolves into: not
    /// written by the user, so the rules about written flows skip it.
    pub link: bool,
    /// The diagram's flow it was made of (an imported process): its id and name.
    pub file: Option<&'a crate::parse::FlowMeta>,
}

impl Flow<'_> {
    /// Tokens spanning the flow as written, `a -> b`, for error spans.
    pub fn tokens(&self) -> TokenStream {
        let (s, t) = (self.source_ident, self.target_ident);
        quote!(#s #t)
    }

    pub fn is_default(&self) -> bool {
        matches!(self.guard, Some(Guard::Else { .. }))
    }
}

impl Model<'_> {
    /// Node `n`'s id as the user wrote it: the file's, for an imported element whose
    /// id is no Rust identifier.
    pub fn written_id(&self, n: usize) -> String {
        let id = self.nodes[n].id.to_string();
        self.file
            .and_then(|f| f.nodes.get(&id))
            .map_or(id, |m| m.written.clone())
    }

    /// What the diagram says of node `n` beyond the structure, for an imported one.
    pub fn meta(&self, n: usize) -> Option<&crate::parse::NodeMeta> {
        self.file?.nodes.get(&self.nodes[n].id.to_string())
    }
}
