-- Blob garbage collection. The server cannot read payloads (they may be sealed), so the writing
-- devices declare, before they push events, which blobs the events about each object refer to.
-- A blob stays while a reference keeps it: its object not purged, and either events about the
-- object stored or the reference declared within the grace period (an upload whose events are
-- not pushed yet). A blob without any reference (from a client that does not declare them) is
-- never collected.
CREATE TABLE blob_references (
    library_id  INTEGER NOT NULL REFERENCES libraries (library_id),
    sha256      BLOB    NOT NULL CHECK (length(sha256) = 32),
    object_id   BLOB    NOT NULL CHECK (length(object_id) = 16),
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (library_id, sha256, object_id)
) STRICT, WITHOUT ROWID;

-- Whether the log holds events about an object, or its purge: server_events_by_object.
