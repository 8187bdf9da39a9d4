-- Blob garbage collection (Migrations/Server/0007_blob_references.sql): the blobs the events
-- about each object refer to, as the writing devices declare them before they push the events.
CREATE TABLE blob_references (
    library_id  bigint NOT NULL REFERENCES libraries (library_id),
    sha256      bytea  NOT NULL CHECK (length(sha256) = 32),
    object_id   bytea  NOT NULL CHECK (length(object_id) = 16),
    recorded_at bigint NOT NULL,
    PRIMARY KEY (library_id, sha256, object_id)
);

-- Whether the log holds events about an object, or its purge: server_events_by_object.
