//! One scope's control flow as a token game.
//!
//! Places: every flow of the scope; for each activity with boundary events, a place
//! "inside" it (the activity is working, its boundaries armed); for each
//! non-interrupting boundary, how often it fired for the current activations (it
//! fires at most once per activation here — a repeating timer's further firings add
//! no new kind of state); for each converging complex gateway, whether it fired.
//!
//! A move is one node acting on one token (or, at a join, on one token per flow). Data
//! conditions are free choices: an exclusive split may take any of its flows (the
//! default is one more choice), an inclusive split or an activity with conditional
//! flows any non-empty set of its conditional flows besides its unconditional ones
//! (the default alone when none is taken), an event-based gateway any one arm, an
//! activity may leave through any boundary. A sub-process is an activity here; its
//! inside is a scope of its own, analysed apart. Event sub-processes are scopes of
//! their own too; in their enclosing scope they add no tokens.

use crate::model::{Direction, Edges, Kind, Model};
use crate::parse::EventTrigger;

/// Inclusive splits with more conditional flows than this are explored with each
/// flow alone and all of them only (the exploration is then marked incomplete).
const MAX_SUBSET_FLOWS: usize = 10;

/// What a place stands for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Place {
    Flow(usize),
    Inside(usize),
    Spent(usize),
    Fired(usize),
}

/// What a move did, for the witness.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Label {
    /// A node passed a token on with no choice to make.
    Pass,
    /// A node with a choice took these flows.
    Took(Box<[usize]>),
    /// An activity left through (or, non-interrupting, forked at) this boundary.
    Boundary(usize),
    /// An activity with interrupting boundaries ended normally, taking these flows.
    Completed(Box<[usize]>),
    /// The node ended its scope (terminate, error, interrupting escalation).
    Clear,
    /// An end event consumed the token.
    Ended,
    /// A scope's run began at this start, taking these flows.
    Begin(usize, Box<[usize]>),
}

pub struct Move {
    pub node: usize,
    pub consume: Vec<u32>,
    pub produce: Vec<u32>,
    /// A place set to one (a complex gateway fired).
    pub flag: Option<u32>,
    pub clear: bool,
    /// The move touches only places its node alone consumes and is no merge arrival:
    /// the exploration may take it (and its node's other moves) alone.
    pub local: bool,
    pub label: Label,
}

pub struct Net<'m, 'a> {
    pub model: &'m Model<'a>,
    pub places: Vec<Place>,
    /// Per model flow, its place when it is in this scope.
    pub flow_place: Vec<Option<u32>>,
    /// Per model node, its inside place (an activity with boundaries).
    pub inside: Vec<Option<u32>>,
    /// Per model node, its spent place (a non-interrupting boundary).
    pub spent: Vec<Option<u32>>,
    /// Per model node, its fired place (a converging complex gateway).
    pub fired: Vec<Option<u32>>,
    /// Per model node, the sets of flows it may take when it passes a token on.
    pub options: Vec<Vec<Box<[usize]>>>,
    /// Per model node of an OR-join, its reach masks (see `Model::reach_masks`).
    pub reach: Vec<Option<Vec<u64>>>,
    /// Per merge (see `explore::is_merge`), the nodes from which a token can reach
    /// it: while none but the arriving token can, the merge passes it at once.
    pub feeds: Vec<Option<Vec<bool>>>,
    /// The scope's nodes, in declaration order.
    pub nodes: Vec<usize>,
    /// Whether an escalation may end this scope (an interrupting catcher exists).
    pub escalation_clears: bool,
    /// Some inclusive split's choices were cut down (see [`MAX_SUBSET_FLOWS`]).
    pub truncated: bool,
}

/// A marking: (place << 8 | tokens), sorted by place, no zero counts.
pub type Marking = Vec<u32>;

pub fn count(m: &Marking, place: u32) -> u32 {
    match m.binary_search_by_key(&place, |e| e >> 8) {
        Ok(i) => m[i] & 0xff,
        Err(_) => 0,
    }
}

fn add(m: &mut Marking, place: u32) -> u32 {
    match m.binary_search_by_key(&place, |e| e >> 8) {
        Ok(i) => {
            m[i] += 1;
            m[i] & 0xff
        }
        Err(i) => {
            m.insert(i, place << 8 | 1);
            1
        }
    }
}

fn take(m: &mut Marking, place: u32) {
    if let Ok(i) = m.binary_search_by_key(&place, |e| e >> 8) {
        if m[i] & 0xff == 1 {
            m.remove(i);
        } else {
            m[i] -= 1;
        }
    }
}

fn set(m: &mut Marking, place: u32, n: u32) {
    match m.binary_search_by_key(&place, |e| e >> 8) {
        Ok(i) if n == 0 => {
            m.remove(i);
        }
        Ok(i) => m[i] = place << 8 | n,
        Err(i) if n > 0 => m.insert(i, place << 8 | n),
        Err(_) => {}
    }
}

/// Tokens a place may hold before the exploration stops following that run.
pub const CAP: u32 = 3;

impl<'m, 'a> Net<'m, 'a> {
    pub fn new(model: &'m Model<'a>, scope: Option<usize>) -> Self {
        let n = model.nodes.len();
        let mut net = Net {
            model,
            places: Vec::new(),
            flow_place: vec![None; model.flows.len()],
            inside: vec![None; n],
            spent: vec![None; n],
            fired: vec![None; n],
            options: vec![Vec::new(); n],
            reach: vec![None; n],
            feeds: vec![None; n],
            nodes: model.members(scope).collect(),
            escalation_clears: escalation_clears(model, scope),
            truncated: false,
        };
        for (f, flow) in model.flows.iter().enumerate() {
            if model.nodes[flow.target].scope == scope {
                net.flow_place[f] = Some(net.place(Place::Flow(f)));
            }
        }
        for i in 0..net.nodes.len() {
            let v = net.nodes[i];
            let node = &model.nodes[v];
            if !node.boundaries.is_empty() {
                net.inside[v] = Some(net.place(Place::Inside(v)));
            }
            if matches!(
                node.kind,
                Kind::Boundary {
                    interrupting: false,
                    ..
                }
            ) {
                net.spent[v] = Some(net.place(Place::Spent(v)));
            }
            if node.kind == Kind::Complex && node.incoming.len() >= 2 {
                net.fired[v] = Some(net.place(Place::Fired(v)));
            }
            if node.kind == Kind::Inclusive && node.incoming.len() >= 2 {
                net.reach[v] = Some(model.reach_masks(v));
            }
            if node.incoming.len() >= 2
                && !matches!(node.kind, Kind::Parallel | Kind::Inclusive | Kind::Complex)
                && !node.kind.is_end()
            {
                net.feeds[v] =
                    Some(model.reachable(&[v], Direction::Backward, None, Edges::WithinScope));
            }
            let (options, cut) = out_options(model, v);
            net.truncated |= cut;
            net.options[v] = options;
        }
        net
    }

    fn place(&mut self, p: Place) -> u32 {
        self.places.push(p);
        (self.places.len() - 1) as u32
    }

    fn flows_to_places(&self, flows: &[usize]) -> Vec<u32> {
        flows.iter().filter_map(|&f| self.flow_place[f]).collect()
    }

    /// The scope's initial markings, one per way a run of it may begin.
    pub fn initial(&self) -> Vec<(Marking, usize, Label)> {
        let mut all = Vec::new();
        for &v in &self.nodes {
            if !self.model.nodes[v].kind.is_start() {
                continue;
            }
            for option in &self.options[v] {
                let mut m = Marking::new();
                for p in self.flows_to_places(option) {
                    add(&mut m, p);
                }
                all.push((m, v, Label::Begin(v, option.clone())));
            }
        }
        all
    }

    /// Whether a marking holds tokens (flags and spent counts are no tokens).
    pub fn has_tokens(&self, m: &Marking) -> bool {
        m.iter().any(|e| {
            matches!(
                self.places[(e >> 8) as usize],
                Place::Flow(_) | Place::Inside(_)
            )
        })
    }

    /// Where a token on `place` is: the node it is at.
    pub fn position(&self, place: u32) -> Option<usize> {
        match self.places[place as usize] {
            Place::Flow(f) => Some(self.model.flows[f].target),
            Place::Inside(v) => Some(v),
            Place::Spent(_) | Place::Fired(_) => None,
        }
    }

    /// Every move enabled in `m`, grouped by node in declaration order.
    pub fn moves(&self, m: &Marking, out: &mut Vec<Move>) {
        out.clear();
        // The nodes holding tokens, each once, in declaration order.
        let mut at: Vec<usize> = m.iter().filter_map(|e| self.position(e >> 8)).collect();
        at.sort_unstable();
        at.dedup();
        for v in at {
            self.node_moves(v, m, out);
        }
    }

    fn node_moves(&self, v: usize, m: &Marking, out: &mut Vec<Move>) {
        let model = self.model;
        let node = &model.nodes[v];
        let marked: Vec<(usize, u32)> = node
            .incoming
            .iter()
            .enumerate()
            .filter_map(|(i, &f)| {
                let p = self.flow_place[f]?;
                (count(m, p) > 0).then_some((i, p))
            })
            .collect();
        let join = node.incoming.len() >= 2;
        // A merge passes a token on at once while no other token can reach it; else
        // it waits for the exploration's full step, where meetings at it are seen.
        let arrivals_local = node.incoming.len() <= 1
            || node.kind.is_end()
            || self.feeds[v].as_ref().is_some_and(|feeds| {
                let mut others = m.iter().filter_map(|e| {
                    let at = self.position(e >> 8)?;
                    Some((at, e & 0xff))
                });
                let tokens_here: u32 = marked.iter().map(|&(_, p)| count(m, p)).sum();
                tokens_here == 1 && others.all(|(at, _)| at == v || !feeds[at])
            });
        let passes = |consume: Vec<u32>, local: bool, out: &mut Vec<Move>| {
            let options = &self.options[v];
            for option in options {
                out.push(Move {
                    node: v,
                    consume: consume.clone(),
                    produce: self.flows_to_places(option),
                    flag: None,
                    clear: false,
                    local,
                    label: if options.len() > 1 {
                        Label::Took(option.clone())
                    } else {
                        Label::Pass
                    },
                });
            }
        };
        let clear = |p: u32, out: &mut Vec<Move>| {
            out.push(Move {
                node: v,
                consume: vec![p],
                produce: Vec::new(),
                flag: None,
                clear: true,
                local: false,
                label: Label::Clear,
            })
        };
        match node.kind {
            Kind::Start
            | Kind::StartEvent(_)
            | Kind::InstantiatingGate { .. }
            | Kind::EventSubStart { .. }
            | Kind::EventSubProcess
            | Kind::Boundary { .. } => {}
            Kind::End | Kind::ThrowEnd(_) | Kind::Escalate { end: true } => {
                for &(_, p) in &marked {
                    out.push(Move {
                        node: v,
                        consume: vec![p],
                        produce: Vec::new(),
                        flag: None,
                        clear: false,
                        local: true,
                        label: Label::Ended,
                    });
                    if node.kind == (Kind::Escalate { end: true }) && self.escalation_clears {
                        clear(p, out);
                    }
                }
            }
            Kind::Terminate | Kind::ErrorEnd => {
                for &(_, p) in &marked {
                    clear(p, out);
                }
            }
            Kind::Parallel if join => {
                if marked.len() == node.incoming.len() {
                    // Its places are its own and nothing else disables it: local.
                    passes(marked.iter().map(|&(_, p)| p).collect(), true, out);
                }
            }
            Kind::Inclusive if join => {
                if !marked.is_empty() && self.or_join_enabled(v, m, &marked) {
                    // Once enabled it stays so until it fires: local.
                    passes(marked.iter().map(|&(_, p)| p).collect(), true, out);
                }
            }
            Kind::Complex if join => {
                let flag = self.fired[v].expect("a converging complex gateway has its place");
                if count(m, flag) > 0 {
                    // Fired already: later arrivals are consumed.
                    for &(_, p) in &marked {
                        out.push(Move {
                            node: v,
                            consume: vec![p],
                            produce: Vec::new(),
                            flag: None,
                            clear: false,
                            local: false,
                            label: Label::Pass,
                        });
                    }
                } else if self.complex_enabled(v, &marked) {
                    let before = out.len();
                    passes(marked.iter().map(|&(_, p)| p).collect(), false, out);
                    for mv in &mut out[before..] {
                        mv.flag = Some(flag);
                    }
                }
            }
            _ => {
                for &(_, p) in &marked {
                    match self.inside[v] {
                        Some(inside) => out.push(Move {
                            node: v,
                            consume: vec![p],
                            produce: vec![inside],
                            flag: None,
                            clear: false,
                            local: arrivals_local,
                            label: Label::Pass,
                        }),
                        None => passes(vec![p], arrivals_local, out),
                    }
                    if node.kind == (Kind::Escalate { end: false }) && self.escalation_clears {
                        clear(p, out);
                    }
                }
                if let Some(inside) = self.inside[v] {
                    let working = count(m, inside);
                    if working > 0 {
                        let before = out.len();
                        passes(vec![inside], true, out);
                        let interruptible = node.boundaries.iter().any(|&b| {
                            matches!(
                                model.nodes[b].kind,
                                Kind::Boundary {
                                    interrupting: true,
                                    ..
                                }
                            )
                        });
                        if interruptible {
                            for (mv, option) in out[before..].iter_mut().zip(&self.options[v]) {
                                mv.label = Label::Completed(option.clone());
                            }
                        }
                        for (&b, option) in node
                            .boundaries
                            .iter()
                            .flat_map(|b| self.options[*b].iter().map(move |o| (b, o)))
                        {
                            let produce = self.flows_to_places(option);
                            match self.spent[b] {
                                None => out.push(Move {
                                    node: v,
                                    consume: vec![inside],
                                    produce,
                                    flag: None,
                                    clear: false,
                                    local: true,
                                    label: Label::Boundary(b),
                                }),
                                Some(spent) if count(m, spent) < working => {
                                    let mut produce = produce;
                                    produce.push(spent);
                                    out.push(Move {
                                        node: v,
                                        consume: Vec::new(),
                                        produce,
                                        flag: None,
                                        clear: false,
                                        local: true,
                                        label: Label::Boundary(b),
                                    })
                                }
                                Some(_) => {}
                            }
                        }
                    }
                }
            }
        }
    }

    /// The OR-join rule: every incoming flow marked, or no token elsewhere in the
    /// scope can still reach an unmarked one.
    fn or_join_enabled(&self, v: usize, m: &Marking, marked: &[(usize, u32)]) -> bool {
        let incoming = &self.model.nodes[v].incoming;
        if marked.len() == incoming.len() {
            return true;
        }
        let all: u64 = if incoming.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << incoming.len()) - 1
        };
        let have: u64 = marked
            .iter()
            .filter(|(i, _)| *i < 64)
            .fold(0, |acc, (i, _)| acc | 1 << i);
        let missing = all & !have;
        let masks = self.reach[v].as_ref().expect("an OR-join has its masks");
        m.iter().all(|e| match self.position(e >> 8) {
            Some(at) if at != v => masks[at] & missing == 0,
            _ => true,
        })
    }

    /// Whether some activation triple holds on the marked incoming flows (its data
    /// condition, a free choice, may hold).
    fn complex_enabled(&self, v: usize, marked: &[(usize, u32)]) -> bool {
        let model = self.model;
        let node = &model.nodes[v];
        node.activation.iter().any(|triple| {
            let count = triple
                .count
                .as_ref()
                .and_then(|c| c.base10_parse::<usize>().ok())
                .unwrap_or(1);
            let required = triple.require.iter().all(|r| {
                marked
                    .iter()
                    .any(|&(i, _)| *model.nodes[model.flows[node.incoming[i]].source].id == *r)
            });
            marked.len() >= count && required
        })
    }

    /// `m` after `mv`; `None` when a place would exceed [`CAP`].
    pub fn apply(&self, m: &Marking, mv: &Move) -> Option<Marking> {
        if mv.clear {
            // The scope ends: only what records the past stays (nothing does).
            return Some(Marking::new());
        }
        let mut next = m.clone();
        for &p in &mv.consume {
            take(&mut next, p);
        }
        for &p in &mv.produce {
            if add(&mut next, p) > CAP {
                return None;
            }
        }
        if let Some(flag) = mv.flag {
            set(&mut next, flag, 1);
        }
        // A non-interrupting boundary fires at most once per activation of its host.
        let host = mv.node;
        for &b in &self.model.nodes[host].boundaries {
            if let (Some(spent), Some(inside)) = (self.spent[b], self.inside[host]) {
                let limit = count(&next, inside);
                if count(&next, spent) > limit {
                    set(&mut next, spent, limit);
                }
            }
        }
        Some(next)
    }
}

/// The sets of flows node `v` may take when it passes a token on, conditions being
/// free choices; and whether the choices were cut down.
fn out_options(model: &Model, v: usize) -> (Vec<Box<[usize]>>, bool) {
    let node = &model.nodes[v];
    let outs = &node.outgoing;
    if outs.is_empty() {
        return (vec![Box::new([])], false);
    }
    match node.kind {
        Kind::Exclusive | Kind::EventGate | Kind::InstantiatingGate { parallel: false } => {
            (outs.iter().map(|&f| Box::from([f])).collect(), false)
        }
        Kind::Parallel | Kind::InstantiatingGate { parallel: true } => {
            (vec![outs.clone().into_boxed_slice()], false)
        }
        _ => {
            let default = node.default;
            let plain: Vec<usize> = outs
                .iter()
                .copied()
                .filter(|&f| Some(f) != default && model.flows[f].condition.is_none())
                .collect();
            let conditional: Vec<usize> = outs
                .iter()
                .copied()
                .filter(|&f| Some(f) != default && model.flows[f].condition.is_some())
                .collect();
            let cut = conditional.len() > MAX_SUBSET_FLOWS;
            let subsets: Vec<Vec<usize>> = if cut {
                let mut s: Vec<Vec<usize>> = vec![Vec::new(), conditional.clone()];
                s.extend(conditional.iter().map(|&f| vec![f]));
                s
            } else {
                (0..1u32 << conditional.len())
                    .map(|mask| {
                        conditional
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| mask & (1 << i) != 0)
                            .map(|(_, &f)| f)
                            .collect()
                    })
                    .collect()
            };
            let mut options = Vec::new();
            for subset in subsets {
                let mut taken = plain.clone();
                taken.extend(subset);
                if taken.is_empty() {
                    match default {
                        Some(d) => taken.push(d),
                        // No flow taken and no default: the instance fails there.
                        None => continue,
                    }
                }
                taken.sort_unstable();
                options.push(taken.into_boxed_slice());
            }
            (options, cut)
        }
    }
}

/// Whether an escalation thrown in `scope` may be caught by an interrupting catcher,
/// which ends the scope: an interrupting escalation event sub-process in it or around
/// it, or an interrupting escalation boundary on a sub-process around it.
fn escalation_clears(model: &Model, scope: Option<usize>) -> bool {
    let mut s = scope;
    loop {
        let esp = model.members(s).any(|e| {
            model.nodes[e].kind == Kind::EventSubProcess
                && model.starts_in(Some(e)).iter().any(|&st| {
                    model.nodes[st].kind
                        == Kind::EventSubStart {
                            trigger: EventTrigger::Escalation,
                            interrupting: true,
                        }
                })
        });
        if esp {
            return true;
        }
        let Some(sub) = s else { return false };
        let boundary = model.nodes[sub].boundaries.iter().any(|&b| {
            model.nodes[b].kind
                == Kind::Boundary {
                    interrupting: true,
                    trigger: EventTrigger::Escalation,
                }
        });
        if boundary {
            return true;
        }
        s = model.nodes[sub].scope;
    }
}
