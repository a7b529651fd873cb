-- thresh store on PostgreSQL, schema 2: several engine nodes on one store.
-- Each running instance is owned by one node through a lease; `fence` grows at
-- every change of owner, and a node's checkpoints and ends are conditional on the
-- fence it took the instance with (a node that lost the lease cannot overwrite the
-- new owner's checkpoint). A store written by a single engine (no node) leaves
-- owner and lease_until NULL: such instances are free for any node to take.
ALTER TABLE instances
    ADD COLUMN owner       text,           -- the node id of the owner
    ADD COLUMN lease_until timestamptz,    -- the owner's lease (the server's clock)
    ADD COLUMN fence       bigint NOT NULL DEFAULT 0;
-- Takeover: running instances whose lease expired; renewal: a node's instances.
CREATE INDEX instances_by_lease ON instances (lease_until) WHERE status = 'running';
CREATE INDEX instances_by_owner ON instances (owner) WHERE status = 'running';

-- A stored message is claimed by one node before that node delivers it; the claim
-- expires with the node (renewed with its leases).
ALTER TABLE messages
    ADD COLUMN claimed_by  text,
    ADD COLUMN claim_until timestamptz;
CREATE INDEX messages_by_name_key ON messages (name, key);
-- Every node expires messages now and then.
CREATE INDEX messages_by_expiry ON messages (expires_ms);

-- Every change of an instance's owner: who had it, who took it, with which fence.
CREATE TABLE handovers (
    instance   bigint      NOT NULL,
    fence      bigint      NOT NULL,       -- the new owner's fence
    from_owner text,                       -- NULL: the instance had no owner
    to_owner   text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance, fence)
);
