//! A chain of tasks ready at once runs straight on from task to task on the loop
//! (`run_task`, ARCHITECTURE.md "Performance"); the conditions its commits make true
//! fire in the step of the commit that made them so, before the next task starts,
//! exactly as when every move went through `split` and `settle`.

use super::*;

async fn add_one(o: &mut Order) -> Result<(), TaskError> {
    o.total += 1;
    Ok(())
}

process! {
    /// Four counting tasks in a row; an alarm beside them (non-interrupting) when
    /// `total` reaches 2, and the chain stopped (interrupting) when it reaches 3.
    COUNTING: Order {
        start begin;
        task  one = add_one;
        task  two = add_one;
        task  three = add_one;
        task  four = add_one;
        end   done;
        begin -> one -> two -> three -> four -> done;
        event_subprocess on_two {
            start two_up: non_interrupting condition(|o| o.total >= 2, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            two_up -> alarm -> alarmed;
        }
        event_subprocess on_three {
            start three_up: condition(|o| o.total >= 3, on = [total]);
            end   stopped;
            three_up -> stopped;
        }
    }
}

/// The commit of `two` starts the alarm's event sub-process before `three` starts
/// (its token is caught there; its task would run after the step), and the commit
/// of `three` interrupts the process's scope — the chain and the alarm — before
/// `four` starts. The history is the one the general path recorded before the
/// straight-on path (taken from the engine of that time).
#[tokio::test]
async fn a_ready_chain_fires_the_conditions_of_each_commit_before_its_next_task() {
    let engine = Engine::new();
    let handle = engine.start(&COUNTING, order("C-1")).await.unwrap();
    let (outcome, history) = outcome_of(&handle).await;
    assert_eq!(
        steps(&history),
        [
            (0, "begin", Happening::Started),
            (0, "one", Happening::TaskStarted),
            (0, "one", done(&["total"])),
            (0, "two", Happening::TaskStarted),
            (0, "two", done(&["total"])),
            (1, "two_up", Happening::Started),
            (0, "three", Happening::TaskStarted),
            (0, "three", done(&["total"])),
            (0, "three", Happening::Cancelled),
            (1, "two_up", Happening::Cancelled),
            (2, "three_up", Happening::Started),
            (2, "three_up", caught(&[])),
            (2, "stopped", Happening::Ended),
        ]
    );
    let data = completed(outcome, &history);
    assert_eq!((data.total, data.alarms), (3, 0));
}
