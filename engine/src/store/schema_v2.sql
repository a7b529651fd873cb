-- thresh store, schema 2: instance queries. What a query filters and sorts on is a
-- real column (or the side table of waits), indexed, written in the transaction of
-- the checkpoint that changes it.
ALTER TABLE instances ADD COLUMN business_key TEXT;     -- given at start, kept
-- When it started. Instances stored before schema 2 get their last write's time.
ALTER TABLE instances ADD COLUMN started_ms INTEGER NOT NULL DEFAULT 0;
UPDATE instances SET started_ms = updated_ms;
ALTER TABLE instances ADD COLUMN incidents INTEGER NOT NULL DEFAULT 0; -- open ones
-- When it ended: an ended instance's updated_ms, NULL while it runs.
ALTER TABLE instances ADD COLUMN ended_ms INTEGER
    GENERATED ALWAYS AS (CASE WHEN status <> 'running' THEN updated_ms END) VIRTUAL;

CREATE INDEX instances_by_started ON instances (process, started_ms, id);
CREATE INDEX instances_by_status_started ON instances (process, status, started_ms, id);
CREATE INDEX instances_by_ended ON instances (process, ended_ms, id)
    WHERE ended_ms IS NOT NULL;
CREATE INDEX instances_by_business_key ON instances (business_key, process)
    WHERE business_key IS NOT NULL;
CREATE INDEX instances_by_key ON instances (key, process) WHERE key IS NOT NULL;
CREATE INDEX instances_with_incidents ON instances (process, started_ms, id)
    WHERE incidents > 0;

-- The elements a running instance's tokens wait at (one row per element), as its
-- last checkpoint says; an end removes them. An instance stored before schema 2
-- gets its rows at its next checkpoint.
CREATE TABLE instance_waits (
    instance   INTEGER NOT NULL,
    process    TEXT    NOT NULL,
    node       TEXT    NOT NULL,
    started_ms INTEGER NOT NULL,           -- the instance's, for sorting by it here
    PRIMARY KEY (instance, node)
) STRICT, WITHOUT ROWID;
CREATE INDEX instance_waits_by_node ON instance_waits (node, process, started_ms, instance);
