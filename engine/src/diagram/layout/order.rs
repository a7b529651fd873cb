//! Step 2: the order within ranks. A flow spanning several ranks gets a dummy slot in
//! each rank between; the walk's order is improved by barycenter sweeps, keeping the
//! order with the fewest crossings.

use std::collections::BTreeMap;

use super::rank::Ranks;

/// One slot of a rank: a node, or a long flow passing through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Slot {
    Node(usize),
    /// The `k`-th dummy of forward edge `e`.
    Dummy(usize),
}

/// Neighbours of a slot in the next or the previous rank, each with a bias.
pub(super) type Neighbours = BTreeMap<(usize, Slot), Vec<(Slot, f64)>>;

/// The slots of every rank, in order, and how they connect.
pub(super) struct Order {
    pub layers: Vec<Vec<Slot>>,
    /// `(rank, edge)` of each dummy.
    pub dummies: Vec<(usize, usize)>,
    /// The `(rank, slot)` chain of every forward edge (empty for a back edge).
    pub chains: Vec<Vec<(usize, Slot)>>,
    pub preds: Neighbours,
    pub succs: Neighbours,
}

/// Order the slots of the ranked members.
pub(super) fn order(r: &Ranks, members: &[usize]) -> Order {
    let Ranks {
        redges,
        discovery,
        rank,
        ranks,
        ..
    } = r;
    let (m, ranks) = (members.len(), *ranks);
    // 2. Slots: nodes and dummies, and the chain of slots of every forward edge.
    let mut layers: Vec<Vec<Slot>> = vec![Vec::new(); ranks];
    let mut keys: Vec<Vec<f64>> = vec![Vec::new(); ranks];
    for i in 0..m {
        layers[rank[i]].push(Slot::Node(i));
        keys[rank[i]].push(discovery[i] as f64);
    }
    let mut dummies: Vec<(usize, usize)> = Vec::new(); // (rank, edge)
    let mut chains: Vec<Vec<(usize, Slot)>> = vec![Vec::new(); redges.len()];
    for (e, re) in redges.iter().enumerate() {
        if re.back {
            continue;
        }
        let (r0, r1) = (rank[re.from], rank[re.to]);
        let mut chain = vec![(r0, Slot::Node(re.from))];
        for r in r0 + 1..r1 {
            let d = dummies.len();
            dummies.push((r, e));
            layers[r].push(Slot::Dummy(d));
            keys[r].push(discovery[re.from] as f64 + 0.5);
            chain.push((r, Slot::Dummy(d)));
        }
        chain.push((r1, Slot::Node(re.to)));
        chains[e] = chain;
    }
    for (layer, key) in layers.iter_mut().zip(&keys) {
        let mut paired: Vec<(f64, Slot)> = key.iter().copied().zip(layer.iter().copied()).collect();
        paired.sort_by(|a, b| a.0.total_cmp(&b.0));
        *layer = paired.into_iter().map(|(_, s)| s).collect();
    }
    // Neighbours of each slot, with a bias that keeps a boundary's targets below
    // its host's other successors.
    let mut preds: BTreeMap<(usize, Slot), Vec<(Slot, f64)>> = BTreeMap::new();
    let mut succs: BTreeMap<(usize, Slot), Vec<(Slot, f64)>> = BTreeMap::new();
    for (e, chain) in chains.iter().enumerate() {
        let bias = if redges[e].source != members[redges[e].from] {
            0.5
        } else {
            0.0
        };
        for w in chain.windows(2) {
            let ((ra, a), (rb, b)) = (w[0], w[1]);
            preds.entry((rb, b)).or_default().push((a, bias));
            succs.entry((ra, a)).or_default().push((b, -bias));
        }
    }
    let pos_of = |layers: &Vec<Vec<Slot>>, r: usize, s: Slot| -> f64 {
        layers[r].iter().position(|&x| x == s).unwrap_or(0) as f64
    };
    let crossings = |layers: &Vec<Vec<Slot>>| -> usize {
        let mut total = 0;
        for r in 0..ranks.saturating_sub(1) {
            let mut pairs: Vec<(f64, f64)> = Vec::new();
            for (p, &s) in layers[r].iter().enumerate() {
                for &(t, _) in succs.get(&(r, s)).map_or(&[][..], |v| &v[..]) {
                    pairs.push((p as f64, pos_of(layers, r + 1, t)));
                }
            }
            for (i, a) in pairs.iter().enumerate() {
                for b in &pairs[i + 1..] {
                    if (a.0 - b.0) * (a.1 - b.1) < 0.0 {
                        total += 1;
                    }
                }
            }
        }
        total
    };
    let mut best = layers.clone();
    let mut best_cross = crossings(&layers);
    for sweep in 0..8 {
        let down = sweep % 2 == 0;
        let rs: Vec<usize> = if down {
            (1..ranks).collect()
        } else {
            (0..ranks.saturating_sub(1)).rev().collect()
        };
        for r in rs {
            let adj = if down { r - 1 } else { r + 1 };
            let mut keyed: Vec<(f64, usize, Slot)> = layers[r]
                .iter()
                .enumerate()
                .map(|(p, &s)| {
                    let nbrs = if down {
                        preds.get(&(r, s))
                    } else {
                        succs.get(&(r, s))
                    };
                    let key = match nbrs {
                        Some(v) if !v.is_empty() => {
                            v.iter()
                                .map(|&(t, b)| pos_of(&layers, adj, t) + b)
                                .sum::<f64>()
                                / v.len() as f64
                        }
                        _ => p as f64,
                    };
                    (key, p, s)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            layers[r] = keyed.into_iter().map(|(_, _, s)| s).collect();
        }
        let c = crossings(&layers);
        if c < best_cross {
            best_cross = c;
            best = layers.clone();
        }
    }
    let layers = best;
    Order {
        layers,
        dummies,
        chains,
        preds,
        succs,
    }
}
