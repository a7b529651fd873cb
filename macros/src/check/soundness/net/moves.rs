//! The moves each node family makes: starts, event sub-processes and boundaries none,
//! ends consuming the token (or clearing the scope), joins by their rule, every other
//! node passing it on, an activity with boundaries working inside and leaving through
//! one of them or its flows.

use super::{count, Label, Marking, Move, Net};
use crate::model::Kind;

impl<'m, 'a> Net<'m, 'a> {
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
            Kind::End
            | Kind::ThrowEnd(_)
            | Kind::Escalate { end: true }
            | Kind::Compensate { end: true } => {
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
            // A cancel end ends its transaction's run: what else runs there is
            // cancelled, and the transaction leaves through its cancel boundary.
            Kind::Terminate | Kind::ErrorEnd | Kind::CancelEnd => {
                for &(_, p) in &marked {
                    clear(p, out);
                }
            }
            Kind::Parallel if join => {
                if marked.len() == node.incoming.len() {
                    // Its places are its own and nothing else disables it: local.
                    self.passes(v, marked.iter().map(|&(_, p)| p).collect(), true, out);
                }
            }
            Kind::Inclusive if join => {
                if !marked.is_empty() && self.or_join_enabled(v, m, &marked) {
                    // Once enabled it stays so until it fires: local.
                    self.passes(v, marked.iter().map(|&(_, p)| p).collect(), true, out);
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
                    self.passes(v, marked.iter().map(|&(_, p)| p).collect(), false, out);
                    for mv in &mut out[before..] {
                        mv.flag = Some(flag);
                    }
                }
            }
            // A multi-merge in the synchronised net (see `Net::synchronised`): it waits
            // while another token can still reach it, then passes all it holds as one.
            _ if self.synchronised && self.is_multi_merge(v) => {
                let others_may_come = self.feeds[v].as_ref().is_some_and(|feeds| {
                    m.iter()
                        .any(|e| self.position(e >> 8).is_some_and(|at| at != v && feeds[at]))
                });
                if !marked.is_empty() && !others_may_come {
                    let consume: Vec<u32> = marked
                        .iter()
                        .flat_map(|&(_, p)| std::iter::repeat_n(p, count(m, p) as usize))
                        .collect();
                    // Nothing else can reach its places: local.
                    match self.inside[v] {
                        Some(inside) => out.push(Move {
                            node: v,
                            consume,
                            produce: vec![inside],
                            flag: None,
                            clear: false,
                            local: true,
                            label: Label::Pass,
                        }),
                        None => self.passes(v, consume, true, out),
                    }
                }
                self.working_moves(v, m, out);
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
                        None => self.passes(v, vec![p], arrivals_local, out),
                    }
                    if node.kind == (Kind::Escalate { end: false }) && self.escalation_clears {
                        clear(p, out);
                    }
                }
                self.working_moves(v, m, out);
            }
        }
    }

    /// An activity with boundaries at work: it leaves through its flows or one of its
    /// boundaries (a non-interrupting one forks, at most once per activation).
    fn working_moves(&self, v: usize, m: &Marking, out: &mut Vec<Move>) {
        let model = self.model;
        let node = &model.nodes[v];
        if let Some(inside) = self.inside[v] {
            let working = count(m, inside);
            if working > 0 {
                let before = out.len();
                self.passes(v, vec![inside], true, out);
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
                    .filter(|&&b| !super::off_paths(model, b))
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

    /// `v` passes the tokens it consumes on, one move per set of flows it may take.
    fn passes(&self, v: usize, consume: Vec<u32>, local: bool, out: &mut Vec<Move>) {
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
    }
}
