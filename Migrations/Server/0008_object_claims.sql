-- The objects a library's log holds, one row each: the first event about the object claims it.
-- The push rules ask whether an object is held (a creation may not name an object the library
-- holds, an addOnly device may only create objects it does not hold), and a push that defers
-- those checks to its write learns it from the claim it could not make. One row per object and
-- one probe per event, where the index of every event by object it replaces took a row per event.
CREATE TABLE server_objects (
    library_id INTEGER NOT NULL REFERENCES libraries (library_id),
    object_id  BLOB    NOT NULL CHECK (length(object_id) = 16),
    -- The server sequence of the first event about the object (its type gives the object's kind).
    first_seq  INTEGER NOT NULL,
    PRIMARY KEY (library_id, object_id)
) STRICT, WITHOUT ROWID;

INSERT INTO server_objects (library_id, object_id, first_seq)
SELECT library_id, object_id, min(server_seq) FROM server_events GROUP BY library_id, object_id;

-- Blob garbage collection asks whether an object was purged.
CREATE INDEX server_events_purges ON server_events (library_id, object_id) WHERE type = 'asset.purged';

DROP INDEX server_events_by_object;
