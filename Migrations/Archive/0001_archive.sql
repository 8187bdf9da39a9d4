-- The archive of a compacted library: a separate file beside the library that holds the events
-- compaction moved out of the live log, with the same columns, indexes and hash chain values, in
-- a table that is strictly append-only (no update, no delete). `IF NOT EXISTS` because archives
-- made before the archive had migrations hold exactly this schema already.
CREATE TABLE IF NOT EXISTS archive_identity (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    library_id BLOB    NOT NULL CHECK (length(library_id) = 16)
) STRICT;
CREATE TABLE IF NOT EXISTS events (
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
CREATE UNIQUE INDEX IF NOT EXISTS events_by_device ON events (device_id, device_seq);
CREATE INDEX IF NOT EXISTS events_by_object ON events (object_id, local_seq);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_server_seq ON events (server_seq) WHERE server_seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_hlc ON events (hlc, local_seq);
CREATE INDEX IF NOT EXISTS events_by_change_block ON events (change_block, local_seq);
CREATE TRIGGER IF NOT EXISTS archived_events_are_never_deleted BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event archive is append-only: archived events cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS archived_events_are_never_changed BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event archive is append-only: archived events cannot be changed'); END;
