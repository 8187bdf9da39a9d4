-- A library started from a snapshot instead of the whole history (Sources/PhotoLedger/Snapshots.swift).
-- The snapshot's rows were installed as the projections and as the compaction snapshot; the
-- server's event at `position` is the first event of the live log (local_seq = position), and the
-- history before it is fetched into the archive later (local_seq = server_seq), up to
-- `fetched_through`. Once all of it is there, it is refolded and compared with the snapshot:
-- `verified_at` records when, and snapshot_differences what differed (the refold won).
CREATE TABLE snapshot_bootstrap (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    position        INTEGER NOT NULL CHECK (position >= 1),
    chain_hash      BLOB    NOT NULL CHECK (length(chain_hash) = 32),
    sha256          BLOB    NOT NULL CHECK (length(sha256) = 32),
    content_sha256  BLOB    NOT NULL CHECK (length(content_sha256) = 32),
    source_device   TEXT    NOT NULL,
    installed_at    INTEGER NOT NULL,
    fetched_through INTEGER NOT NULL DEFAULT 0 CHECK (fetched_through >= 0),
    verified_at     INTEGER
) STRICT;

-- The rows in which the verified fold differed from the snapshot: the table, the row's primary
-- key (its values in the canonical encoding) and what the snapshot had wrong.
CREATE TABLE snapshot_differences (
    table_name TEXT    NOT NULL,
    row_key    BLOB    NOT NULL,
    kind       INTEGER NOT NULL CHECK (kind IN (1, 2, 3)),
    PRIMARY KEY (table_name, row_key)
) STRICT, WITHOUT ROWID;
