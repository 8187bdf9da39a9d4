-- Schema of the sync server's embedded store. The server works from event envelopes alone:
-- it stores payloads as opaque bytes and never reads them.

CREATE TABLE libraries (
    library_id INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL DEFAULT 0,
    last_hash  BLOB    NOT NULL DEFAULT (zeroblob(32))
) STRICT;

-- One row per device registered with a library: the highest device sequence stored, and the
-- highest server sequence the device has pulled (the compaction watermark is their minimum).
CREATE TABLE devices (
    library_id      INTEGER NOT NULL REFERENCES libraries (library_id),
    device_id       TEXT    NOT NULL,
    last_device_seq INTEGER NOT NULL DEFAULT 0,
    last_pulled_seq INTEGER NOT NULL DEFAULT 0,
    registered_at   INTEGER NOT NULL,
    last_seen_at    INTEGER,
    PRIMARY KEY (library_id, device_id)
) STRICT, WITHOUT ROWID;

-- Bearer tokens, stored as SHA-256 of the secret; bound to one library and one device.
CREATE TABLE tokens (
    token_id   INTEGER PRIMARY KEY,
    library_id INTEGER NOT NULL REFERENCES libraries (library_id),
    device_id  TEXT    NOT NULL,
    scope      TEXT    NOT NULL CHECK (scope IN ('readWrite', 'addOnly', 'readOnly')),
    token_hash BLOB    NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;

-- The per-library log in server order. Accepted events only; chain_hash chains them in
-- server order: chain_hash = SHA-256(previous chain_hash || canonical event bytes).
CREATE TABLE server_events (
    library_id     INTEGER NOT NULL REFERENCES libraries (library_id),
    server_seq     INTEGER NOT NULL,
    event_id       BLOB    NOT NULL CHECK (length(event_id) = 16),
    device_id      TEXT    NOT NULL,
    device_seq     INTEGER NOT NULL,
    hlc            INTEGER NOT NULL,
    change_block   BLOB    NOT NULL CHECK (length(change_block) = 16),
    object_id      BLOB    NOT NULL CHECK (length(object_id) = 16),
    type           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    payload        BLOB    NOT NULL,
    chain_hash     BLOB    NOT NULL CHECK (length(chain_hash) = 32),
    received_at    INTEGER NOT NULL,
    PRIMARY KEY (library_id, server_seq)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX server_events_by_id ON server_events (library_id, event_id);

-- Events refused for good, acknowledged to their device so its queue never blocks.
CREATE TABLE rejected_events (
    library_id  INTEGER NOT NULL REFERENCES libraries (library_id),
    event_id    BLOB    NOT NULL CHECK (length(event_id) = 16),
    device_id   TEXT    NOT NULL,
    device_seq  INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (library_id, event_id)
) STRICT, WITHOUT ROWID;

-- Content-addressed blobs held for a library (bytes live in files named by their hash).
CREATE TABLE blobs (
    library_id INTEGER NOT NULL REFERENCES libraries (library_id),
    sha256     BLOB    NOT NULL CHECK (length(sha256) = 32),
    size       INTEGER NOT NULL,
    stored_at  INTEGER NOT NULL,
    PRIMARY KEY (library_id, sha256)
) STRICT, WITHOUT ROWID;
