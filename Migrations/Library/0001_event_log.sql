-- The append-only event log of a device library.
-- Rows are never updated or deleted, except that server_seq is set once when the server
-- acknowledges the event. The hash column chains every event to the one before it in
-- local order: hash = SHA-256(previous hash || canonical event bytes).
CREATE TABLE events (
    local_seq      INTEGER PRIMARY KEY,
    event_id       BLOB    NOT NULL UNIQUE CHECK (length(event_id) = 16),
    device_id      TEXT    NOT NULL,
    device_seq     INTEGER NOT NULL CHECK (device_seq > 0),
    hlc            INTEGER NOT NULL,
    change_block   BLOB    NOT NULL CHECK (length(change_block) = 16),
    object_id      BLOB    NOT NULL CHECK (length(object_id) = 16),
    type           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    payload        BLOB    NOT NULL,
    server_seq     INTEGER,
    hash           BLOB    NOT NULL CHECK (length(hash) = 32)
) STRICT;

CREATE UNIQUE INDEX events_by_device ON events (device_id, device_seq);
CREATE INDEX events_by_object ON events (object_id, local_seq);
CREATE UNIQUE INDEX events_by_server_seq ON events (server_seq) WHERE server_seq IS NOT NULL;
CREATE INDEX events_pending ON events (local_seq) WHERE server_seq IS NULL;

CREATE TRIGGER events_are_never_deleted BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'the event log is append-only: events cannot be deleted');
END;

CREATE TRIGGER events_are_never_changed BEFORE UPDATE ON events
WHEN OLD.server_seq IS NOT NULL
  OR NEW.server_seq IS NULL
  OR NEW.local_seq IS NOT OLD.local_seq
  OR NEW.event_id IS NOT OLD.event_id
  OR NEW.device_id IS NOT OLD.device_id
  OR NEW.device_seq IS NOT OLD.device_seq
  OR NEW.hlc IS NOT OLD.hlc
  OR NEW.change_block IS NOT OLD.change_block
  OR NEW.object_id IS NOT OLD.object_id
  OR NEW.type IS NOT OLD.type
  OR NEW.schema_version IS NOT OLD.schema_version
  OR NEW.payload IS NOT OLD.payload
  OR NEW.hash IS NOT OLD.hash
BEGIN
    SELECT RAISE(ABORT, 'the event log is append-only: only server_seq may be set, and only once');
END;

-- Single-row state of the log: the last hybrid logical clock value issued or received, so the
-- clock stays monotonic across restarts.
CREATE TABLE ledger_clock (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    last_hlc INTEGER NOT NULL
) STRICT;
INSERT INTO ledger_clock (id, last_hlc) VALUES (1, 0);
