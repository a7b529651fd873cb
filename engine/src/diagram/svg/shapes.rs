//! The BPMN symbols the SVG draws: events with their markers, gateways, activities
//! (tasks, sub-processes, call activities) with theirs.

use std::fmt::Write as _;

use super::*;

pub(super) fn event(s: &mut String, elem: &Elem, b: &Bounds, paint: &Paint) {
    let c = b.center();
    let r = b.width / 2;
    let (ink, fill) = (paint.ink, paint.fill);
    let dashed = match elem {
        Elem::Start {
            interrupting: false,
            ..
        }
        | Elem::Boundary {
            interrupting: false,
            ..
        } => " stroke-dasharray=\"5 3\"",
        _ => "",
    };
    let width = match elem {
        Elem::Start { .. } => 2.0,
        Elem::End { .. } => 4.0,
        _ => 1.5,
    };
    let _ = writeln!(
        s,
        "<circle cx=\"{}\" cy=\"{}\" r=\"{r}\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"{width}\"{dashed}/>",
        c.x, c.y
    );
    if matches!(
        elem,
        Elem::Catch(_) | Elem::Throw(_) | Elem::Boundary { .. }
    ) {
        let _ = writeln!(
            s,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.5\"{dashed}/>",
            c.x,
            c.y,
            r - 3
        );
    }
    let filled = matches!(elem, Elem::Throw(_) | Elem::End { .. });
    if let Some(def) = elem.event_def() {
        event_marker(s, def, c, filled, ink, fill);
    }
}

/// An event definition's marker, centred on `c`; `filled` for throwing events.
fn event_marker(s: &mut String, def: &EventDef, c: Point, filled: bool, ink: &str, fill: &str) {
    let (x, y) = (c.x, c.y);
    let (body, lines) = if filled { (ink, fill) } else { ("none", ink) };
    match def {
        EventDef::Message(_) => {
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"12\" fill=\"{}\" stroke=\"{ink}\" stroke-width=\"1.5\"/><polyline points=\"{},{} {},{} {},{}\" fill=\"none\" stroke=\"{lines}\" stroke-width=\"1.5\"/>",
                x - 9,
                y - 6,
                if filled { ink } else { fill },
                x - 9,
                y - 6,
                x,
                y + 1,
                x + 9,
                y - 6
            );
        }
        EventDef::Timer(_) => {
            let _ = writeln!(
                s,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"11\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"2\"/><path d=\"M{x},{} L{x},{y} L{},{}\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.5\"/>",
                y - 8,
                x + 6,
                y + 3
            );
        }
        EventDef::Signal(_) => {
            let _ = writeln!(
                s,
                "<polygon points=\"{x},{} {},{} {},{}\" fill=\"{body}\" stroke=\"{ink}\" stroke-width=\"1.5\"/>",
                y - 10,
                x + 10,
                y + 7,
                x - 10,
                y + 7
            );
        }
        EventDef::Conditional(_) => {
            let _ = write!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"18\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.5\"/>",
                x - 7,
                y - 9
            );
            for k in 0..4 {
                let ly = y - 5 + 3 * k + k / 2;
                let _ = write!(
                    s,
                    "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{ink}\"/>",
                    x - 4,
                    x + 4
                );
            }
            s.push('\n');
        }
        EventDef::Error(_) => {
            let _ = writeln!(
                s,
                "<path d=\"M{},{} L{},{} L{},{} L{},{} L{},{} L{},{} z\" fill=\"{body}\" stroke=\"{ink}\" stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
                x - 9,
                y + 9,
                x - 4,
                y - 8,
                x + 2,
                y + 1,
                x + 9,
                y - 9,
                x + 4,
                y + 8,
                x - 2,
                y - 1
            );
        }
        EventDef::Escalation(_) => {
            let _ = writeln!(
                s,
                "<path d=\"M{x},{} L{},{} L{x},{} L{},{} z\" fill=\"{body}\" stroke=\"{ink}\" stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
                y - 10,
                x + 8,
                y + 9,
                y + 2,
                x - 8,
                y + 9
            );
        }
        EventDef::Terminate => {
            let _ = writeln!(s, "<circle cx=\"{x}\" cy=\"{y}\" r=\"10\" fill=\"{ink}\"/>");
        }
        EventDef::Compensate(_) => {
            // Two triangles pointing back (rewind).
            let _ = writeln!(
                s,
                "<path d=\"M{},{y} L{x},{} L{x},{} z M{x},{y} L{},{} L{},{} z\" fill=\"{body}\" stroke=\"{ink}\" stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
                x - 9,
                y - 7,
                y + 7,
                x + 9,
                y - 7,
                x + 9,
                y + 7
            );
        }
        EventDef::Cancel => {
            let _ = writeln!(
                s,
                "<path d=\"M{},{} L{},{} M{},{} L{},{}\" stroke=\"{ink}\" stroke-width=\"3\"/>",
                x - 7,
                y - 7,
                x + 7,
                y + 7,
                x + 7,
                y - 7,
                x - 7,
                y + 7
            );
        }
        EventDef::Link(_) => {
            let _ = writeln!(
                s,
                "<path d=\"M{},{} L{},{} L{},{} L{},{y} L{},{} L{},{} L{},{} z\" fill=\"{body}\" stroke=\"{ink}\" stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
                x - 9,
                y - 4,
                x + 1,
                y - 4,
                x + 1,
                y - 9,
                x + 10,
                x + 1,
                y + 9,
                x + 1,
                y + 4,
                x - 9,
                y + 4
            );
        }
    }
}

pub(super) fn gateway(s: &mut String, g: Gateway, b: &Bounds, paint: &Paint) {
    let c = b.center();
    let (x, y, r) = (c.x, c.y, b.width / 2);
    let (ink, fill) = (paint.ink, paint.fill);
    let width = if paint.class == "waiting" { 3 } else { 2 };
    let _ = writeln!(
        s,
        "<polygon points=\"{x},{} {},{y} {x},{} {},{y}\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"{width}\" stroke-linejoin=\"round\"/>",
        y - r,
        x + r,
        y + r,
        x - r
    );
    let line = |s: &mut String, x1: i32, y1: i32, x2: i32, y2: i32, w: f32| {
        let _ = write!(
            s,
            "<line x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" stroke=\"{ink}\" stroke-width=\"{w}\" stroke-linecap=\"round\"/>"
        );
    };
    match g {
        Gateway::Exclusive => {
            line(s, x - 8, y - 8, x + 8, y + 8, 4.0);
            line(s, x - 8, y + 8, x + 8, y - 8, 4.0);
        }
        Gateway::Parallel => {
            line(s, x, y - 12, x, y + 12, 4.0);
            line(s, x - 12, y, x + 12, y, 4.0);
        }
        Gateway::Inclusive => {
            let _ = write!(s, "<circle cx=\"{x}\" cy=\"{y}\" r=\"11\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"3\"/>");
        }
        Gateway::Complex => {
            line(s, x, y - 12, x, y + 12, 3.5);
            line(s, x - 12, y, x + 12, y, 3.5);
            line(s, x - 8, y - 8, x + 8, y + 8, 3.5);
            line(s, x - 8, y + 8, x + 8, y - 8, 3.5);
        }
        Gateway::EventBased {
            instantiate,
            parallel,
        } => {
            let _ = write!(s, "<circle cx=\"{x}\" cy=\"{y}\" r=\"14\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.2\"/>");
            if !instantiate {
                let _ = write!(s, "<circle cx=\"{x}\" cy=\"{y}\" r=\"11\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.2\"/>");
            }
            if parallel {
                line(s, x, y - 9, x, y + 9, 3.0);
                line(s, x - 9, y, x + 9, y, 3.0);
            } else {
                // A pentagon.
                let pts: Vec<String> = (0..5)
                    .map(|k| {
                        let a = -std::f64::consts::FRAC_PI_2
                            + k as f64 * 2.0 * std::f64::consts::PI / 5.0;
                        format!(
                            "{:.1},{:.1}",
                            x as f64 + 7.0 * a.cos(),
                            y as f64 + 7.0 * a.sin()
                        )
                    })
                    .collect();
                let _ = write!(
                    s,
                    "<polygon points=\"{}\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.4\" stroke-linejoin=\"round\"/>",
                    pts.join(" ")
                );
            }
        }
    }
    s.push('\n');
}

pub(super) fn activity(s: &mut String, model: &Model, shape: &Shape, elem: &Elem, paint: &Paint) {
    let b = shape.bounds;
    let (ink, fill) = (paint.ink, paint.fill);
    // A call activity's border is thick (BPMN 2.0, 10.3.5), also when painted.
    let width = match (elem, paint.class == "waiting" || paint.class == "failed") {
        (Elem::CallActivity(_), _) => 4,
        (_, true) => 3,
        (_, false) => 2,
    };
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"10\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"{width}\"/>",
        b.x, b.y, b.width, b.height
    );
    let (mx, my) = (b.x + 8, b.y + 8);
    // The task type the diagram or the DSL's `kind(..)` gave draws its own icon; a
    // plain `task` (a manual one made of a `task` element, say) draws none.
    let tag = model.nodes.get(shape.node).map_or("", |n| n.tag.as_str());
    let by_tag = matches!(
        tag,
        "sendTask" | "manualTask" | "scriptTask" | "businessRuleTask" | "task"
    );
    match tag {
        "sendTask" => send_icon(s, mx, my, ink),
        "manualTask" => manual_icon(s, mx, my, ink, fill),
        "scriptTask" => script_icon(s, mx, my, ink, fill),
        "businessRuleTask" => rule_icon(s, mx, my, ink, fill),
        _ => {}
    }
    match elem {
        _ if by_tag => {}
        Elem::UserTask => {
            // A person: head and shoulders.
            let _ = writeln!(
                s,
                "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.3\"/><path d=\"M{},{} q0,-8 8,-8 q8,0 8,8 z\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.3\"/>",
                mx + 8,
                my + 5,
                mx,
                my + 18
            );
        }
        Elem::ReceiveTask(_) => {
            let _ = writeln!(
                s,
                "<rect x=\"{mx}\" y=\"{}\" width=\"18\" height=\"12\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.3\"/><polyline points=\"{mx},{} {},{} {},{}\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.3\"/>",
                my + 2,
                my + 2,
                mx + 9,
                my + 9,
                mx + 18,
                my + 2
            );
        }
        Elem::ServiceTask | Elem::CompensationTask => {
            // A gear: a ring with teeth.
            let _ = writeln!(
                s,
                "<circle cx=\"{}\" cy=\"{}\" r=\"6\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"3.5\" stroke-dasharray=\"2.4 2.3\"/><circle cx=\"{}\" cy=\"{}\" r=\"4.2\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.2\"/>",
                mx + 7,
                my + 7,
                mx + 7,
                my + 7
            );
        }
        _ => {}
    }
    if let Some(mark) = model.nodes.get(shape.node).and_then(|n| n.looping.as_ref()) {
        loop_marker(s, b, mark, ink);
    }
    // The label stays inside the box and under the icon: as many lines as fit below
    // it, the last cut with an ellipsis when there are more.
    let icon = match tag {
        "task" => false,
        "sendTask" | "manualTask" | "scriptTask" | "businessRuleTask" => true,
        _ => matches!(
            elem,
            Elem::UserTask | Elem::ReceiveTask(_) | Elem::ServiceTask | Elem::CompensationTask
        ),
    };
    let ceiling = if icon { b.y + 28 } else { b.y + 4 };
    let room = ((b.y + b.height - 4 - ceiling) / 14).max(1) as usize;
    let lines = fit(wrap(&model.label(shape.node), TASK_CHARS), room, TASK_CHARS);
    let c = b.center();
    let top = (c.y - (lines.len() as i32 * 14) / 2).max(ceiling) + 11;
    for (k, line) in lines.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{}</text>",
            c.x,
            top + 14 * k as i32,
            escape(line)
        );
    }
}

/// `lines` cut to `room` lines of at most `chars` characters, an ellipsis marking
/// what was cut.
fn fit(mut lines: Vec<String>, room: usize, chars: usize) -> Vec<String> {
    let cut = lines.len() > room;
    lines.truncate(room);
    for (k, line) in lines.iter_mut().enumerate() {
        let last = k + 1 == room;
        if line.chars().count() > chars || (cut && last) {
            let keep: String = line.chars().take(chars.saturating_sub(1)).collect();
            *line = format!("{}…", keep.trim_end());
        }
    }
    lines
}

/// A send task's icon: a filled envelope.
fn send_icon(s: &mut String, mx: i32, my: i32, ink: &str) {
    let _ = writeln!(
        s,
        "<rect x=\"{mx}\" y=\"{}\" width=\"18\" height=\"12\" fill=\"{ink}\" stroke=\"{ink}\" stroke-width=\"1.3\"/><polyline points=\"{mx},{} {},{} {},{}\" fill=\"none\" stroke=\"white\" stroke-width=\"1.3\"/>",
        my + 2,
        my + 2,
        mx + 9,
        my + 9,
        mx + 18,
        my + 2
    );
}

/// A manual task's icon: an open hand, palm and four fingers.
fn manual_icon(s: &mut String, mx: i32, my: i32, ink: &str, fill: &str) {
    let _ = writeln!(
        s,
        "<path d=\"M{},{} v-7 q0,-2 2,-2 h12 q1.5,0 1.5,1.5 q0,1.5 -1.5,1.5 h-5 m5,0 h1 q1.5,0 1.5,1.5 q0,1.5 -1.5,1.5 h-1 m1,0 q1.5,0 1.5,1.5 q0,1.5 -1.5,1.5 h-1 m1,0 q1,0 1,1.3 q0,1.2 -1,1.2 h-10 q-2,0 -2,-2 z\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.2\" stroke-linejoin=\"round\"/>",
        mx,
        my + 14
    );
}

/// A script task's icon: a scroll with lines of text.
fn script_icon(s: &mut String, mx: i32, my: i32, ink: &str, fill: &str) {
    let _ = writeln!(
        s,
        "<path d=\"M{},{} h11 c-4,4 4,8 0,14 h-11 c4,-6 -4,-10 0,-14 z\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.2\"/><path d=\"M{},{} h6 M{},{} h6 M{},{} h6\" stroke=\"{ink}\" stroke-width=\"1\"/>",
        mx + 3,
        my,
        mx + 5,
        my + 4,
        mx + 6,
        my + 7,
        mx + 6,
        my + 10
    );
}

/// A business rule task's icon: a table with a header row.
fn rule_icon(s: &mut String, mx: i32, my: i32, ink: &str, fill: &str) {
    let _ = writeln!(
        s,
        "<rect x=\"{mx}\" y=\"{my}\" width=\"18\" height=\"13\" fill=\"{fill}\" stroke=\"{ink}\" stroke-width=\"1.2\"/><rect x=\"{mx}\" y=\"{my}\" width=\"18\" height=\"4\" fill=\"{ink}\"/><path d=\"M{mx},{} h18 M{},{} v9\" stroke=\"{ink}\" stroke-width=\"1\"/>",
        my + 8,
        mx + 6,
        my + 4
    );
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn a_long_label_is_cut_to_its_box() {
        let lines = vec![
            "Check the".to_string(),
            "customer's".to_string(),
            "credit".to_string(),
            "history".to_string(),
        ];
        assert_eq!(fit(lines.clone(), 4, 14), lines);
        assert_eq!(fit(lines, 3, 14), ["Check the", "customer's", "credit…"]);
        assert_eq!(
            fit(vec!["Supercalifragilistic".into()], 3, 14),
            ["Supercalifrag…"]
        );
    }
}
