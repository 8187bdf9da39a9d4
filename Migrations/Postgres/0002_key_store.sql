-- The key store of end-to-end encrypted libraries (Migrations/Server/0004_key_store.sql): opaque
-- entries the devices write for each other; the server cannot open any of them. A deleted entry
-- (crypto-shredding) stays in the table's dead tuples until VACUUM reclaims them. seq orders the
-- writes of one library: writers lock the library's row, so a reader never misses a write that
-- commits later with a smaller seq.
CREATE TABLE key_entries (
    library_id bigint NOT NULL REFERENCES libraries (library_id),
    name       text   NOT NULL,
    value      bytea  NOT NULL,
    written_by text   NOT NULL,
    written_at bigint NOT NULL,
    seq        bigint NOT NULL,
    PRIMARY KEY (library_id, name)
);
CREATE INDEX key_entries_by_seq ON key_entries (library_id, seq);
