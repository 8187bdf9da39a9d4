-- The key store's outbox (0014) keyed by name alone: a WITHOUT ROWID table is one B-tree where
-- the table with a rowid was two (its rows, and the index of its primary key), so queueing an
-- asset's key when it is created and forgetting it once the server has it each change one
-- tree. An encrypted library queues and forgets one entry per asset, by the ten thousand.
CREATE TABLE e2e_outbox_by_name (
    name        TEXT    PRIMARY KEY,
    value       BLOB,
    create_only INTEGER NOT NULL DEFAULT 0 CHECK (create_only IN (0, 1))
) STRICT, WITHOUT ROWID;
INSERT INTO e2e_outbox_by_name (name, value, create_only) SELECT name, value, create_only FROM e2e_outbox;
DROP TABLE e2e_outbox;
ALTER TABLE e2e_outbox_by_name RENAME TO e2e_outbox;
