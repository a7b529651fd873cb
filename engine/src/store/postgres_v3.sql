-- thresh store on PostgreSQL, schema 3: start messages across nodes.
-- The order messages were stored in (ids come in blocks per node and do not tell
-- it): of the start messages waiting for a key, the oldest starts the next instance,
-- and the claim poll pages through the unclaimed ones in this order.
ALTER TABLE messages ADD COLUMN seq bigserial;
CREATE INDEX messages_by_seq ON messages (seq);
-- An instance's end wakes the nodes only if a message with its key waits.
CREATE INDEX messages_by_key ON messages (key);
-- A start message waits while an instance of its process with its key runs.
CREATE INDEX instances_running_by_key ON instances (key, process)
    WHERE status = 'running' AND key IS NOT NULL;
