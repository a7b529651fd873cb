//! The rules of the joins that are more than a count: the OR-join and the converging
//! complex gateway.

use super::{Marking, Net};

impl<'m, 'a> Net<'m, 'a> {
    /// The OR-join rule: every incoming flow marked, or no token elsewhere in the
    /// scope can still reach an unmarked one.
    pub(super) fn or_join_enabled(&self, v: usize, m: &Marking, marked: &[(usize, u32)]) -> bool {
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
    pub(super) fn complex_enabled(&self, v: usize, marked: &[(usize, u32)]) -> bool {
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
}
