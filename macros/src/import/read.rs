//! A .bpmn file → the parts of one process the import needs: its flow elements (in
//! document order, sub-processes before their content), its sequence flows, and the
//! global messages, signals, errors and escalations they refer to. Anything outside
//! the BPMN model namespace (diagram interchange, `camunda:`, `zeebe:` and other
//! extensions) is skipped, never rejected.

use std::collections::HashMap;

use roxmltree::{Document, Node};

pub const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";

/// One flow element of the process.
pub struct Element {
    pub id: String,
    /// The BPMN element's local name: `serviceTask`, `startEvent`, ...
    pub tag: String,
    pub line: usize,
    /// The sub-process it is in (an index into [`Diagram::elements`]).
    pub scope: Option<usize>,
    /// Its event definitions (an event), in order.
    pub defs: Vec<Def>,
    /// `attachedToRef`, `cancelActivity`, `isInterrupting`, `triggeredByEvent`,
    /// `instantiate`, `eventGatewayType`, `messageRef`, `default`: as written.
    pub attrs: HashMap<String, String>,
    /// A complex gateway's `activationCondition` text.
    pub activation: Option<String>,
    /// A loop or multi-instance marker (`import/marker.rs` maps it).
    pub looped: Option<Marker>,
    /// A sub-process with nothing drawn inside (a collapsed one, as modelers save
    /// a placeholder).
    pub empty: bool,
}

/// A `standardLoopCharacteristics` or `multiInstanceLoopCharacteristics`, as written.
pub struct Marker {
    /// Multi-instance (else the standard loop).
    pub multi: bool,
    /// `isSequential` (multi-instance) or `testBefore` (standard loop) is `true`.
    pub flag: bool,
    /// `loopMaximum`.
    pub max: Option<String>,
    /// `loopCardinality`'s text.
    pub cardinality: Option<String>,
    /// `completionCondition`'s or `loopCondition`'s text (not run).
    pub condition: Option<String>,
    /// What the file says the instances are taken from, when it names a collection:
    /// `loopDataInputRef`, `inputDataItem`, a `collection` or `inputCollection`
    /// extension attribute, or thresh's own export (`each = ...` in the marker's
    /// documentation).
    pub collection: Option<String>,
}

/// An event definition, with what the file says of it.
#[derive(Clone, Debug)]
pub enum Def {
    Message(Option<String>),
    Signal(Option<String>),
    /// `timeDuration`, `timeCycle` or `timeDate`, and its text.
    Timer(Option<(String, String)>),
    Conditional,
    Link(Option<String>),
    Error(Option<String>),
    Escalation(Option<String>),
    Terminate,
    /// `compensateEventDefinition`, with its `activityRef`.
    Compensate(Option<String>),
    /// `cancelEventDefinition`.
    Cancel,
    /// A definition thresh has no event for.
    Other(String),
}

pub struct Flow {
    pub id: String,
    pub line: usize,
    pub source: String,
    pub target: String,
    /// A `conditionExpression`'s text (the diagram's, not run).
    pub condition: Option<String>,
    /// Its `name`, as written.
    pub name: Option<String>,
}

pub struct Diagram {
    pub elements: Vec<Element>,
    pub flows: Vec<Flow>,
    /// Associations, `(sourceRef, targetRef)`: a compensation boundary's handler.
    pub associations: Vec<(String, String)>,
    /// Where the file draws its elements and flows.
    pub drawing: super::di::Drawing,
}

/// Why a file gives no process.
pub enum Unreadable {
    /// Not XML at all, with the parser's words.
    NotXml(String),
    /// XML, but no `bpmn:definitions` root.
    NotBpmn(String),
    /// No process with flow elements.
    NoProcess,
    /// Several processes and no `process "Id"` to choose.
    Several(Vec<String>),
    /// `process "Id"` names none of them.
    NoSuch(String, Vec<String>),
}

/// Read the process `which` (or the only one) of `text`.
pub fn read(text: &str, which: Option<&str>) -> Result<Diagram, Unreadable> {
    let doc = Document::parse(text).map_err(|e| Unreadable::NotXml(e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != "definitions" || root.tag_name().namespace() != Some(BPMN) {
        let ns = root.tag_name().namespace().unwrap_or("no namespace");
        return Err(Unreadable::NotBpmn(format!(
            "its root element is `{}` ({ns})",
            root.tag_name().name()
        )));
    }
    let bpmn = |n: &Node, name: &str| n.is_element() && n.has_tag_name((BPMN, name));
    // Global elements by id: messages and signals by name, errors and escalations
    // by code.
    let mut globals: HashMap<String, String> = HashMap::new();
    for child in root.children().filter(|n| n.is_element()) {
        let value = match child.tag_name().name() {
            "message" | "signal" => child.attribute("name"),
            "error" => child.attribute("errorCode"),
            "escalation" => child.attribute("escalationCode"),
            _ => continue,
        };
        if let (Some(id), Some(value)) = (child.attribute("id"), value) {
            globals.insert(id.to_string(), value.to_string());
        }
    }
    let processes: Vec<Node> = root.children().filter(|n| bpmn(n, "process")).collect();
    let ids: Vec<String> = processes
        .iter()
        .map(|p| p.attribute("id").unwrap_or("").to_string())
        .collect();
    let process = match which {
        Some(which) => processes
            .iter()
            .find(|p| p.attribute("id") == Some(which))
            .ok_or_else(|| Unreadable::NoSuch(which.to_string(), ids.clone()))?,
        None => {
            // Pools with no flow elements (a collaboration's other participants)
            // do not count.
            let with_content: Vec<&Node> = processes
                .iter()
                .filter(|p| p.children().any(|c| is_flow_element(&c)))
                .collect();
            match with_content.as_slice() {
                [one] => *one,
                [] => return Err(Unreadable::NoProcess),
                _ => return Err(Unreadable::Several(ids)),
            }
        }
    };
    let mut diagram = Diagram {
        elements: Vec::new(),
        flows: Vec::new(),
        associations: Vec::new(),
        drawing: Default::default(),
    };
    walk(&doc, *process, None, &globals, &mut diagram);
    diagram.drawing = super::di::read(&doc);
    Ok(diagram)
}

fn is_flow_element(n: &Node) -> bool {
    n.is_element()
        && n.tag_name().namespace() == Some(BPMN)
        && !matches!(
            n.tag_name().name(),
            "documentation"
                | "extensionElements"
                | "laneSet"
                | "dataObject"
                | "dataObjectReference"
                | "dataStoreReference"
                | "textAnnotation"
                | "association"
                | "group"
                | "property"
                | "ioSpecification"
                | "incoming"
                | "outgoing"
                // A sub-process's own marker (read with it, `marker`).
                | "standardLoopCharacteristics"
                | "multiInstanceLoopCharacteristics"
        )
}

fn line(doc: &Document, n: &Node) -> usize {
    doc.text_pos_at(n.range().start).row as usize
}

/// The flow elements and flows of `parent` (the process or a sub-process).
fn walk(
    doc: &Document,
    parent: Node,
    scope: Option<usize>,
    globals: &HashMap<String, String>,
    diagram: &mut Diagram,
) {
    for child in parent
        .children()
        .filter(|c| c.is_element() && c.has_tag_name((BPMN, "association")))
    {
        if let (Some(source), Some(target)) =
            (child.attribute("sourceRef"), child.attribute("targetRef"))
        {
            diagram
                .associations
                .push((source.to_string(), target.to_string()));
        }
    }
    for child in parent.children().filter(is_flow_element) {
        let tag = child.tag_name().name().to_string();
        let id = child.attribute("id").unwrap_or("").to_string();
        if tag == "sequenceFlow" {
            let condition = child
                .children()
                .find(|c| c.has_tag_name((BPMN, "conditionExpression")))
                .map(|c| text_of(&c));
            diagram.flows.push(Flow {
                id,
                line: line(doc, &child),
                source: child.attribute("sourceRef").unwrap_or("").to_string(),
                target: child.attribute("targetRef").unwrap_or("").to_string(),
                condition,
                name: child.attribute("name").map(str::to_string),
            });
            continue;
        }
        let mut attrs = HashMap::new();
        for a in child.attributes().filter(|a| a.namespace().is_none()) {
            attrs.insert(a.name().to_string(), a.value().to_string());
        }
        // A receive task's message by its name.
        if let Some(name) = attrs.get("messageRef").and_then(|r| globals.get(r)) {
            attrs.insert("messageRef".to_string(), name.clone());
        }
        let bpmn_children = || {
            child
                .children()
                .filter(|c| c.is_element() && c.tag_name().namespace() == Some(BPMN))
        };
        let defs = bpmn_children()
            .filter(|c| c.tag_name().name().ends_with("EventDefinition"))
            .map(|c| definition(&c, globals))
            .collect();
        let activation = bpmn_children()
            .find(|c| c.tag_name().name() == "activationCondition")
            .map(|c| text_of(&c));
        let looped = bpmn_children()
            .find(|c| {
                matches!(
                    c.tag_name().name(),
                    "standardLoopCharacteristics" | "multiInstanceLoopCharacteristics"
                )
            })
            .map(|c| marker(&c));
        let index = diagram.elements.len();
        let container = tag == "subProcess" || tag == "transaction";
        let empty = container && !child.children().any(|c| is_flow_element(&c));
        diagram.elements.push(Element {
            id,
            tag,
            line: line(doc, &child),
            scope,
            defs,
            attrs,
            activation,
            looped,
            empty,
        });
        if container {
            walk(doc, child, Some(index), globals, diagram);
        }
    }
}

fn marker(n: &Node) -> Marker {
    let multi = n.tag_name().name() == "multiInstanceLoopCharacteristics";
    let child = |name: &str| {
        n.descendants()
            .find(|c| c.is_element() && c.tag_name().name() == name)
    };
    let text = |name: &str| child(name).map(|c| text_of(&c)).filter(|t| !t.is_empty());
    let flag = n.attribute(if multi { "isSequential" } else { "testBefore" }) == Some("true");
    // An extension's collection (`camunda:collection`, `zeebe:loopCharacteristics
    // inputCollection`), wherever it sits under the marker.
    let extension = n
        .descendants()
        .flat_map(|d| d.attributes())
        .find(|a| {
            a.namespace().is_some() && a.name() == "collection" || a.name() == "inputCollection"
        })
        .map(|a| a.value().to_string());
    let collection = text("loopDataInputRef")
        .or_else(|| {
            child("inputDataItem").map(|c| c.attribute("id").unwrap_or("inputDataItem").to_string())
        })
        .or(extension)
        .or_else(|| text("documentation").filter(|t| t.starts_with("each = ")));
    Marker {
        multi,
        flag,
        max: n.attribute("loopMaximum").map(str::to_string),
        cardinality: text("loopCardinality"),
        condition: text(if multi {
            "completionCondition"
        } else {
            "loopCondition"
        }),
        collection,
    }
}

/// `text` on one line, its runs of white space as one space (names and conditions
/// drawn on several lines, quoted in messages).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn text_of(n: &Node) -> String {
    n.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect::<String>()
        .trim()
        .to_string()
}

fn definition(n: &Node, globals: &HashMap<String, String>) -> Def {
    let global = |attr: &str| {
        n.attribute(attr)
            .map(|r| globals.get(r).cloned().unwrap_or_else(|| r.to_string()))
    };
    match n.tag_name().name() {
        "messageEventDefinition" => Def::Message(global("messageRef")),
        "signalEventDefinition" => Def::Signal(global("signalRef")),
        "errorEventDefinition" => Def::Error(global("errorRef")),
        "escalationEventDefinition" => Def::Escalation(global("escalationRef")),
        "terminateEventDefinition" => Def::Terminate,
        "conditionalEventDefinition" => Def::Conditional,
        "linkEventDefinition" => Def::Link(n.attribute("name").map(str::to_string)),
        "compensateEventDefinition" => {
            Def::Compensate(n.attribute("activityRef").map(str::to_string))
        }
        "cancelEventDefinition" => Def::Cancel,
        "timerEventDefinition" => Def::Timer(
            n.children()
                .find(|c| {
                    c.is_element()
                        && matches!(
                            c.tag_name().name(),
                            "timeDuration" | "timeCycle" | "timeDate"
                        )
                })
                .map(|c| (c.tag_name().name().to_string(), text_of(&c))),
        ),
        other => Def::Other(other.to_string()),
    }
}
