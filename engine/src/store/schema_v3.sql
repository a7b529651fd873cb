-- thresh store, schema 3: the task list. One row per open user task, written in the
-- transaction of the checkpoint that opens or closes it; an instance's end deletes
-- its rows. Groups are a JSON array (read back whole) and rows of their own (the
-- candidate-group filter's index). The indexes of columns most tasks leave empty
-- are partial: a task with no assignee, claim, due date or key costs them nothing.
CREATE TABLE user_tasks (
    instance   INTEGER NOT NULL,
    number     INTEGER NOT NULL,
    process    TEXT    NOT NULL,
    element    TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    iteration  INTEGER,
    assignee   TEXT,
    groups     TEXT    NOT NULL CHECK (json_valid(groups)),
    due_ms     INTEGER,
    priority   INTEGER NOT NULL,
    claimed_by TEXT,
    created_ms INTEGER NOT NULL,
    key        TEXT,                        -- the instance's correlation key
    PRIMARY KEY (instance, number)
) STRICT, WITHOUT ROWID;
CREATE INDEX user_tasks_by_assignee ON user_tasks (assignee) WHERE assignee IS NOT NULL;
CREATE INDEX user_tasks_by_claim ON user_tasks (claimed_by) WHERE claimed_by IS NOT NULL;
CREATE INDEX user_tasks_by_element ON user_tasks (process, element);
CREATE INDEX user_tasks_by_due ON user_tasks (due_ms) WHERE due_ms IS NOT NULL;
CREATE INDEX user_tasks_by_key ON user_tasks (key) WHERE key IS NOT NULL;
CREATE INDEX user_tasks_by_priority ON user_tasks (priority DESC, due_ms, created_ms);

CREATE TABLE user_task_groups (
    grp      TEXT    NOT NULL,
    instance INTEGER NOT NULL,
    number   INTEGER NOT NULL,
    PRIMARY KEY (grp, instance, number)
) STRICT, WITHOUT ROWID;
CREATE INDEX user_task_groups_by_task ON user_task_groups (instance, number);
