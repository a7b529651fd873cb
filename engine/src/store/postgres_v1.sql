-- thresh store on PostgreSQL, schema 1. Applied in one transaction in an empty
-- schema (the connection's search_path).
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL                     -- numbers in decimal
);
INSERT INTO meta (key, value) VALUES
    ('magic', 'thresh-store'),
    ('schema_version', '0'),
    ('next_instance_id', '0'),   -- id high-water marks: never reused, kept after purges
    ('next_message_id', '0'),
    ('next_deployment_id', '0');

CREATE TABLE instances (
    id          bigint PRIMARY KEY CHECK (id >= 0),
    process     text   NOT NULL,
    fingerprint bigint NOT NULL,            -- the u64's 64 bits
    status      text   NOT NULL CHECK (status IN
                    ('running', 'completed', 'terminated', 'cancelled', 'failed')),
    key         text,                       -- correlation key
    seq         bigint NOT NULL CHECK (seq >= 0), -- checkpoint number, increasing
    state       json   NOT NULL,            -- json keeps the text as written
    outcome     json,
    updated_ms  bigint NOT NULL
);
-- running() at recovery, listings by status.
CREATE INDEX instances_by_status ON instances (status, id);

CREATE TABLE messages (
    id         bigint PRIMARY KEY CHECK (id >= 0),
    name       text   NOT NULL,
    key        text   NOT NULL,
    payload    json   NOT NULL,
    expires_ms bigint NOT NULL
);

CREATE TABLE deployments (
    id            bigint PRIMARY KEY CHECK (id >= 0),
    process       text   NOT NULL,
    fingerprint   bigint NOT NULL,
    data          json   NOT NULL,
    timer_anchors json   NOT NULL
);
