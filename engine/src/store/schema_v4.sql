-- thresh store, schema 4: a task carries its instance's business key (`start_keyed`),
-- so the task list finds an order's tasks by the order's number. Tasks open before
-- it take their instance's key.
ALTER TABLE user_tasks ADD COLUMN business_key TEXT;
CREATE INDEX user_tasks_by_business_key ON user_tasks (business_key)
    WHERE business_key IS NOT NULL;
UPDATE user_tasks SET business_key =
    (SELECT i.business_key FROM instances i WHERE i.id = user_tasks.instance);
