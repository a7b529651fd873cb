-- thresh store, schema 1. Applied in one transaction on an empty database.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value ANY
) STRICT, WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES
    ('magic', 'thresh-store'),
    ('schema_version', 0),
    ('next_instance_id', 0),     -- id high-water marks: never reused, kept after purges
    ('next_message_id', 0),
    ('next_deployment_id', 0);

CREATE TABLE instances (
    id          INTEGER PRIMARY KEY,
    process     TEXT    NOT NULL,
    fingerprint INTEGER NOT NULL,           -- the u64's 64 bits
    status      TEXT    NOT NULL CHECK (status IN
                    ('running', 'completed', 'terminated', 'cancelled', 'failed')),
    key         TEXT,                       -- correlation key
    seq         INTEGER NOT NULL,           -- checkpoint number, increasing
    state       TEXT    NOT NULL CHECK (json_valid(state)),
    outcome     TEXT    CHECK (outcome IS NULL OR json_valid(outcome)),
    updated_ms  INTEGER NOT NULL
) STRICT;
-- running() at recovery, listings by status (entries come out in id order).
CREATE INDEX instances_by_status ON instances (status);

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    payload    TEXT    NOT NULL CHECK (json_valid(payload)),
    expires_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE deployments (
    id            INTEGER PRIMARY KEY,
    process       TEXT    NOT NULL,
    fingerprint   INTEGER NOT NULL,
    data          TEXT    NOT NULL CHECK (json_valid(data)),
    timer_anchors TEXT    NOT NULL CHECK (json_valid(timer_anchors))
) STRICT;
