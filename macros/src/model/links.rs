//! Link throws paired with their catches.

use syn::Ident;

use super::ir::{Flow, Kind, Node};
use super::resolve::place;
use crate::ctx::Ctx;
use crate::parse::EventTrigger;
use crate::suggest;

/// Pair every link throw with the one link catch of its name, as a direct edge
/// (see ARCHITECTURE.md, "Events"): nothing is looked up by name at run time. A throw whose name has
/// no catch, a catch whose name has no throw, and a second catch of a name are errors
/// here; the elements they leave without a jump get the benefit of the doubt on their
/// paths, so the one error does not cascade. A written flow from a throw to its own
/// catch adds no edge (`check::link` reports the flow).
pub(super) fn edges<'a>(ctx: &Ctx, nodes: &mut [Node<'a>], written: &[Flow<'a>]) -> Vec<Flow<'a>> {
    // Every link throw and catch: (node, name, the name's literal).
    let links = |kind: Kind| -> Vec<(usize, String, syn::LitStr)> {
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
    let (throws, all_catches) = (
        links(Kind::Throw(EventTrigger::Link)),
        links(Kind::Catch(EventTrigger::Link)),
    );
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
    // The first catch of each name in each scope: the one its throws lead to
    // (every scope has its own link names).
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
                        file: None,
                    });
                }
            }
            None if unparsed_catch => nodes[n].loose_out = true,
            None if elsewhere.is_some() => {
                let (c, _, _) = elsewhere.expect("checked");
                let place = |n: usize| place(nodes, nodes[n].scope);
                // Whether the catch is nested in the throw's scope: the jump would
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
