-- thresh store on PostgreSQL, schema 4: commit marks.
-- Every writing transaction sets its connection's mark first. When the connection is
-- lost while a COMMIT is on its way, the store reads the mark on a new connection
-- to learn whether that transaction committed. (A transaction id cannot tell: after
-- a crash the server hands out again the ids of transactions whose commit never
-- reached its disk, so `txid_status` may answer for another transaction.)
CREATE TABLE commit_marks (
    writer bigint      PRIMARY KEY,          -- a connection's, random
    mark   bigint      NOT NULL,             -- its last transaction's number
    at     timestamptz NOT NULL DEFAULT now()
);
