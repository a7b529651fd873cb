-- thresh store, schema 5: what can wake a running instance that is not in memory
-- (its last checkpoint's, written in its transaction; an end clears it): its
-- earliest timer, whether it is at rest, its armed message and signal
-- subscriptions. Instances stored before are not at rest: the next resume loads
-- them, and their next checkpoint indexes them.
ALTER TABLE instances ADD COLUMN due_ms INTEGER;                 -- earliest timer
ALTER TABLE instances ADD COLUMN at_rest INTEGER NOT NULL DEFAULT 0;
CREATE INDEX instances_by_due ON instances (due_ms, id) WHERE due_ms IS NOT NULL;
CREATE INDEX instances_not_at_rest ON instances (id)
    WHERE at_rest = 0 AND status = 'running';

-- One row per armed subscription: a message's (name, key), a signal's name (key '').
CREATE TABLE instance_wakes (
    instance INTEGER NOT NULL,
    kind     TEXT    NOT NULL CHECK (kind IN ('message', 'signal')),
    name     TEXT    NOT NULL,
    key      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (instance, kind, name, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX instance_wakes_by_name ON instance_wakes (kind, name, key, instance);

-- What a resume reads of the instances at rest, without their state.
CREATE INDEX instances_at_rest ON instances (id, process, fingerprint, key, due_ms)
    WHERE status = 'running' AND at_rest = 1;
