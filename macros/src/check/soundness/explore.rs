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
//! their sum: 20 parallel tasks are 40-odd markings, not a million. (A multi-merge of
//! the synchronised net is local once no other token can reach it, and waits before.)

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use super::net::{Label, Marking, Move, Net, Place};
use crate::model::{Direction, Edges, Kind};

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
    /// reached on a run with no undeclared doubling before that a token could reach it
    /// from (empty unless the exploration looked for lack of synchronisation).
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
/// synchronisation: two tokens at a merge not marked `multi` at once, on a run where
/// no doubling nobody declared came before from which a token could reach that
/// merge (a later meeting downstream of a doubling is its echo; one elsewhere is a
/// fault of its own). A state is then a marking with the region such doublings on its
/// run reach (see [`Echoes`]), so what is reported depends neither on which run the
/// breadth-first order found first nor on which branch the reduction moved first.
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
    let mut echoes = Echoes::new(net);
    // Per state, the region its run's undeclared doublings reach (an id in `echoes`).
    // A multi-merge's doubling is declared: it adds nothing (in the synchronised net
    // its tokens leave it as one).
    let mut region: Vec<u32> = Vec::new();
    let mut index: HashMap<(Marking, u32), u32, BuildHasherDefault<Fx>> = HashMap::default();
    let mut queue = VecDeque::new();

    // Where `m` doubles a token nobody declared, into `out`: the undeclared merges
    // two tokens wait at, then the targets of flows holding two tokens (but
    // multi-merges). Returns how many of `out` are merges.
    let doubled_at = |m: &Marking, out: &mut Vec<usize>| {
        out.clear();
        if !lacks {
            return 0;
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
        let merges = out.len();
        for e in m {
            if let Place::Flow(f) = net.places[(e >> 8) as usize] {
                let target = model.flows[f].target;
                if e & 0xff >= 2 && !net.is_multi_merge(target) {
                    out.push(target);
                }
            }
        }
        merges
    };
    let mut meeting = Vec::new();

    for (m, start, label) in net.initial() {
        if index.contains_key(&(m.clone(), Echoes::NONE)) {
            continue;
        }
        ex.fired[start] = true;
        index.insert((m.clone(), Echoes::NONE), ex.states.len() as u32);
        doubled_at(&m, &mut meeting);
        region.push(echoes.add(Echoes::NONE, &meeting));
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
        let from = region[i as usize];
        for mv in &moves[chosen] {
            let Some(next) = net.apply(&m, mv) else {
                ex.complete = false;
                continue;
            };
            ex.fired[mv.node] = true;
            if let Label::Boundary(b) = mv.label {
                ex.fired[b] = true;
            }
            let key = (next, from);
            if index.contains_key(&key) {
                continue;
            }
            if ex.states.len() >= budget {
                ex.complete = false;
                break 'explore;
            }
            let j = ex.states.len() as u32;
            let merges = doubled_at(&key.0, &mut meeting);
            for &v in &meeting[..merges] {
                if !echoes.reaches(from, v) && !std::mem::replace(&mut reported[v], true) {
                    ex.doubled.push((v, j));
                }
            }
            region.push(echoes.add(from, &meeting));
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

/// The regions undeclared doublings reach, interned: each a set of nodes (those
/// downstream of a doubling, the doubling's own node included), by id;
/// [`Echoes::NONE`] is the empty one, a clean run's.
struct Echoes<'n, 'm, 'a> {
    net: &'n Net<'m, 'a>,
    regions: Vec<Vec<u64>>,
    ids: HashMap<Vec<u64>, u32, BuildHasherDefault<Fx>>,
    /// Per node, the region downstream of it, made on first need.
    downstream: Vec<Option<Vec<u64>>>,
}

impl<'n, 'm, 'a> Echoes<'n, 'm, 'a> {
    const NONE: u32 = 0;

    fn new(net: &'n Net<'m, 'a>) -> Self {
        let n = net.model.nodes.len();
        let empty = vec![0u64; n.div_ceil(64)];
        let mut ids = HashMap::default();
        ids.insert(empty.clone(), Self::NONE);
        Echoes {
            net,
            regions: vec![empty],
            ids,
            downstream: vec![None; n],
        }
    }

    fn reaches(&self, region: u32, v: usize) -> bool {
        self.regions[region as usize][v / 64] >> (v % 64) & 1 == 1
    }

    /// `region` with what is downstream of each of `at`.
    fn add(&mut self, region: u32, at: &[usize]) -> u32 {
        if at.iter().all(|&v| self.reaches(region, v)) {
            return region;
        }
        let mut bits = self.regions[region as usize].clone();
        for &v in at {
            let net = self.net;
            let down = self.downstream[v].get_or_insert_with(|| {
                let seen = net
                    .model
                    .reachable(&[v], Direction::Forward, None, Edges::WithinScope);
                let mut bits = vec![0u64; seen.len().div_ceil(64)];
                for (w, _) in seen.iter().enumerate().filter(|(_, s)| **s) {
                    bits[w / 64] |= 1 << (w % 64);
                }
                bits[v / 64] |= 1 << (v % 64);
                bits
            });
            for (b, d) in bits.iter_mut().zip(down.iter()) {
                *b |= d;
            }
        }
        let next = self.regions.len() as u32;
        *self.ids.entry(bits.clone()).or_insert_with(|| {
            self.regions.push(bits);
            next
        })
    }
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
