//! The choices of the nodes that pass a token on: which sets of flows a split or an
//! activity may take, conditions being free choices.

use super::MAX_SUBSET_FLOWS;
use crate::model::{Kind, Model};

/// The sets of flows node `v` may take when it passes a token on, conditions being
/// free choices; and whether the choices were cut down.
pub(super) fn out_options(model: &Model, v: usize) -> (Vec<Box<[usize]>>, bool) {
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
