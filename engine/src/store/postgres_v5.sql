-- thresh store on PostgreSQL, schema 5: instance queries. What a query filters and
-- sorts on is a real column (or the side table of waits), indexed, written in the
-- transaction of the checkpoint that changes it.
ALTER TABLE instances
    ADD COLUMN business_key text,                  -- given at start, kept
    ADD COLUMN started_ms   bigint NOT NULL DEFAULT 0,
    ADD COLUMN incidents    integer NOT NULL DEFAULT 0, -- open ones
    -- When it ended: an ended instance's updated_ms, NULL while it runs.
    ADD COLUMN ended_ms     bigint
        GENERATED ALWAYS AS (CASE WHEN status <> 'running' THEN updated_ms END) STORED;
-- Instances stored before schema 5 get their last write's time.
UPDATE instances SET started_ms = updated_ms;

CREATE INDEX instances_by_started ON instances (process, started_ms, id);
CREATE INDEX instances_by_status_started ON instances (process, status, started_ms, id);
CREATE INDEX instances_by_ended ON instances (process, ended_ms, id)
    WHERE ended_ms IS NOT NULL;
CREATE INDEX instances_by_business_key ON instances (business_key, process)
    WHERE business_key IS NOT NULL;
CREATE INDEX instances_by_key_any ON instances (key, process) WHERE key IS NOT NULL;
CREATE INDEX instances_with_incidents ON instances (process, started_ms, id)
    WHERE incidents > 0;

-- The elements a running instance's tokens wait at (one row per element), as its
-- last checkpoint says; an end removes them. An instance stored before schema 5
-- gets its rows at its next checkpoint.
CREATE TABLE instance_waits (
    instance   bigint NOT NULL,
    process    text   NOT NULL,
    node       text   NOT NULL,
    started_ms bigint NOT NULL,             -- the instance's, for sorting by it here
    PRIMARY KEY (instance, node)
);
CREATE INDEX instance_waits_by_node ON instance_waits (node, process, started_ms, instance);
