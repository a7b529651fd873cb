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

mod choices;
mod escalation;
mod joins;
mod moves;

use crate::model::{Direction, Edges, Kind, Marker, Model};
use choices::out_options;
use escalation::escalation_clears;

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
    /// The net lack of synchronisation is looked for in, when the scope has merges
    /// marked `multi`: each of them waits until no other token can reach it and passes
    /// the tokens it holds on as one, so what follows it runs as if its doubling (the
    /// one the user declared) had not happened, and only doublings nobody declared are
    /// left to be seen (ARCHITECTURE.md, "Soundness").
    pub synchronised: bool,
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
            // A compensation handler and its boundary are off the token game: the
            // handler runs when compensation is thrown, beside the thrower, which
            // waits for it (the thrower's moves stand for both).
            nodes: model
                .members(scope)
                .filter(|&v| !off_paths(model, v))
                .collect(),
            escalation_clears: escalation_clears(model, scope),
            truncated: false,
            synchronised: false,
        };
        for (f, flow) in model.flows.iter().enumerate() {
            if model.nodes[flow.target].scope == scope {
                net.flow_place[f] = Some(net.place(Place::Flow(f)));
            }
        }
        for i in 0..net.nodes.len() {
            let v = net.nodes[i];
            let node = &model.nodes[v];
            if node.boundaries.iter().any(|&b| !off_paths(model, b)) {
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

    /// Whether `v` is a merge (see `explore::is_merge`) marked `multi`.
    pub fn is_multi_merge(&self, v: usize) -> bool {
        self.feeds[v].is_some() && matches!(self.model.nodes[v].marker, Some(Marker::Multi))
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

/// A compensation handler or a compensation boundary: joined by an association,
/// never by flows, so no token of the scope's runs is ever at one.
pub fn off_paths(model: &Model, v: usize) -> bool {
    let node = &model.nodes[v];
    node.for_compensation || crate::check::compensation::is_compensation_boundary(node.kind)
}
