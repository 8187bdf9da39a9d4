-- The number of commits that changed the library's objects (change blocks, applied pull pages,
-- events folded out), one more with each, in the transaction that commits it. A fetch reads it
-- with its rows, so a fetch result knows which commit it reflects, and change notifications
-- (one per commit, in commit order) know which results they apply to. Never synced.
ALTER TABLE replica_state ADD COLUMN change_generation INTEGER NOT NULL DEFAULT 0 CHECK (change_generation >= 0);
