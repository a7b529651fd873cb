//! The reachable markings of one scope's net, breadth first, within a budget.
//!
//! Reduction: in a marking where some node's moves are all local (a token at a node
//! with one way in, or inside an activity — its place is consumed by that node
//! alone, and taking it disables no other node's move), only that node's moves are
//! followed. Such a set of moves is stubborn (Valmari): every dead marking — every
//! deadlock — is still found, and since every cycle of a scope passes a merge (a
//! node with two ways in, never local), no token is passed over for ever, so every
//! node that fires on some run fires in the reduced exploration too. Merges,
//! joins and what ends a scope move only when nothing local can: tokens meeting at a
//! merge are then seen there at once whenever they can be (what lack of
//! synchronisation looks for). This turns the product of parallel branches into
//! their sum: 20 parallel tasks are 40-odd markings, not a million.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use super::net::{Label, Marking, Move, Net, Place};
use crate::model::Kind;

/// The markings explored per scope before the analysis gives up on completeness.
pub const MAX_STATES: usize = 100_000;

pub struct State {
    /// The state this one was reached from (`u32::MAX` for an initial one).
    pub parent: u32,
    /// The node that moved, and what it did.
    pub node: u32,
    pub label: Label,
}

pub struct Exploration {
    pub markings: Vec<Marking>,
    pub states: Vec<State>,
    /// Every reachable marking was explored: no budget ran out, no place went over
    /// its cap, no inclusive split was cut down.
    pub complete: bool,
    /// Per model node, whether it fired on some explored run.
    pub fired: Vec<bool>,
    /// Markings where tokens remain and nothing can move, in the order found.
    pub dead: Vec<u32>,
    /// Per merge not marked `multi`, the first marking where two tokens meet at it,
    /// reached on a run where no token was doubled before but at multi-merges (empty
    /// unless the exploration looked for lack of synchronisation).
    pub doubled: Vec<(usize, u32)>,
}

impl Exploration {
    /// The states from an initial one to `i`, in order.
    pub fn path(&self, mut i: u32) -> Vec<u32> {
        let mut path = vec![i];
        while self.states[i as usize].parent != u32::MAX {
            i = self.states[i as usize].parent;
            path.push(i);
        }
        path.reverse();
        path
    }
}

/// Whether `v` merges tokens without synchronising them: an exclusive gateway, or
/// any other element (not a join, not an end) with two or more incoming flows.
pub fn is_merge(net: &Net, v: usize) -> bool {
    let node = &net.model.nodes[v];
    node.incoming.len() >= 2
        && !matches!(node.kind, Kind::Parallel | Kind::Inclusive | Kind::Complex)
        && !node.kind.is_end()
}

/// Explores `net`'s reachable markings. With `lacks`, it also looks for lack of
/// synchronisation: a marking is then a state once reached on a run with no
/// undeclared doubling before it and once more on one with, so what is reported does
/// not depend on which run the breadth-first order happened to find first.
pub fn run(net: &Net, budget: usize, lacks: bool) -> Exploration {
    let model = net.model;
    let mut ex = Exploration {
        markings: Vec::new(),
        states: Vec::new(),
        complete: !net.truncated,
        fired: vec![false; model.nodes.len()],
        dead: Vec::new(),
        doubled: Vec::new(),
    };
    // The merges a doubling there is nobody's declaration at.
    let mut undeclared = vec![false; model.nodes.len()];
    for &v in &net.nodes {
        undeclared[v] = is_merge(net, v) && !net.is_multi_merge(v);
    }
    let mut reported = vec![false; model.nodes.len()];
    // Per state: an undeclared doubling happened on the way to it or at it (later
    // meetings are its echo). A multi-merge's doubling is declared: it taints nothing
    // (in the synchronised net its tokens leave it as one).
    let mut tainted: Vec<bool> = Vec::new();
    // A state per marking and whether it was reached on a run with no undeclared
    // doubling before it (without `lacks`, every run is).
    let mut index: HashMap<(Marking, bool), u32, BuildHasherDefault<Fx>> = HashMap::default();
    let mut queue = VecDeque::new();

    // The undeclared merges where two tokens wait at once in `m`, into `out`; whether
    // `m` doubles a token anywhere undeclared (such a merge, or two tokens on one flow
    // into anything but a multi-merge).
    let doubled_at = |m: &Marking, out: &mut Vec<usize>| {
        out.clear();
        if !lacks {
            return false;
        }
        let mut at: Vec<(usize, u32)> = m
            .iter()
            .filter_map(|e| match net.places[(e >> 8) as usize] {
                Place::Flow(f) if undeclared[model.flows[f].target] => {
                    Some((model.flows[f].target, e & 0xff))
                }
                _ => None,
            })
            .collect();
        at.sort_unstable();
        for (k, &(v, _)) in at.iter().enumerate() {
            if k > 0 && at[k - 1].0 == v {
                continue;
            }
            let tokens: u32 = at[k..]
                .iter()
                .take_while(|(w, _)| *w == v)
                .map(|(_, n)| n)
                .sum();
            if tokens >= 2 {
                out.push(v);
            }
        }
        let flow_doubled = m.iter().any(|e| {
            e & 0xff >= 2
                && matches!(net.places[(e >> 8) as usize],
                    Place::Flow(f) if !net.is_multi_merge(model.flows[f].target))
        });
        !out.is_empty() || flow_doubled
    };
    let mut meeting = Vec::new();

    for (m, start, label) in net.initial() {
        if index.contains_key(&(m.clone(), true)) {
            continue;
        }
        ex.fired[start] = true;
        index.insert((m.clone(), true), ex.states.len() as u32);
        tainted.push(doubled_at(&m, &mut meeting));
        ex.markings.push(m);
        ex.states.push(State {
            parent: u32::MAX,
            node: start as u32,
            label,
        });
        queue.push_back((ex.states.len() - 1) as u32);
    }

    let mut moves: Vec<Move> = Vec::new();
    'explore: while let Some(i) = queue.pop_front() {
        let m = ex.markings[i as usize].clone();
        net.moves(&m, &mut moves);
        if moves.is_empty() {
            if net.has_tokens(&m) {
                ex.dead.push(i);
            }
            continue;
        }
        // The first node whose moves are all local, alone; else every move.
        let mut chosen = 0..moves.len();
        let mut start = 0;
        while start < moves.len() {
            let v = moves[start].node;
            let end = start + moves[start..].iter().take_while(|mv| mv.node == v).count();
            if moves[start..end].iter().all(|mv| mv.local) {
                chosen = start..end;
                break;
            }
            start = end;
        }
        for mv in &moves[chosen] {
            let Some(next) = net.apply(&m, mv) else {
                ex.complete = false;
                continue;
            };
            ex.fired[mv.node] = true;
            if let Label::Boundary(b) = mv.label {
                ex.fired[b] = true;
            }
            // Reached on a run with no undeclared doubling before `next`?
            let clean = !tainted[i as usize];
            let key = (next, clean);
            if index.contains_key(&key) {
                continue;
            }
            if ex.states.len() >= budget {
                ex.complete = false;
                break 'explore;
            }
            let j = ex.states.len() as u32;
            let doubled = doubled_at(&key.0, &mut meeting);
            if clean {
                for &v in &meeting {
                    if !std::mem::replace(&mut reported[v], true) {
                        ex.doubled.push((v, j));
                    }
                }
            }
            tainted.push(!clean || doubled);
            ex.markings.push(key.0.clone());
            index.insert(key, j);
            ex.states.push(State {
                parent: i,
                node: mv.node as u32,
                label: mv.label.clone(),
            });
            queue.push_back(j);
        }
    }
    ex
}

/// FxHash (rustc's): markings are short runs of `u32`, hashed millions of times.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
