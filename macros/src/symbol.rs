//! The DSL's keywords, in one place (after serde_derive's `internals/symbol.rs`).
//! Plain `&str` constants: an `Ident` compares equal to them, and a `match` on a
//! keyword's text can name them as patterns.

// Element keywords.
pub const START: &str = "start";
pub const END: &str = "end";
pub const TASK: &str = "task";
pub const EXCLUSIVE: &str = "exclusive";
pub const PARALLEL: &str = "parallel";
pub const INCLUSIVE: &str = "inclusive";
pub const COMPLEX: &str = "complex";
pub const EVENT_BASED: &str = "event_based";
pub const USER: &str = "user";
pub const RECEIVE: &str = "receive";
pub const CATCH: &str = "catch";
pub const THROW: &str = "throw";
pub const BOUNDARY: &str = "boundary";
pub const SUBPROCESS: &str = "subprocess";
pub const EVENT_SUBPROCESS: &str = "event_subprocess";
pub const CALL: &str = "call";
pub const TRANSACTION: &str = "transaction";

/// Every element keyword, in the order an "unknown element kind" error lists them.
pub const ELEMENTS: &[&str] = &[
    START,
    END,
    TASK,
    EXCLUSIVE,
    PARALLEL,
    INCLUSIVE,
    COMPLEX,
    EVENT_BASED,
    USER,
    RECEIVE,
    CATCH,
    THROW,
    BOUNDARY,
    SUBPROCESS,
    EVENT_SUBPROCESS,
    TRANSACTION,
    CALL,
];

/// The keywords that open a nested scope.
pub const SCOPES: [&str; 3] = [SUBPROCESS, EVENT_SUBPROCESS, TRANSACTION];

// An imported process: `NAME: Data from "file.bpmn" process "Id" { flow id when ..; }`.
pub const FROM: &str = "from";
pub const PROCESS: &str = "process";
pub const FLOW: &str = "flow";
// A process's version in its header: `ORDER_V2: Order = "order" version 2 { .. }`.
pub const VERSION: &str = "version";

// Words within a declaration.
pub const ON: &str = "on";
pub const NON_INTERRUPTING: &str = "non_interrupting";
pub const WHEN: &str = "when";
pub const TERMINATE: &str = "terminate";
pub const INSTANTIATE: &str = "instantiate";
pub const ACTIVATE: &str = "activate";
/// Soundness markers: a deliberate multi-merge, a join that may wait for ever.
pub const MULTI: &str = "multi";
pub const MAY_DEADLOCK: &str = "may_deadlock";
/// `task t = h: spawn;` — the handler runs on its own tokio task from the start.
pub const SPAWN: &str = "spawn";
/// `task t = h: kind(send);`: the task's BPMN type, for the pictures.
pub const KIND: &str = "kind";
/// A task's retry policy: `task t = h: retry(5, backoff = 1s..5min);`.
pub const RETRY: &str = "retry";
/// A task's timeout per attempt: `task t = h: timeout(30s);`.
pub const TIMEOUT: &str = "timeout";
/// A user task's assignment: `user approve: assignee(|e| e.manager.clone()) |
/// groups("finance") | due(2d) | priority(80);`.
pub const ASSIGNEE: &str = "assignee";
pub const GROUPS: &str = "groups";
pub const DUE: &str = "due";
pub const PRIORITY: &str = "priority";

// Events.
pub const MESSAGE: &str = "message";
pub const SIGNAL: &str = "signal";
pub const TIMER: &str = "timer";
pub const LINK: &str = "link";
pub const CONDITION: &str = "condition";
pub const ERROR: &str = "error";
pub const ESCALATION: &str = "escalation";
/// Compensation: a boundary with its handler, a handler task, a throw, an event
/// sub-process start.
pub const COMPENSATION: &str = "compensation";
/// A transaction's cancel end event and cancel boundary.
pub const CANCEL: &str = "cancel";

// Named arguments.
pub const COUNT: &str = "count";
pub const REQUIRE: &str = "require";
pub const KEY: &str = "key";
pub const APPLY: &str = "apply";
pub const PAYLOAD: &str = "payload";
/// A call activity's mappings.
pub const INPUT: &str = "input";
pub const OUTPUT: &str = "output";
pub const AT: &str = "at";
pub const EVERY: &str = "every";
pub const TIMES: &str = "times";

// Loop and multi-instance markers (attributes on an activity).
pub const MULTI_INSTANCE: &str = "multi_instance";
pub const STANDARD_LOOP: &str = "standard_loop";
pub const ITEM: &str = "item";
