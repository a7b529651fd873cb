//! The task list of the in-memory engine: user tasks' assignment from the model,
//! listing across instances with filters, order and pages, claims, and completing,
//! failing and raising by task id.

use std::time::{Duration, SystemTime};

use thresh::{
    process, Engine, InstanceError, Outcome, ProcessData, Task, TaskId, TaskListError, TaskOrder,
    TaskQuery,
};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Expense {
    pub id: String,
    pub amount: u32,
    pub manager: String,
    pub approved: bool,
    pub escalated: bool,
    pub rejected: bool,
    pub deadline: Option<SystemTime>,
}

process! {
    /// An expense: its manager approves it, finance may take it over.
    pub EXPENSE: Expense {
        start s;
        user approve: "Approve the expense"
            | assignee(|e| e.manager.clone())
            | groups("finance", "audit")
            | due(2d)
            | priority(|e| if e.amount > 1000 { 80 } else { 50 });
        boundary rejected on approve: error("REJECTED");
        boundary late on approve: non_interrupting escalation("LATE");
        task reject = |e| async move { e.rejected = true; Ok(()) };
        task note = |e| async move { e.escalated = true; Ok(()) };
        end done;
        end rejected_end;
        end noted;
        s -> approve -> done;
        rejected -> reject -> rejected_end;
        late -> note -> noted;
    }
}

process! {
    /// A user task with no assignment, and one whose due date is the data's.
    pub PLAIN: Expense {
        start s;
        user check;
        user sign: due(|e| e.deadline.unwrap_or(SystemTime::UNIX_EPOCH)) | assignee("boss");
        end e;
        s -> check -> sign -> e;
    }
}

process! {
    /// A user task that an hour's timer boundary withdraws.
    pub TIMED: Expense {
        start s;
        user approve: groups("finance");
        boundary expire on approve: timer(Duration::from_secs(3600));
        end done;
        end expired;
        s -> approve -> done;
        expire -> expired;
    }
}

process! {
    /// One approval per reviewer, in parallel.
    pub REVIEWS: Expense {
        start s;
        #[multi_instance(count = |_e| 3)]
        user review: groups("reviewers");
        end e;
        s -> review -> e;
    }
}

fn expense(id: &str, amount: u32, manager: &str) -> Expense {
    Expense {
        id: id.into(),
        amount,
        manager: manager.into(),
        ..Default::default()
    }
}

/// The open tasks `query` selects, once `count` are listed (user tasks open on
/// their instance's loop).
async fn tasks_when(engine: &Engine, query: &TaskQuery, count: usize) -> Vec<Task> {
    for _ in 0..10_000 {
        let tasks = engine.tasks(query).await.unwrap();
        if tasks.len() == count {
            return tasks;
        }
        tokio::task::yield_now().await;
    }
    panic!(
        "{count} tasks never listed: {:?}",
        engine.tasks(query).await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_task_is_listed_with_its_assignment_read_off_the_data() {
    let engine = Engine::new();
    let before = SystemTime::now();
    let handle = engine
        .start(&EXPENSE, expense("x1", 2500, "maria"))
        .await
        .unwrap();
    let [task] = &tasks_when(&engine, &TaskQuery::new(), 1).await[..] else {
        unreachable!()
    };
    assert_eq!(task.id.instance, handle.id());
    assert_eq!(task.process, "EXPENSE");
    assert_eq!(
        (task.element.as_str(), task.name.as_str()),
        ("approve", "Approve the expense")
    );
    assert_eq!(task.assignee.as_deref(), Some("maria"));
    assert_eq!(task.groups, ["finance", "audit"]);
    assert_eq!(task.priority, 80);
    assert_eq!(task.iteration, None);
    assert_eq!(task.claimed_by, None);
    assert!(task.created >= before);
    assert_eq!(
        task.due,
        Some(task.created + Duration::from_secs(2 * 24 * 3600))
    );
    assert_eq!(engine.task(task.id).await.unwrap(), *task);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_filtered_sorted_and_paged_across_instances() {
    let engine = Engine::new();
    let _a = engine
        .start(&EXPENSE, expense("a", 100, "maria"))
        .await
        .unwrap();
    let _b = engine
        .start(&EXPENSE, expense("b", 5000, "li"))
        .await
        .unwrap();
    let _c = engine
        .start(&EXPENSE, expense("c", 200, "li"))
        .await
        .unwrap();
    let deadline = SystemTime::now() + Duration::from_secs(60);
    let plain = engine
        .start(
            &PLAIN,
            Expense {
                deadline: Some(deadline),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let all = tasks_when(&engine, &TaskQuery::new(), 4).await;
    // Priority first (80 before the 50s), then the earliest due.
    let amounts: Vec<_> = all
        .iter()
        .map(|t| (t.process.as_str(), t.priority))
        .collect();
    assert_eq!(amounts[0], ("EXPENSE", 80));
    let li = engine
        .tasks(&TaskQuery::new().assignee("li"))
        .await
        .unwrap();
    assert_eq!(li.len(), 2);
    let finance = TaskQuery::new().candidate_groups(["finance", "ops"]);
    assert_eq!(engine.tasks(&finance).await.unwrap().len(), 3);
    let unassigned = engine.tasks(&TaskQuery::new().unassigned()).await.unwrap();
    assert_eq!(unassigned.len(), 1);
    assert_eq!(unassigned[0].element, "check");
    assert_eq!(unassigned[0].id.instance, plain.id());
    let by_element = TaskQuery::new().process("PLAIN").element("check");
    assert_eq!(engine.tasks(&by_element).await.unwrap().len(), 1);
    // In created order, paged two by two.
    let created = TaskQuery::new().order(TaskOrder::Created);
    let pages: Vec<Vec<Task>> = futures_pages(&engine, created, 2).await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 0]);
    let flat: Vec<TaskId> = pages.into_iter().flatten().map(|t| t.id).collect();
    let mut sorted = all.clone();
    sorted.sort_by_key(|t| (t.created, t.id));
    assert_eq!(flat, sorted.iter().map(|t| t.id).collect::<Vec<_>>());
    // The second user task's due date is the data's.
    plain_check_done(&engine, plain.id()).await;
    let sign = tasks_when(&engine, &TaskQuery::new().element("sign"), 1).await;
    assert_eq!(sign[0].due, Some(deadline));
    assert_eq!(sign[0].assignee.as_deref(), Some("boss"));
    let soon = TaskQuery::new().due_before(deadline + Duration::from_secs(1));
    assert_eq!(engine.tasks(&soon).await.unwrap().len(), 1);
    let by_due = engine
        .tasks(&TaskQuery::new().order(TaskOrder::Due))
        .await
        .unwrap();
    assert_eq!(by_due[0].element, "sign");
}

async fn futures_pages(engine: &Engine, query: TaskQuery, size: usize) -> Vec<Vec<Task>> {
    let mut pages = Vec::new();
    for page in 0..3 {
        let query = query.clone().page(page * size, size);
        pages.push(engine.tasks(&query).await.unwrap());
    }
    pages
}

async fn plain_check_done(engine: &Engine, instance: thresh::InstanceId) {
    let check = engine
        .tasks(&TaskQuery::new().instance(instance).element("check"))
        .await
        .unwrap();
    engine
        .complete_task(&PLAIN, check[0].id, |_| {})
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_held_by_another_user_is_refused_until_unclaimed() {
    let engine = Engine::new();
    let _handle = engine
        .start(&EXPENSE, expense("x", 10, "maria"))
        .await
        .unwrap();
    let id = tasks_when(&engine, &TaskQuery::new(), 1).await[0].id;
    let claimed = engine.claim(id, "ann").await.unwrap();
    assert_eq!(claimed.claimed_by.as_deref(), Some("ann"));
    // Again by the same user: no error.
    engine.claim(id, "ann").await.unwrap();
    assert_eq!(
        engine.claim(id, "bob").await,
        Err(TaskListError::ClaimedByOther {
            id,
            by: "ann".into()
        })
    );
    let ann = engine
        .tasks(&TaskQuery::new().claimed_by("ann"))
        .await
        .unwrap();
    assert_eq!(ann.len(), 1);
    assert!(engine
        .tasks(&TaskQuery::new().unassigned())
        .await
        .unwrap()
        .is_empty());
    engine.unclaim(id).await.unwrap();
    assert_eq!(
        engine.claim(id, "bob").await.unwrap().claimed_by.as_deref(),
        Some("bob")
    );
    let unknown = TaskId {
        instance: id.instance,
        number: 99,
    };
    assert_eq!(
        engine.claim(unknown, "bob").await,
        Err(TaskListError::NoTask(unknown))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_completed_by_id_commits_its_change_and_leaves_the_list() {
    let engine = Engine::new();
    let handle = engine
        .start(&EXPENSE, expense("x", 10, "maria"))
        .await
        .unwrap();
    let id = tasks_when(&engine, &TaskQuery::new(), 1).await[0].id;
    engine
        .complete_task(&EXPENSE, id, |e| e.approved = true)
        .await
        .unwrap();
    let data = handle.outcome().await.completed().unwrap();
    assert!(data.approved);
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
    assert_eq!(
        engine.complete_task(&EXPENSE, id, |_| {}).await,
        Err(TaskListError::NoTask(id))
    );
    let unknown = TaskId {
        instance: thresh::InstanceId(123_456),
        number: 1,
    };
    assert_eq!(
        engine.complete_task(&EXPENSE, unknown, |_| {}).await,
        Err(TaskListError::NoTask(unknown))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_written_for_another_process_is_refused() {
    let engine = Engine::new();
    let _handle = engine
        .start(&EXPENSE, expense("x", 10, "maria"))
        .await
        .unwrap();
    let id = tasks_when(&engine, &TaskQuery::new(), 1).await[0].id;
    assert_eq!(
        engine.complete_task(&PLAIN, id, |_| {}).await,
        Err(TaskListError::OtherProcess {
            id,
            task: "EXPENSE".into(),
            given: "PLAIN"
        })
    );
    assert_eq!(engine.tasks(&TaskQuery::new()).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_escalations_are_raised_and_tasks_failed_by_id() {
    let engine = Engine::new();
    let rejected = engine
        .start(&EXPENSE, expense("r", 10, "maria"))
        .await
        .unwrap();
    let escalated = engine
        .start(&EXPENSE, expense("e", 10, "maria"))
        .await
        .unwrap();
    let failed = engine
        .start(&EXPENSE, expense("f", 10, "maria"))
        .await
        .unwrap();
    tasks_when(&engine, &TaskQuery::new(), 3).await;
    let of = |instance| TaskQuery::new().instance(instance);
    let id = |tasks: Vec<Task>| tasks[0].id;
    let r = id(engine.tasks(&of(rejected.id())).await.unwrap());
    engine
        .raise_task_error(r, "REJECTED", "too dear")
        .await
        .unwrap();
    assert!(rejected.outcome().await.completed().unwrap().rejected);
    let e = id(engine.tasks(&of(escalated.id())).await.unwrap());
    engine.raise_task_escalation(e, "LATE").await.unwrap();
    // The escalation leaves the task open; it is completed after.
    assert_eq!(engine.task(e).await.unwrap().id, e);
    engine
        .complete_task(&EXPENSE, e, |x| x.approved = true)
        .await
        .unwrap();
    let data = escalated.outcome().await.completed().unwrap();
    assert!(data.escalated && data.approved);
    let f = id(engine.tasks(&of(failed.id())).await.unwrap());
    engine.fail_task(f, "receipt lost").await.unwrap();
    match failed.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!((node, message.as_str()), ("approve", "receipt lost"))
        }
        other => panic!("{other:?}"),
    }
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_instance_takes_its_task_off_the_list() {
    let engine = Engine::new();
    let handle = engine
        .start(&EXPENSE, expense("x", 10, "maria"))
        .await
        .unwrap();
    let id = tasks_when(&engine, &TaskQuery::new(), 1).await[0].id;
    handle.cancel();
    assert!(matches!(handle.outcome().await, Outcome::Cancelled(_)));
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
    assert_eq!(engine.task(id).await, Err(TaskListError::NoTask(id)));
}

/// The timer boundary fires at the hour (paused clock): the task leaves the list.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_on_a_user_task_takes_it_off_the_list() {
    let engine = Engine::new();
    let handle = engine
        .start(&TIMED, expense("x", 10, "maria"))
        .await
        .unwrap();
    let id = tasks_when(&engine, &TaskQuery::new(), 1).await[0].id;
    tokio::time::sleep(Duration::from_secs(3599)).await;
    assert_eq!(engine.tasks(&TaskQuery::new()).await.unwrap().len(), 1);
    let outcome = handle.outcome().await;
    assert!(outcome.completed().is_some());
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
    assert_eq!(
        engine.complete_task(&TIMED, id, |_| {}).await,
        Err(TaskListError::NoTask(id))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_instance_of_a_multi_instance_user_task_is_a_task_of_its_own() {
    let engine = Engine::new();
    let handle = engine.start(&REVIEWS, Expense::default()).await.unwrap();
    let tasks = tasks_when(
        &engine,
        &TaskQuery::new().candidate_groups(["reviewers"]),
        3,
    )
    .await;
    let mut iterations: Vec<_> = tasks.iter().map(|t| t.iteration).collect();
    iterations.sort();
    assert_eq!(iterations, [Some(0), Some(1), Some(2)]);
    for task in &tasks {
        engine
            .complete_task(&REVIEWS, task.id, |_| {})
            .await
            .unwrap();
    }
    assert!(handle.outcome().await.completed().is_some());
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
}

process! {
    /// An assignment read off the data that panics when the task opens.
    pub BROKEN: Expense {
        start s;
        user approve: priority(|e| if e.amount == 0 { panic!("no amount") } else { 1 });
        end e;
        s -> approve -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assignment_that_panics_fails_the_instance_naming_the_user_task() {
    let engine = Engine::new();
    let handle = engine.start(&BROKEN, Expense::default()).await.unwrap();
    match handle.outcome().await {
        Outcome::Failed(InstanceError::TaskPanicked { node, message }) => {
            assert_eq!((node, message.as_str()), ("approve", "no amount"))
        }
        other => panic!("{other:?}"),
    }
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
}

process! {
    /// Started by a keyed message: the key is the instance's correlation key.
    pub BY_MESSAGE: Expense {
        start received: message("expense", apply = |e, amount: &u32| e.amount = *amount);
        user approve: groups("finance");
        end e;
        received -> approve -> e;
    }
}

/// A task carries its instance's keys in memory as in a store: the business key of
/// `start_keyed` and the correlation key of a keyed message start, and the listing
/// is filtered by each (the query's keys are those of `Query`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_carries_its_instances_business_and_correlation_keys() {
    let engine = Engine::new();
    let keyed = engine
        .start_keyed(&EXPENSE, "ORDER-7", expense("x", 10, "maria"))
        .await
        .unwrap();
    engine
        .start(&EXPENSE, expense("y", 10, "li"))
        .await
        .unwrap();
    engine.deploy(&BY_MESSAGE, Expense::default()).unwrap();
    engine
        .publish(BY_MESSAGE::message.expense, "EXP-9", 300)
        .await
        .unwrap();
    let all = tasks_when(&engine, &TaskQuery::new(), 3).await;
    let by_order = tasks_when(&engine, &TaskQuery::new().key("ORDER-7"), 1).await;
    assert_eq!(by_order[0].id.instance, keyed.id());
    assert_eq!(by_order[0].business_key.as_deref(), Some("ORDER-7"));
    assert_eq!(by_order[0].key, None);
    let by_message = tasks_when(&engine, &TaskQuery::new().correlation_key("EXP-9"), 1).await;
    assert_eq!(by_message[0].process, "BY_MESSAGE");
    assert_eq!(by_message[0].key.as_deref(), Some("EXP-9"));
    assert_eq!(by_message[0].business_key, None);
    // Neither key stands for the other.
    assert!(engine
        .tasks(&TaskQuery::new().correlation_key("ORDER-7"))
        .await
        .unwrap()
        .is_empty());
    assert!(engine
        .tasks(&TaskQuery::new().key("EXP-9"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        all.iter()
            .filter(|t| t.business_key.is_none() && t.key.is_none())
            .count(),
        1
    );
    // The instance the message started is found by its correlation key, with its
    // data, in memory as in a store.
    let found = engine
        .instances(&thresh::Query::of(&BY_MESSAGE).correlation_key("EXP-9"))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.items[0].id, by_message[0].id.instance);
    assert_eq!(found.items[0].key.as_deref(), Some("EXP-9"));
    assert_eq!(found.items[0].data.amount, 300);
    engine
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
}
