-- Schema of the sync server's PostgreSQL store: the same tables as the embedded store
-- (Migrations/Server, at its version 3), for several server processes sharing one database.
-- The server works from event envelopes alone: payloads are opaque bytes it never reads.

CREATE TABLE libraries (
    library_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text   NOT NULL UNIQUE,
    library_uuid bytea  NOT NULL UNIQUE CHECK (length(library_uuid) = 16),
    created_at   bigint NOT NULL,
    -- The head of the library's log: a push locks this row (SELECT … FOR UPDATE), so server
    -- sequences have no gap and no duplicate with several servers writing at once.
    last_seq     bigint NOT NULL DEFAULT 0,
    last_hash    bytea  NOT NULL DEFAULT decode(repeat('00', 32), 'hex') CHECK (length(last_hash) = 32)
);

-- One row per device registered with a library: the highest device sequence stored, and the
-- highest server sequence the device has pulled (the compaction watermark is their minimum).
CREATE TABLE devices (
    library_id      bigint NOT NULL REFERENCES libraries (library_id),
    device_id       text   NOT NULL,
    last_device_seq bigint NOT NULL DEFAULT 0,
    last_pulled_seq bigint NOT NULL DEFAULT 0,
    registered_at   bigint NOT NULL,
    last_seen_at    bigint,
    PRIMARY KEY (library_id, device_id)
);

-- Bearer tokens, stored as SHA-256 of the secret; bound to one library and one device.
CREATE TABLE tokens (
    token_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    library_id bigint NOT NULL REFERENCES libraries (library_id),
    device_id  text   NOT NULL,
    scope      text   NOT NULL CHECK (scope IN ('readWrite', 'addOnly', 'readOnly')),
    token_hash bytea  NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at bigint NOT NULL,
    revoked_at bigint
);

-- The per-library log in server order; chain_hash = SHA-256(previous chain_hash || canonical
-- event bytes). bound: the event names its library (format 2); key_id and nonce: the seal of an
-- end-to-end encrypted payload (0 and NULL for a plain one).
CREATE TABLE server_events (
    library_id     bigint  NOT NULL REFERENCES libraries (library_id),
    server_seq     bigint  NOT NULL,
    event_id       bytea   NOT NULL CHECK (length(event_id) = 16),
    device_id      text    NOT NULL,
    device_seq     bigint  NOT NULL,
    hlc            bigint  NOT NULL,
    change_block   bytea   NOT NULL CHECK (length(change_block) = 16),
    object_id      bytea   NOT NULL CHECK (length(object_id) = 16),
    type           text    NOT NULL,
    schema_version bigint  NOT NULL,
    payload        bytea   NOT NULL,
    chain_hash     bytea   NOT NULL CHECK (length(chain_hash) = 32),
    received_at    bigint  NOT NULL,
    content_hash   bytea   CHECK (content_hash IS NULL OR length(content_hash) = 32),
    format         bigint  NOT NULL CHECK (format IN (1, 2)),
    bound          boolean NOT NULL,
    key_id         bigint  NOT NULL CHECK (key_id >= 0),
    nonce          bytea,
    PRIMARY KEY (library_id, server_seq)
);
CREATE UNIQUE INDEX server_events_by_id ON server_events (library_id, event_id);
-- The events of one object in server order, for the push rules (creations, addOnly devices).
CREATE INDEX server_events_by_object ON server_events (library_id, object_id, server_seq);

-- Events refused for good, acknowledged to their device so its queue never blocks.
CREATE TABLE rejected_events (
    library_id  bigint NOT NULL REFERENCES libraries (library_id),
    event_id    bytea  NOT NULL CHECK (length(event_id) = 16),
    device_id   text   NOT NULL,
    device_seq  bigint NOT NULL,
    reason      text   NOT NULL,
    received_at bigint NOT NULL,
    PRIMARY KEY (library_id, event_id)
);

-- Content-addressed blobs held for a library (the bytes live in the blob store).
CREATE TABLE blobs (
    library_id bigint NOT NULL REFERENCES libraries (library_id),
    sha256     bytea  NOT NULL CHECK (length(sha256) = 32),
    size       bigint NOT NULL,
    stored_at  bigint NOT NULL,
    PRIMARY KEY (library_id, sha256)
);
