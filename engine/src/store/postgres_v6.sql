-- thresh store on PostgreSQL, schema 6: the task list. One row per open user task,
-- written in the transaction of the checkpoint that opens or closes it (fenced with
-- it on a node of several); an instance's end deletes its rows. Listing reads every
-- node's. The indexes of columns most tasks leave empty are partial: a task with
-- no assignee, claim, due date or key costs them nothing.
CREATE TABLE user_tasks (
    instance   bigint  NOT NULL CHECK (instance >= 0),
    number     bigint  NOT NULL CHECK (number >= 0),
    process    text    NOT NULL,
    element    text    NOT NULL,
    name       text    NOT NULL,
    iteration  bigint,
    assignee   text,
    groups     text[]  NOT NULL,
    due_ms     bigint,
    priority   integer NOT NULL,
    claimed_by text,
    created_ms bigint  NOT NULL,
    key        text,                        -- the instance's correlation key
    PRIMARY KEY (instance, number)
);
CREATE INDEX user_tasks_by_assignee ON user_tasks (assignee) WHERE assignee IS NOT NULL;
CREATE INDEX user_tasks_by_claim ON user_tasks (claimed_by) WHERE claimed_by IS NOT NULL;
CREATE INDEX user_tasks_by_element ON user_tasks (process, element);
CREATE INDEX user_tasks_by_due ON user_tasks (due_ms) WHERE due_ms IS NOT NULL;
CREATE INDEX user_tasks_by_key ON user_tasks (key) WHERE key IS NOT NULL;
CREATE INDEX user_tasks_by_priority ON user_tasks (priority DESC, due_ms, created_ms);
CREATE INDEX user_tasks_by_group ON user_tasks USING gin (groups);
