//! Stage 2: syntax tree → model, the one IR of a process that `check` and `emit` read.
//! Names are resolved to indices here, so the two rules that resolution itself needs —
//! every id declared once, every flow naming declared nodes — are reported here.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Ident, Type, Visibility};

use crate::check::suggest;
use crate::ctx::Ctx;
use crate::parse::{
    self, doc_text, ActivationAst, EventAst, EventTrigger, Guard, NodeAst, ProcessAst,
};

pub struct Model<'a> {
    pub vis: &'a Visibility,
    pub name: &'a Ident,
    pub data: &'a Type,
    pub doc: String,
    /// Non-doc attributes of the process (e.g. `#[allow(...)]`), kept on the static.
    pub attrs: Vec<&'a syn::Attribute>,
    pub nodes: Vec<Node<'a>>,
    pub flows: Vec<Flow<'a>>,
    /// The containers (`None`: the top level) that lost a declaration to an error (a
    /// duplicate id, an unknown keyword, a task without handler): there, rules that
    /// need every element, such as "has an end event", stand down rather than pile
    /// consequences onto that error.
    pub incomplete: Vec<Option<usize>>,
}

pub struct Node<'a> {
    pub id: &'a Ident,
    pub kind: Kind,
    /// A task's handler, as written after its `=`.
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
    /// process's top level. Flows, links and boundaries stay within one container.
    pub scope: Option<usize>,
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
}

/// Where an element is written: what kind of container holds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Within {
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
        }
    }

    /// [`describe`](Self::describe) with its indefinite article: "an end event".
    pub fn a(&self) -> String {
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
            Kind::Task | Kind::Receive | Kind::User | Kind::SubProcess
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

const KINDS: &[&str] = &[
    "start",
    "end",
    "task",
    "exclusive",
    "parallel",
    "inclusive",
    "complex",
    "event_based",
    "user",
    "receive",
    "catch",
    "throw",
    "boundary",
    "subprocess",
    "event_subprocess",
];

pub fn build<'a>(ctx: &Ctx, ast: &'a ProcessAst) -> Model<'a> {
    let mut nodes: Vec<Node<'a>> = Vec::new();
    // Declarations dropped with an error, by index (what a dropped container held
    // is dropped silently and not listed).
    let mut failed: Vec<usize> = Vec::new();
    // Declarations dropped with an error; what a dropped container holds is dropped
    // with it (silently: moved up a level, it would break rules it never broke).
    let mut dropped = vec![false; ast.nodes.len()];
    for (i, decl) in ast.nodes.iter().enumerate() {
        if decl.container.is_some_and(|c| dropped[c]) {
            dropped[i] = true;
            continue;
        }
        if let Some(first) = ast.nodes[..i].iter().find(|n| n.id == decl.id) {
            dropped[i] = true;
            ctx.error(
                &decl.id,
                format!(
                    "`{}` is declared twice (first as `{} {}`); every element needs its own identifier — rename one",
                    decl.id, first.keyword, first.id
                ),
            );
            failed.push(i);
            continue;
        }
        let within = match decl.container.map(|c| ast.nodes[c].keyword.to_string()) {
            None => Within::Process,
            Some(k) if k == "subprocess" => Within::SubProcess,
            Some(_) => Within::EventSubProcess,
        };
        match kind_of(ctx, decl, within) {
            Some(kind) => nodes.push(Node {
                id: &decl.id,
                kind,
                handler: decl.handler.as_ref().filter(|_| kind == Kind::Task),
                doc: doc_text(&decl.attrs),
                incoming: Vec::new(),
                outgoing: Vec::new(),
                default: None,
                loose_in: false,
                loose_out: false,
                activation: activation_of(ctx, decl, kind),
                event: event_of(ctx, decl, kind),
                attached_to: None,
                on: decl.attached.as_ref(),
                boundaries: Vec::new(),
                non_interrupting: decl.non_interrupting.as_ref(),
                // Resolved below, once every container has its index.
                scope: None,
            }),
            None => {
                dropped[i] = true;
                failed.push(i);
            }
        }
    }
    // Each declaration's node, by identity (a dropped declaration has none), and each
    // element's container.
    let decl_node: Vec<Option<usize>> = ast
        .nodes
        .iter()
        .map(|decl| nodes.iter().position(|n| std::ptr::eq(n.id, &decl.id)))
        .collect();
    let container_of = |mut container: Option<usize>| {
        while let Some(c) = container {
            if decl_node[c].is_some() {
                return decl_node[c];
            }
            container = ast.nodes[c].container;
        }
        None
    };
    for (decl, n) in ast.nodes.iter().zip(&decl_node) {
        if let Some(n) = *n {
            nodes[n].scope = container_of(decl.container);
        }
    }
    let incomplete: Vec<Option<usize>> = failed
        .iter()
        .map(|&i| container_of(ast.nodes[i].container))
        .collect();

    let known: Vec<String> = ast.nodes.iter().map(|n| n.id.to_string()).collect();
    // Nodes suggested for a misspelt name: the flow was likely meant for them.
    let guessed = std::cell::RefCell::new(Vec::new());
    // A misspelt name in a flow written in `here`: the elements of that container
    // are the likely meaning (a flow stays within it), then any other.
    let resolve = |id: &Ident, here: Option<usize>| -> Option<usize> {
        let found = nodes.iter().position(|n| n.id == id);
        if found.is_none() && !known.iter().any(|k| id == k) {
            let local: Vec<String> = nodes
                .iter()
                .filter(|n| n.scope == here)
                .map(|n| n.id.to_string())
                .collect();
            let near = suggest::nearest(&id.to_string(), local.iter().map(String::as_str))
                .or_else(|| suggest::nearest(&id.to_string(), known.iter().map(String::as_str)));
            guessed
                .borrow_mut()
                .extend(near.and_then(|near| nodes.iter().position(|n| n.id == near)));
            let hint = near
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_else(|| {
                    format!("; declare it, e.g. `task {id} = handler;` or `end {id};`")
                });
            ctx.error(id, format!("unknown element `{id}` in flow{hint}"));
        }
        found
    };

    let mut flows = Vec::new();
    // Nodes with a flow to (`true`) or from (`false`) a name that did not resolve.
    let mut loose: Vec<(usize, bool)> = Vec::new();
    for stmt in &ast.flows {
        let hops = stmt.groups.len() - 1;
        let here = container_of(stmt.container);
        // Each name once, so an unknown one is reported once per place it is written.
        let resolved: Vec<Vec<Option<usize>>> = stmt
            .groups
            .iter()
            .map(|group| group.iter().map(|id| resolve(id, here)).collect())
            .collect();
        for (h, pair) in stmt.groups.windows(2).enumerate() {
            let last = h + 1 == hops;
            if let Some(guard) = stmt.guard.as_ref().filter(|_| last) {
                if pair[0].len() > 1 || pair[1].len() > 1 {
                    let (word, example) = match guard {
                        Guard::When { .. } => ("`when`", "when |data| ..."),
                        Guard::Else { .. } => ("`else`", "else"),
                    };
                    let join = |ids: &[Ident]| {
                        ids.iter()
                            .map(Ident::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    ctx.error_at(
                        guard.span(),
                        format!(
                            "{word} qualifies exactly one flow, but `{} -> {}` is {} flows: write each as its own statement, e.g. `{} -> {} {example};`",
                            join(&pair[0]),
                            join(&pair[1]),
                            pair[0].len() * pair[1].len(),
                            pair[0][0],
                            pair[1][0],
                        ),
                    );
                }
            }
            for (source, s) in pair[0].iter().zip(&resolved[h]) {
                for (target, t) in pair[1].iter().zip(&resolved[h + 1]) {
                    let (s, t) = match (*s, *t) {
                        (Some(s), Some(t)) => (s, t),
                        (Some(s), None) => {
                            loose.push((s, false));
                            continue;
                        }
                        (None, Some(t)) => {
                            loose.push((t, true));
                            continue;
                        }
                        (None, None) => continue,
                    };
                    // A flow stays within its container: a token
                    // enters a sub-process at its start and leaves at its end.
                    // Both ends of a crossing flow get the benefit of the doubt on their
                    // paths, as for a name that did not resolve: the one error says it.
                    let crossing = if nodes[s].scope != here {
                        Some((s, source, false))
                    } else if nodes[t].scope != here {
                        Some((t, target, true))
                    } else {
                        None
                    };
                    if let Some((wrong, written, into)) = crossing {
                        // A name declared twice (reported) may mean the dropped copy,
                        // written in this container: no crossing error on top.
                        if ast.nodes.iter().filter(|n| n.id == *written).count() == 1 {
                            ctx.error(written, crossing_error(&nodes, wrong, here, into));
                        }
                        loose.push((s, false));
                        loose.push((t, true));
                        continue;
                    }
                    let guard = if last { stmt.guard.as_ref() } else { None };
                    let condition = match guard {
                        Some(Guard::When { condition, .. }) => Some(condition),
                        _ => None,
                    };
                    flows.push(Flow {
                        source: s,
                        target: t,
                        source_ident: source,
                        target_ident: target,
                        condition,
                        guard,
                        link: false,
                    });
                }
            }
        }
    }
    for n in guessed.into_inner() {
        nodes[n].loose_in = true;
        nodes[n].loose_out = true;
    }
    for (n, incoming) in loose {
        if incoming {
            nodes[n].loose_in = true;
        } else {
            nodes[n].loose_out = true;
        }
    }
    let links = link_edges(ctx, &mut nodes, &flows);
    flows.extend(links);
    attach_boundaries(ctx, ast, &mut nodes);
    for (i, flow) in flows.iter().enumerate() {
        nodes[flow.source].outgoing.push(i);
        nodes[flow.target].incoming.push(i);
        if flow.is_default() && nodes[flow.source].default.is_none() {
            nodes[flow.source].default = Some(i);
        }
    }

    Model {
        vis: &ast.vis,
        name: &ast.name,
        data: &ast.data,
        doc: doc_text(&ast.attrs),
        attrs: ast
            .attrs
            .iter()
            .filter(|a| !a.path().is_ident("doc"))
            .collect(),
        nodes,
        flows,
        incomplete,
    }
}

/// Where an element of container `scope` is, as messages say it: "in sub-process
/// `handle`", "at the process's top level".
fn place(nodes: &[Node], scope: Option<usize>) -> String {
    match scope {
        Some(c) => format!("in {} `{}`", nodes[c].kind.describe(), nodes[c].id),
        None => "at the process's top level".to_string(),
    }
}

/// Why a flow written in container `here` cannot name `wrong`, an element of another
/// container (the flow's target when `into`, else its source), and the flow that
/// would do instead: one written where the two containers meet.
fn crossing_error(nodes: &[Node], wrong: usize, here: Option<usize>, into: bool) -> String {
    let id = nodes[wrong].id;
    let place = |c: Option<usize>| place(nodes, c);
    // `c` and the containers around it, innermost first.
    let around = |mut c: Option<usize>| {
        std::iter::from_fn(move || {
            let this = c?;
            c = nodes[this].scope;
            Some(this)
        })
    };
    // Where the two ends meet: the innermost container around `here` that holds
    // `wrong` (`None`: the top level).
    let meet = around(here).find(|&c| around(nodes[wrong].scope).any(|w| w == c));
    // The element written directly in `meet` that is, or holds, `n`.
    let outermost = |mut n: usize| {
        while nodes[n].scope != meet {
            n = nodes[n]
                .scope
                .expect("`meet` holds every element around `n`");
        }
        n
    };
    // The flow's two sides at the meeting level: `wrong`'s, and `here`'s (`None` when
    // the flow is written there).
    let far = outermost(wrong);
    let near = here.filter(|&h| Some(h) != meet).map(outermost);
    // An event sub-process between an end and the meeting level: no flow enters or
    // leaves one.
    let event_sub = |c: Option<usize>| {
        around(c)
            .take_while(|&c| Some(c) != meet)
            .find(|&c| nodes[c].kind == Kind::EventSubProcess)
    };
    let (leaving, entering) = if into {
        (event_sub(here), event_sub(Some(wrong)))
    } else {
        (event_sub(Some(wrong)), event_sub(here))
    };
    let mend = if near == Some(far) {
        let path = match (into, nodes[far].kind) {
            (true, Kind::SubProcess) => format!(
                "ends at its end events; to run `{id}` again, loop back to it outside its block"
            ),
            (true, _) => "ends at its end events".to_string(),
            (false, _) => "begins at its start event: flow on from there".to_string(),
        };
        format!(
            "`{id}` holds this flow, and a path inside {} {path}",
            nodes[far].kind.a()
        )
    } else if let Some(sub) = leaving {
        format!(
            "no flow leaves an event sub-process: `{}` ends at its own end events, so move what should follow into its block, before its end",
            nodes[sub].id
        )
    } else if let Some(sub) = entering {
        let path = if into {
            format!(
                "to run `{id}` on this path, declare it outside `{}`",
                nodes[sub].id
            )
        } else {
            format!(
                "inside `{}`, a path begins at its start event",
                nodes[sub].id
            )
        };
        format!(
            "an event sub-process is started by its start event's trigger, never by a flow; {path}"
        )
    } else {
        // How a token passes `c`, the sub-process to flow from or into, and the one the
        // flow is written in further in: "`pay` at its end event, then `handle` (which
        // holds it) at its own".
        let passes = |c: usize| {
            let (c, event) = (nodes[c].id, if into { "end" } else { "start" });
            match here.map(|h| nodes[h].id).filter(|&h| h != c) {
                Some(h) if into => {
                    format!("`{h}` at its {event} event, then `{c}` (which holds it) at its own")
                }
                Some(h) => format!("`{c}` at its {event} event, then `{h}` (within it) at its own"),
                None => format!("`{c}` at its {event} event"),
            }
        };
        match (into, near) {
            (true, None) => format!(
                "a token enters a sub-process at its start event, so flow into the sub-process itself: `... -> {};`",
                nodes[far].id
            ),
            (true, Some(c)) => format!(
                "a token leaves {} and goes on along the flows of `{c}` itself, written outside its block: `{c} -> {};`",
                passes(c),
                nodes[far].id,
                c = nodes[c].id
            ),
            (false, None) => format!(
                "a token leaves a sub-process at its end event, so flow on from the sub-process itself: `{} -> ...;`",
                nodes[far].id
            ),
            (false, Some(c)) => format!(
                "a token enters {}, so flow into `{c}` itself, outside its block: `{} -> {c};`",
                passes(c),
                nodes[far].id,
                c = nodes[c].id
            ),
        }
    };
    format!(
        "a flow written {} cannot {} `{id}`, which is {}: flows stay within their process or sub-process — {mend}",
        place(here),
        if into { "reach" } else { "start from" },
        place(nodes[wrong].scope)
    )
}

/// Attach every boundary event to its activity (`boundary b on activity: ...`). A
/// boundary left unattached (reported here) gets the benefit of the doubt on its
/// paths, as does an element given a stray `on`: it was likely meant as a boundary.
fn attach_boundaries(ctx: &Ctx, ast: &ProcessAst, nodes: &mut [Node]) {
    for decl in &ast.nodes {
        // By identity: a second declaration of an id was dropped, with its `on`.
        let Some(b) = nodes.iter().position(|n| std::ptr::eq(n.id, &decl.id)) else {
            continue;
        };
        let is_boundary = matches!(nodes[b].kind, Kind::Boundary { .. });
        let kind = nodes[b].kind.a();
        let id = &decl.id;
        let may_interrupt = is_boundary || matches!(nodes[b].kind, Kind::EventSubStart { .. });
        if let Some(marker) = decl.non_interrupting.as_ref().filter(|_| !may_interrupt) {
            // A start that should run beside the process is an event sub-process's.
            let mend = if nodes[b].kind.is_start() {
                format!("or, to run beside the process while it runs, make it an event sub-process's start: `event_subprocess on_{id} {{ start {id}: non_interrupting ...; ... }}`")
            } else {
                format!("or attach `{id}` to a task as `boundary {id} on some_task: non_interrupting ...;`")
            };
            ctx.error(
                marker,
                format!(
                    "only a boundary event or an event sub-process's start is `non_interrupting` (it runs beside the work it would otherwise interrupt); {kind} interrupts nothing — remove `non_interrupting`, {mend}"
                ),
            );
        }
        match (&decl.attached, is_boundary) {
            (Some(activity), false) => {
                ctx.error(
                    activity,
                    format!(
                        "only a boundary event is attached with `on`, but `{id}` is {kind} — to catch its event while `{activity}` runs, declare it `boundary {id} on {activity}: ...;`, else remove `on {activity}`"
                    ),
                );
                nodes[b].loose_in = true;
            }
            (None, true) => {
                ctx.error(
                    id,
                    format!("boundary event `{id}` needs the activity it is attached to: `boundary {id} on some_task: ...;`"),
                );
                nodes[b].loose_in = true;
            }
            (Some(activity), true) => match nodes.iter().position(|n| n.id == activity) {
                Some(a) if nodes[a].scope != nodes[b].scope => {
                    let place = |n: usize| place(nodes, nodes[n].scope);
                    ctx.error(
                        activity,
                        format!(
                            "boundary event `{id}` is declared {}, but `{activity}` is {}: a boundary event is declared beside its activity — move `boundary {id} on {activity}: ...;` and the flows out of it next to `{activity}`",
                            place(b),
                            place(a)
                        ),
                    );
                    nodes[b].loose_in = true;
                }
                Some(a) => {
                    nodes[b].attached_to = Some(a);
                    nodes[a].boundaries.push(b);
                }
                None => {
                    let names: Vec<String> = nodes.iter().map(|n| n.id.to_string()).collect();
                    let hint = suggest::nearest(&activity.to_string(), names.iter().map(String::as_str))
                        .map(|n| format!("did you mean `{n}`?"))
                        .unwrap_or_else(|| format!("attach it to a task, receive task or user task of this process, e.g. `task {activity} = handler;`"));
                    ctx.error(
                        activity,
                        format!("unknown activity `{activity}` for boundary event `{id}`; {hint}"),
                    );
                    nodes[b].loose_in = true;
                }
            },
            (None, false) => {}
        }
    }
}

/// Pair every link throw with the one link catch of its name, as a direct edge
/// (see ARCHITECTURE.md, "Events"): nothing is looked up by name at run time. A throw whose name has
/// no catch, a catch whose name has no throw, and a second catch of a name are errors
/// here; the elements they leave without a jump get the benefit of the doubt on their
/// paths, so the one error does not cascade. A written flow from a throw to its own
/// catch adds no edge (`check::link` reports the flow).
fn link_edges<'a>(ctx: &Ctx, nodes: &mut [Node<'a>], written: &[Flow<'a>]) -> Vec<Flow<'a>> {
    // Every link throw and catch: (node, name, the name's literal).
    let links = |catch: bool| -> Vec<(usize, String, syn::LitStr)> {
        let kind = if catch {
            Kind::Catch(EventTrigger::Link)
        } else {
            Kind::Throw(EventTrigger::Link)
        };
        nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.kind == kind)
            .filter_map(|(n, node)| {
                let name = node.event.as_ref()?.name.as_ref()?;
                Some((n, name.value(), name.clone()))
            })
            .collect()
    };
    let (throws, all_catches) = (links(false), links(true));
    // A link whose event did not parse (reported already) has no known name: it might
    // be any throw's catch, or any catch's throw, so pairing errors stand down.
    let unparsed = |kind: Kind| {
        nodes
            .iter()
            .any(|node| node.kind == kind && node.event.is_none())
    };
    let (unparsed_throw, unparsed_catch) = (
        unparsed(Kind::Throw(EventTrigger::Link)),
        unparsed(Kind::Catch(EventTrigger::Link)),
    );
    for node in nodes.iter_mut().filter(|node| node.event.is_none()) {
        match node.kind {
            Kind::Throw(EventTrigger::Link) => node.loose_out = true,
            Kind::Catch(EventTrigger::Link) => node.loose_in = true,
            _ => {}
        }
    }
    // The first catch of each name in each container: the one its throws lead to
    // (every container has its own link names).
    let scopes: Vec<Option<usize>> = nodes.iter().map(|n| n.scope).collect();
    let scope = |n: usize| scopes[n];
    let mut catches: Vec<(usize, String, syn::LitStr)> = Vec::new();
    for (n, name, literal) in &all_catches {
        match catches
            .iter()
            .find(|(c, other, _)| other == name && scope(*c) == scope(*n))
        {
            Some((first, _, _)) => {
                ctx.error(
                    nodes[*n].id,
                    format!(
                        "two link catch events are named \"{name}\" (`{}` and `{}`); a link throw must lead to exactly one place — rename one, and the throws that should land on it",
                        nodes[*first].id, nodes[*n].id
                    ),
                );
                nodes[*n].loose_in = true;
            }
            None => catches.push((*n, name.clone(), literal.clone())),
        }
    }
    let mut edges = Vec::new();
    // The catches a misnamed throw was likely meant for (reported at the throw).
    let mut meant: Vec<usize> = Vec::new();
    for (n, name, literal) in &throws {
        let n = *n;
        let elsewhere = catches
            .iter()
            .find(|(c, other, _)| other == name && scope(*c) != scope(n));
        match catches
            .iter()
            .find(|(c, other, _)| other == name && scope(*c) == scope(n))
        {
            Some(&(target, _, _)) => {
                let written_too = written.iter().any(|f| f.source == n && f.target == target);
                if !written_too {
                    edges.push(Flow {
                        source: n,
                        target,
                        source_ident: nodes[n].id,
                        target_ident: nodes[target].id,
                        condition: None,
                        guard: None,
                        link: true,
                    });
                }
            }
            None if unparsed_catch => nodes[n].loose_out = true,
            None if elsewhere.is_some() => {
                let (c, _, _) = elsewhere.expect("checked");
                let place = |n: usize| place(nodes, nodes[n].scope);
                // Whether the catch is nested in the throw's container: the jump would
                // enter a sub-process rather than leave one.
                let mut holder = scope(*c);
                while holder.is_some() && holder != scope(n) {
                    holder = holder.and_then(scope);
                }
                let mend = if holder == scope(n) {
                    "to enter a sub-process, flow into the sub-process itself (a token begins at its start event)"
                } else {
                    "to leave a sub-process, end its path and flow on from the sub-process itself"
                };
                ctx.error(
                    literal,
                    format!(
                        "the link throw `{}` is {}, but the link catch `{}` named \"{name}\" is {}: a link jumps only within its own process or sub-process — declare the catch beside the throw; {mend}",
                        nodes[n].id,
                        place(n),
                        nodes[*c].id,
                        place(*c),
                    ),
                );
                meant.push(*c);
                nodes[n].loose_out = true;
            }
            None => {
                let near = suggest::nearest(name, catches.iter().map(|(_, c, _)| c.as_str()))
                    .and_then(|near| catches.iter().find(|(_, c, _)| c == near));
                let mend = match near {
                    Some((c, near, _)) => {
                        meant.push(*c);
                        format!(
                            "did you mean \"{near}\" (the link catch `{}`)? A throw and its catch name the same link",
                            nodes[*c].id
                        )
                    }
                    None => {
                        let id = free_id(nodes, name, "landing");
                        format!("declare where it lands, e.g. `catch {id}: link(\"{name}\");`, and flow on from there")
                    }
                };
                ctx.error(
                    literal,
                    format!(
                        "no link catch event is named \"{name}\", so the link throw `{}` leads nowhere; {mend}",
                        nodes[n].id
                    ),
                );
                nodes[n].loose_out = true;
            }
        }
    }
    for (c, name, literal) in &catches {
        if throws
            .iter()
            .any(|(t, other, _)| other == name && scope(*t) == scope(*c))
        {
            continue;
        }
        if !meant.contains(c) && !unparsed_throw {
            let id = free_id(nodes, &format!("to_{name}"), "jump");
            ctx.error(
                literal,
                format!(
                    "no link throw event is named \"{name}\", so nothing reaches the link catch `{}`: a link catch is entered only by the link throws of its name — end the path that should jump here with one, e.g. `throw {id}: link(\"{name}\");`",
                    nodes[*c].id
                ),
            );
        }
        nodes[*c].loose_in = true;
    }
    edges
}

/// `name` for an example declaration, if it is an identifier no element has; else
/// `fallback`.
fn free_id(nodes: &[Node], name: &str, fallback: &str) -> String {
    syn::parse_str::<Ident>(name)
        .ok()
        .filter(|id| !nodes.iter().any(|n| n.id == id))
        .map_or_else(|| fallback.to_string(), |id| id.to_string())
}

/// The node's kind from its keyword, handler and spec; `None` (with an error) when
/// they do not fit together.
fn kind_of(ctx: &Ctx, decl: &NodeAst, within: Within) -> Option<Kind> {
    let keyword = decl.keyword.to_string();
    let kind = match keyword.as_str() {
        "start" if within == Within::EventSubProcess => event_sub_start(ctx, decl)?,
        "start" if within == Within::SubProcess => match &decl.spec {
            None => Kind::Start,
            Some(spec) => {
                ctx.error(
                    &spec.name,
                    format!(
                        "a sub-process starts when a token enters it, so its start event has no trigger: `start {id};` — to react to an event while the sub-process runs, give it an event sub-process: `event_subprocess on_event {{ start {id}: {kw}(...); ... }}`",
                        id = decl.id,
                        kw = spec.name,
                    ),
                );
                return None;
            }
        },
        "start" if decl.spec.as_ref().is_some_and(|s| s.name == "condition") => {
            ctx.error(
                &decl.spec.as_ref().expect("checked").name,
                format!(
                    "a conditional start event belongs in an event sub-process, never at a process's top level: before the start there is no instance whose data it could read — wait for it in an event sub-process, `event_subprocess on_{id} {{ start {id}: condition(|data| ...); ... }}`, or start plainly and wait: `start begin;`, `catch {id}: condition(|data| ...);` and `begin -> {id};`",
                    id = decl.id
                ),
            );
            return None;
        }
        "start"
            if decl
                .spec
                .as_ref()
                .is_some_and(|s| s.name == "error" || s.name == "escalation") =>
        {
            let kw = &decl.spec.as_ref().expect("checked").name;
            ctx.error(
                kw,
                format!(
                    "an {kw} start event belongs in an event sub-process, where it catches the {kw} thrown in the enclosing scope — `event_subprocess on_{kw} {{ start {id}: {kw}(\"CODE\"); ... }}`; a process's own start is `start {id};`, or started by a message, signal or timer",
                    id = decl.id
                ),
            );
            return None;
        }
        "start" => match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
            None => Kind::Start,
            Some("message") => Kind::StartEvent(EventTrigger::Message),
            Some("signal") => Kind::StartEvent(EventTrigger::Signal),
            Some("timer") => Kind::StartEvent(EventTrigger::Timer),
            Some("link") => {
                ctx.error(
                    &decl.spec.as_ref().expect("matched").name,
                    format!(
                        "a start event cannot be a link: a link jumps within a running instance, from a link throw to the link catch of its name — begin the process with `start {id};`, and where a path should jump back, end it with `throw jump: link(\"name\");` and go on from `catch landing: link(\"name\");`",
                        id = decl.id
                    ),
                );
                return None;
            }
            Some(other) => {
                ctx.error(
                    &decl.spec.as_ref().expect("matched").name,
                    format!(
                        "a start event is `start {id};`, or started by an event: `start {id}: message(\"name\");`, `signal(\"name\")` or `timer(...)` — not `{other}`",
                        id = decl.id
                    ),
                );
                return None;
            }
        },
        "end" => match &decl.spec {
            Some(spec) if spec.name == "terminate" && spec.args.is_none() => Kind::Terminate,
            Some(spec) if spec.name == "signal" => Kind::ThrowEnd(EventTrigger::Signal),
            Some(spec) if spec.name == "message" => Kind::ThrowEnd(EventTrigger::Message),
            Some(spec) if spec.name == "error" => Kind::ErrorEnd,
            Some(spec) if spec.name == "escalation" => Kind::Escalate { end: true },
            Some(spec) if spec.name == "link" => {
                ctx.error(
                    &spec.name,
                    format!(
                        "an end event cannot be a link: at a link throw the path jumps on to the link catch of its name, so it does not end there — declare `{id}` as a link throw, `throw {id}: link({args});`",
                        id = decl.id,
                        args = spec.args.as_ref().map_or("\"name\"".to_string(), ToString::to_string),
                    ),
                );
                // Checked on as the link throw it stands for, so its catch is paired.
                Kind::Throw(EventTrigger::Link)
            }
            Some(spec) => {
                ctx.error(
                    &spec.name,
                    format!(
                        "unknown end event kind `{}`; an end event is `end {id};`, `end {id}: terminate;`, `end {id}: signal(\"name\");`, `end {id}: message(\"name\", key = ...);`, `end {id}: error(\"CODE\");` or `end {id}: escalation(\"CODE\");`",
                        spec.name,
                        id = decl.id
                    ),
                );
                // Checked on as a plain end, so the flows into it raise nothing more.
                Kind::End
            }
            None => Kind::End,
        },
        "task" => match &decl.handler {
            Some(_) => Kind::Task,
            None => {
                ctx.error(
                    &decl.id,
                    format!(
                        "task `{}` has no handler; bind one: `task {} = path::to::async_fn;` or `= |data| async move {{ ... }}`",
                        decl.id, decl.id
                    ),
                );
                return None;
            }
        },
        "exclusive" => Kind::Exclusive,
        "parallel" => Kind::Parallel,
        "inclusive" => Kind::Inclusive,
        "complex" => Kind::Complex,
        "event_based" => match &decl.spec {
            None => Kind::EventGate,
            Some(spec) if spec.name == "instantiate" => {
                let args = spec.args.as_ref().map(|a| a.to_string());
                match args.as_deref() {
                    None => Kind::InstantiatingGate { parallel: false },
                    Some("parallel") => Kind::InstantiatingGate { parallel: true },
                    Some(other) => {
                        let id = &decl.id;
                        let kinds = format!(
                            "write `event_based {id}: instantiate;` (each message for one of its arms starts an instance on that arm) or `event_based {id}: instantiate(parallel);` (the first message starts an instance, which then waits for a message on every other arm)"
                        );
                        match spec.args.as_ref().filter(|a| !a.is_empty()) {
                            Some(args) => ctx.error(
                                args,
                                format!("unknown `instantiate` argument `{other}`; {kinds}"),
                            ),
                            None => ctx.error_at(
                                spec.close,
                                format!("`instantiate()` has empty parentheses; {kinds}"),
                            ),
                        }
                        return None;
                    }
                }
            }
            Some(spec) => {
                ctx.error(
                    &spec.name,
                    format!(
                        "unknown event-based gateway kind `{}`; an event-based gateway is `event_based {id};` mid-flow (the first of its arms' events chooses the path), or `event_based {id}: instantiate;` / `event_based {id}: instantiate(parallel);` with no incoming flow, to start instances of a deployed process on its arms' messages",
                        spec.name,
                        id = decl.id
                    ),
                );
                return None;
            }
        },
        "user" => Kind::User,
        "receive" => Kind::Receive,
        "subprocess" => Kind::SubProcess,
        "event_subprocess" => Kind::EventSubProcess,
        "boundary" => {
            let trigger = match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
                Some("timer") => EventTrigger::Timer,
                Some("message") => EventTrigger::Message,
                Some("signal") => EventTrigger::Signal,
                Some("condition") => EventTrigger::Condition,
                Some("error") => EventTrigger::Error,
                Some("escalation") => EventTrigger::Escalation,
                _ => {
                    let id = &decl.id;
                    let activity = decl
                        .attached
                        .as_ref()
                        .map_or("some_task".to_string(), Ident::to_string);
                    let events = "a timer, message, signal, condition, error or escalation";
                    let example =
                        format!("`boundary {id} on {activity}: timer(Duration::from_secs(60));`");
                    match &decl.spec {
                        None => ctx.error(
                            id,
                            format!("`boundary {id}` needs the event it catches: {events}, e.g. {example}"),
                        ),
                        Some(spec) if spec.name == "link" => ctx.error(
                            &spec.name,
                            format!("a boundary event cannot be a link: a link catch is entered only by its link throws, never from an activity — to leave `{activity}` on an event, catch {events}; to jump, end a path with `throw {id}: link(...);`"),
                        ),
                        Some(spec) => {
                            let known = ["timer", "message", "signal", "condition", "error", "escalation"];
                            let hint = suggest::nearest(&spec.name.to_string(), known)
                                .map(|k| format!("did you mean `{k}`? "))
                                .unwrap_or_default();
                            ctx.error(
                                &spec.name,
                                format!("unknown event `{}`; {hint}a boundary event catches {events}, e.g. {example}", spec.name),
                            );
                        }
                    }
                    return None;
                }
            };
            Kind::Boundary {
                interrupting: decl.non_interrupting.is_none(),
                trigger,
            }
        }
        "throw" if decl.spec.as_ref().is_some_and(|s| s.name == "escalation") => {
            Kind::Escalate { end: false }
        }
        "catch" | "throw" => {
            let trigger = match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
                Some("message") => EventTrigger::Message,
                Some("signal") => EventTrigger::Signal,
                Some("timer") if keyword == "catch" => EventTrigger::Timer,
                Some("link") => EventTrigger::Link,
                Some("condition") if keyword == "catch" => EventTrigger::Condition,
                _ => {
                    let id = &decl.id;
                    let (what, known, example): (_, &[&str], _) = if keyword == "catch" {
                        (
                            "an event to wait for",
                            &["message", "signal", "timer", "condition", "link"],
                            format!("`catch {id}: message(\"payment\", key = |data| data.id.clone());`, `catch {id}: signal(\"alarm\");` or `catch {id}: timer(Duration::from_secs(30));`"),
                        )
                    } else {
                        (
                            "an event to send",
                            &["message", "signal", "escalation", "link"],
                            format!("`throw {id}: signal(\"alarm\");` or `throw {id}: message(\"request\", key = |data| data.id.clone());`"),
                        )
                    };
                    match &decl.spec {
                        None => ctx.error(id, format!("`{keyword} {id}` needs {what}: {example}")),
                        Some(spec) if spec.name == "timer" || spec.name == "condition" => ctx.error(
                            &spec.name,
                            format!("a throw event cannot send a {kw}: a {kw} is only waited for — to wait, declare `catch {id}: {kw}(...);`; a throw sends a signal, a message, an escalation or a link: {example}", kw = spec.name),
                        ),
                        Some(spec) if spec.name == "error" && keyword == "throw" => ctx.error(
                            &spec.name,
                            format!("an error ends its path, so only an end event throws one: `end {id}: error(\"CODE\");` — a task raises one by returning `Err(TaskError::bpmn(\"CODE\", ...))`; an error boundary on the activity catches it"),
                        ),
                        Some(spec) if spec.name == "error" || spec.name == "escalation" => ctx.error(
                            &spec.name,
                            format!(
                                "an {kw} is not waited for mid-path: it is caught by a boundary event on the activity that raises it — `boundary {id} on some_task: {kw}(\"CODE\");`, and flow on from `{id}`",
                                kw = spec.name
                            ),
                        ),
                        Some(spec) => {
                            let hint = suggest::nearest(&spec.name.to_string(), known.iter().copied())
                                .map(|k| format!("did you mean `{k}`? "))
                                .unwrap_or_default();
                            ctx.error(
                                &spec.name,
                                format!("unknown event `{}`; {hint}`{keyword} {id}` needs {what}: {example}", spec.name),
                            );
                        }
                    }
                    return None;
                }
            };
            if keyword == "catch" {
                Kind::Catch(trigger)
            } else {
                Kind::Throw(trigger)
            }
        }
        _ => {
            let hint = suggest::nearest(&keyword, KINDS.iter().copied())
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            ctx.error(
                &decl.keyword,
                format!(
                    "unknown element kind `{keyword}`; {hint}expected one of: {}",
                    KINDS.join(", ")
                ),
            );
            return None;
        }
    };
    if !matches!(kind, Kind::Task) {
        if let Some(handler) = &decl.handler {
            ctx.error(
                handler,
                format!(
                    "{} takes no handler; only a `task` binds one with `=` — drop the handler, or make `{}` a task",
                    kind.a(),
                    decl.id
                ),
            );
        }
    }
    if kind != Kind::Complex {
        if let Some(extra) = decl.more.first() {
            ctx.error(
                &extra.name,
                format!(
                    "only a complex gateway's activation rule has alternatives joined by `|`; {} has one kind at most",
                    kind.a()
                ),
            );
        }
    }
    if !matches!(
        kind,
        Kind::End | Kind::Terminate | Kind::Complex | Kind::InstantiatingGate { .. }
    ) && !kind.has_event()
    {
        if let Some(spec) = &decl.spec {
            if spec.name == "link" {
                ctx.error(
                    &spec.name,
                    format!(
                        "{} cannot be a link: a link is a pair of elements of its own — end the path that jumps with `throw jump: link(\"name\");`, and go on where it lands from `catch landing: link(\"name\");`",
                        kind.a(),
                    ),
                );
                return Some(kind);
            }
            let id = &decl.id;
            let flow = format!("with a flow between it and `{id}`");
            let place = match spec.name.to_string().as_str() {
                "message" => Some(format!("`catch` to wait for it, `receive` (a task) to wait for a message, `throw` to send it — {flow}")),
                "signal" => Some(format!("`catch` to wait for it, `throw` to send it — {flow}")),
                "timer" | "condition" => Some(format!("`catch` to wait for it — {flow}")),
                "error" | "escalation" => Some(format!(
                    "a `boundary` on the activity that raises it catches it, `boundary caught on some_task: {kw}(\"CODE\");`; a task raises it by returning `Err(TaskError::{raise}(\"CODE\"{more}))`, a path by ending in `end failed: {kw}(\"CODE\");`",
                    kw = spec.name,
                    raise = if spec.name == "error" { "bpmn" } else { "escalate" },
                    more = if spec.name == "error" { ", ..." } else { "" },
                )),
                _ => None,
            };
            if let Some(place) = place {
                ctx.error(
                    &spec.name,
                    format!(
                        "{} takes no event; {} `{}(...)` goes on an element of its own — {place}",
                        kind.a(),
                        if spec.name.to_string().starts_with('e') {
                            "an"
                        } else {
                            "a"
                        },
                        spec.name,
                    ),
                );
                return Some(kind);
            }
            let mend = if spec.name == "terminate" {
                format!(
                    "to end the process after `{}`, flow into a terminate end event: `end stop: terminate;` and `{} -> stop;`",
                    decl.id, decl.id
                )
            } else {
                "remove it".to_string()
            };
            ctx.error(
                &spec.name,
                format!(
                    "{} takes no `: {}`; only an end event has a kind (`end name: terminate;`) — {mend}",
                    kind.a(),
                    spec.name,
                ),
            );
        }
    }
    Some(kind)
}

/// The start event of an event sub-process: its trigger, interrupting unless marked.
fn event_sub_start(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    let id = &decl.id;
    let triggers = "a message, signal, timer, condition, error or escalation";
    let example = format!("`start {id}: message(\"cancel\", key = |data| data.id.clone());`");
    let trigger = match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
        Some("message") => EventTrigger::Message,
        Some("signal") => EventTrigger::Signal,
        Some("timer") => EventTrigger::Timer,
        Some("condition") => EventTrigger::Condition,
        Some("error") => EventTrigger::Error,
        Some("escalation") => EventTrigger::Escalation,
        None => {
            ctx.error(
                id,
                format!(
                    "an event sub-process is started by an event, so its start event names one — {triggers}, e.g. {example} (add `non_interrupting` before the event to run beside the rest of the scope instead of cancelling it)"
                ),
            );
            return None;
        }
        Some("non_interrupting") => {
            ctx.error(
                &decl.spec.as_ref().expect("matched").name,
                format!("`non_interrupting` marks the trigger that follows it, and none does: write it before the event, e.g. `start {id}: non_interrupting signal(\"ping\");`"),
            );
            return None;
        }
        Some(other) => {
            let known = [
                "message",
                "signal",
                "timer",
                "condition",
                "error",
                "escalation",
            ];
            let hint = suggest::nearest(other, known)
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            ctx.error(
                &decl.spec.as_ref().expect("matched").name,
                format!("an event sub-process cannot start on `{other}`; {hint}it starts on {triggers}, e.g. {example}"),
            );
            return None;
        }
    };
    Some(Kind::EventSubStart {
        trigger,
        interrupting: decl.non_interrupting.is_none(),
    })
}

/// The event of an element that carries one, parsed; `None` (with the error) when it
/// does not parse.
fn event_of(ctx: &Ctx, decl: &NodeAst, kind: Kind) -> Option<EventAst> {
    if !kind.has_event() {
        return None;
    }
    let Some(spec) = &decl.spec else {
        ctx.error(
            &decl.id,
            format!(
                "receive task `{}` needs its message: `receive {}: message(\"name\", key = |data| data.id.clone());`",
                decl.id, decl.id
            ),
        );
        return None;
    };
    parse::event(spec).map_err(|e| ctx.push(e)).ok()
}

/// A complex gateway's activation triples, each `activate(...)` parsed; errors for
/// anything else after the `:`. A triple that does not parse is kept as a placeholder
/// (no count, nothing required), so the gateway does not also read as having no rule.
fn activation_of(ctx: &Ctx, decl: &NodeAst, kind: Kind) -> Vec<ActivationAst> {
    if kind != Kind::Complex {
        return Vec::new();
    }
    let placeholder = |spec: &parse::Spec| ActivationAst {
        keyword: spec.name.clone(),
        count: None,
        require: Vec::new(),
        when: None,
    };
    let specs = decl.spec.iter().chain(&decl.more);
    specs
        .map(|spec| {
            if spec.name != "activate" {
                let hint = suggest::nearest(&spec.name.to_string(), ["activate"])
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                ctx.error(
                    &spec.name,
                    format!(
                        "unknown activation `{}`; {hint}a complex gateway's rule is one or more `activate(count = N, require = [a], when = |data| ...)` joined by `|`",
                        spec.name
                    ),
                );
                return placeholder(spec);
            }
            parse::activation(spec).unwrap_or_else(|e| {
                ctx.push(e);
                placeholder(spec)
            })
        })
        .collect()
}

/// Walking the graph: shared by the checks and by the reachability masks `emit`
/// precomputes for the inclusive joins.
impl Model<'_> {
    /// Nodes reachable from `from` (included) following flows forward, or backward
    /// when `backward`; the walk never enters `barrier`.
    ///
    /// With `scopes`, the walk also follows how tokens leave a scope: from an end
    /// event to the sub-process (or event sub-process) it ends, and from an event
    /// sub-process to its enclosing one — the paths a token's *completion* takes,
    /// which the OR-join's reachability needs. Without, it follows written flows
    /// (and boundaries) only, as the per-container path rules do.
    pub fn reachable(
        &self,
        from: &[usize],
        backward: bool,
        barrier: Option<usize>,
        scopes: bool,
    ) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = from
            .iter()
            .copied()
            .filter(|n| Some(*n) != barrier)
            .collect();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            for next in self.neighbours(n, backward, scopes) {
                if !seen[next] && Some(next) != barrier {
                    stack.push(next);
                }
            }
        }
        seen
    }

    /// The nodes one step from `n`, forward or backward: along flows (link edges
    /// included) and along the attachment of a boundary event to its activity — a
    /// token at an activity can go on from any of its boundaries.
    pub fn neighbours(
        &self,
        n: usize,
        backward: bool,
        scopes: bool,
    ) -> impl Iterator<Item = usize> + '_ {
        let node = &self.nodes[n];
        let (flows, mut attached): (&[usize], Vec<usize>) = if backward {
            (&node.incoming, node.attached_to.into_iter().collect())
        } else {
            (&node.outgoing, node.boundaries.clone())
        };
        if scopes {
            if backward {
                // Into a scope from what completes it: its ends and event sub-processes.
                if matches!(node.kind, Kind::SubProcess | Kind::EventSubProcess) {
                    attached.extend((0..self.nodes.len()).filter(|&e| {
                        self.nodes[e].scope == Some(n)
                            && (self.nodes[e].kind.is_end()
                                || self.nodes[e].kind == Kind::EventSubProcess)
                    }));
                }
            } else if node.kind.is_end() || node.kind == Kind::EventSubProcess {
                attached.extend(node.scope);
            }
        }
        let along = flows.iter().map(move |&f| {
            if backward {
                self.flows[f].source
            } else {
                self.flows[f].target
            }
        });
        along.chain(attached)
    }

    /// Whether `node` lies on a cycle: some successor leads back to it.
    pub fn on_cycle(&self, node: usize) -> bool {
        let next: Vec<usize> = self.neighbours(node, false, true).collect();
        self.reachable(&next, false, None, true)[node]
    }

    /// For a converging inclusive or complex gateway `join`: per node `p`, bit `i` set when the
    /// source of incoming flow `i` is reachable from `p` without passing `join`.
    pub fn reach_masks(&self, join: usize) -> Vec<u64> {
        let mut masks = vec![0u64; self.nodes.len()];
        for (i, &f) in self.nodes[join].incoming.iter().enumerate().take(64) {
            let from = self.reachable(&[self.flows[f].source], true, Some(join), true);
            for (p, reaches) in from.into_iter().enumerate() {
                if reaches {
                    masks[p] |= 1 << i;
                }
            }
        }
        masks
    }

    /// Whether `scope` lost a declaration to an error (see [`Model::incomplete`]).
    pub fn is_incomplete(&self, scope: Option<usize>) -> bool {
        self.incomplete.contains(&scope)
    }

    /// The process's own start events (its top level).
    pub fn starts(&self) -> Vec<usize> {
        self.starts_in(None)
    }

    /// The start events written directly in `scope` (`None`: the top level).
    pub fn starts_in(&self, scope: Option<usize>) -> Vec<usize> {
        self.members(scope)
            .filter(|&n| self.nodes[n].kind.is_start())
            .collect()
    }

    /// The elements written directly in `scope` (`None`: the top level).
    pub fn members(&self, scope: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(move |&n| self.nodes[n].scope == scope)
    }

    /// Every container: the top level (`None`), then each sub-process and event
    /// sub-process in declaration order.
    pub fn containers(&self) -> Vec<Option<usize>> {
        let nested = (0..self.nodes.len())
            .filter(|&n| matches!(self.nodes[n].kind, Kind::SubProcess | Kind::EventSubProcess));
        std::iter::once(None).chain(nested.map(Some)).collect()
    }
}
