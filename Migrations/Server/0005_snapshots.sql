-- Snapshots of a library's folded state (see the sync module's snapshot documentation): a
-- readWrite device's claim that the fold of the log up to server position `position` is the
-- blob `sha256`. The server checks the position and the chain value against its log and that it
-- holds the blob; it cannot read the blob (end-to-end encrypted libraries) and never checks the
-- fold: a new device refolds the history to verify it.
CREATE TABLE snapshots (
    library_id  INTEGER NOT NULL REFERENCES libraries (library_id),
    position    INTEGER NOT NULL CHECK (position >= 1),
    sha256      BLOB    NOT NULL CHECK (length(sha256) = 32),
    chain_hash  BLOB    NOT NULL CHECK (length(chain_hash) = 32),
    size        INTEGER NOT NULL CHECK (size >= 0),
    device_id   TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (library_id, position, sha256)
) STRICT, WITHOUT ROWID;
