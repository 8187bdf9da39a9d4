-- Snapshots of a library's folded state (Migrations/Server/0005_snapshots.sql): a readWrite
-- device's claim that the fold of the log up to `position` is the blob `sha256`, checked by the
-- server against its chain at that position, verified by new devices by refolding the history.
CREATE TABLE snapshots (
    library_id  bigint NOT NULL REFERENCES libraries (library_id),
    position    bigint NOT NULL CHECK (position >= 1),
    sha256      bytea  NOT NULL CHECK (length(sha256) = 32),
    chain_hash  bytea  NOT NULL CHECK (length(chain_hash) = 32),
    size        bigint NOT NULL CHECK (size >= 0),
    device_id   text   NOT NULL,
    recorded_at bigint NOT NULL,
    PRIMARY KEY (library_id, position, sha256)
);
