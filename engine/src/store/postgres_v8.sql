-- thresh store on PostgreSQL, schema 8: what can wake a running instance that is
-- not in memory (its last checkpoint's, written in its transaction; an end clears
-- it): its earliest timer, whether it is at rest, its armed message and signal
-- subscriptions. Instances stored before are not at rest: a resume loads them, and
-- their next checkpoint indexes them.
ALTER TABLE instances ADD COLUMN due_ms bigint;                    -- earliest timer
ALTER TABLE instances ADD COLUMN at_rest boolean NOT NULL DEFAULT false;
CREATE INDEX instances_by_due ON instances (due_ms, id)
    WHERE due_ms IS NOT NULL AND status = 'running';
CREATE INDEX instances_not_at_rest ON instances (id)
    WHERE NOT at_rest AND status = 'running';

-- One row per armed subscription: a message's (name, key), a signal's name (key '').
CREATE TABLE instance_wakes (
    instance bigint NOT NULL,
    kind     text   NOT NULL CHECK (kind IN ('message', 'signal')),
    name     text   NOT NULL,
    key      text   NOT NULL DEFAULT '',
    PRIMARY KEY (instance, kind, name, key)
);
CREATE INDEX instance_wakes_by_name ON instance_wakes (kind, name, key, instance);
