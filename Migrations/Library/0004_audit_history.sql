-- Audit and change history: the library's identity (change tokens name it), where each commit
-- ends (persistent changes group events the way they were committed), indexes for audit
-- queries, the server's chain values as pulled, and compaction: the horizon below which events
-- live in the archive file, with the one exception to the append-only rule that it needs.

-- A random identity for this library file; a change token carries it, so a token from another
-- library is recognised.
CREATE TABLE library_identity (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    library_id BLOB    NOT NULL CHECK (length(library_id) = 16)
) STRICT;
INSERT INTO library_identity (id, library_id) VALUES (1, randomblob(16));

-- One row per commit that appended events: the local sequence of its last event. The events of
-- a commit are those after the previous row's end. EventLog.append records the log's clock once,
-- after the events it appended, in the same transaction: that moment ends the commit (a local
-- change block, or a page of events applied from sync).
CREATE TABLE commits (
    end_seq INTEGER PRIMARY KEY
) STRICT;
-- Events logged before this migration: one commit per change block.
INSERT INTO commits (end_seq) SELECT max(local_seq) FROM events GROUP BY change_block;

CREATE TRIGGER commit_ends_when_clock_is_recorded AFTER UPDATE OF last_hlc ON ledger_clock
WHEN (SELECT max(local_seq) FROM events) IS NOT NULL
BEGIN
    INSERT INTO commits (end_seq) SELECT max(local_seq) FROM events WHERE true ON CONFLICT (end_seq) DO NOTHING;
END;

-- Audit queries: events by time (HLC) and by change block, in keyset pages.
CREATE INDEX events_by_hlc ON events (hlc, local_seq);
CREATE INDEX events_by_change_block ON events (change_block, local_seq);

-- The server's chain value after each event, as reported in pull pages and checked against the
-- events held here: SHA-256(previous chain value || canonical event bytes) in server order.
-- held = 1 once the event was in this library when its value was checked.
CREATE TABLE server_chain (
    server_seq INTEGER PRIMARY KEY CHECK (server_seq > 0),
    event_id   BLOB    NOT NULL CHECK (length(event_id) = 16),
    chain_hash BLOB    NOT NULL CHECK (length(chain_hash) = 32),
    held       INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Compaction: events up to archived_through (a prefix of the log in local order) have been
-- copied to the archive file beside the library, whose hash chain ends at archived_hash; the
-- live log continues the chain from there. The snapshot tables (snapshot_<projection>) hold the
-- projections as they were at snapshot_through, the base that rebuild folds the live log onto.
CREATE TABLE compaction_state (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    archived_through INTEGER NOT NULL,
    archived_hash    BLOB    NOT NULL CHECK (length(archived_hash) = 32),
    server_watermark INTEGER NOT NULL,
    snapshot_through INTEGER NOT NULL
) STRICT;
INSERT INTO compaction_state (id, archived_through, archived_hash, server_watermark, snapshot_through)
VALUES (1, 0, zeroblob(32), 0, 0);

-- The highest device sequence of each device among the archived events, so that a device whose
-- events all left the live log still numbers its next event after them.
CREATE TABLE archived_device_sequences (
    device_id       TEXT    PRIMARY KEY,
    last_device_seq INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The horizon only moves forward, and only onto an event still in the log whose chain value is
-- the one the archive was verified to end with.
CREATE TRIGGER compaction_horizon_only_advances BEFORE UPDATE ON compaction_state
WHEN NEW.archived_through < OLD.archived_through
  OR NEW.server_watermark < OLD.server_watermark
  OR (NEW.archived_through <> OLD.archived_through
      AND NEW.archived_hash IS NOT (SELECT hash FROM events WHERE local_seq = NEW.archived_through))
BEGIN
    SELECT RAISE(ABORT, 'the compaction horizon only advances, onto an event of the log with its own chain value');
END;

-- The log stays append-only, except that events at or below the horizon, which the archive
-- holds and the server has acknowledged (or refused for good), may leave it.
-- (The trigger keeps its name from 0001.)
DROP TRIGGER events_are_never_deleted;
CREATE TRIGGER events_are_never_deleted BEFORE DELETE ON events
WHEN (OLD.server_seq IS NULL AND OLD.event_id NOT IN (SELECT event_id FROM sync_rejections))
  OR OLD.local_seq > (SELECT archived_through FROM compaction_state WHERE id = 1)
BEGIN
    SELECT RAISE(ABORT, 'the event log is append-only: events cannot be deleted, except those already copied to the archive');
END;
