-- The key store of end-to-end encrypted libraries: opaque entries the devices write for each
-- other (public keys, key rings sealed for a device or under the recovery key, asset keys sealed
-- under a library key). The server cannot open any of them. Deleting an asset key's entry is
-- part of crypto-shredding: the store deletes with secure_delete, so the bytes are overwritten.
-- seq: the library's count of writes when the entry was last written, so a device asks only for
-- what changed since it last looked (GET …/keys?after=N).
CREATE TABLE key_entries (
    library_id INTEGER NOT NULL REFERENCES libraries (library_id),
    name       TEXT    NOT NULL,
    value      BLOB    NOT NULL,
    written_by TEXT    NOT NULL,
    written_at INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (library_id, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX key_entries_by_seq ON key_entries (library_id, seq);
