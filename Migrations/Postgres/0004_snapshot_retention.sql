-- Snapshot retention (Migrations/Server/0006_snapshot_retention.sql): `snapshot_floor` is the
-- position of the library's last purge, below which no snapshot is kept or recorded; blobs of
-- retired snapshots wait in `retired_blobs` until their bytes are deleted from the blob store.
ALTER TABLE libraries ADD COLUMN snapshot_floor bigint NOT NULL DEFAULT 0;

CREATE TABLE retired_blobs (
    sha256     bytea  PRIMARY KEY CHECK (length(sha256) = 32),
    retired_at bigint NOT NULL
);

CREATE INDEX blobs_by_hash ON blobs (sha256);

UPDATE libraries SET snapshot_floor = coalesce(
    (SELECT max(server_seq) FROM server_events e WHERE e.library_id = libraries.library_id AND e.type = 'asset.purged'), 0);

WITH stale AS (
    DELETE FROM snapshots s USING libraries l
    WHERE l.library_id = s.library_id AND s.position < l.snapshot_floor
    RETURNING s.library_id, s.sha256
), unheld AS (
    DELETE FROM blobs b USING stale
    WHERE b.library_id = stale.library_id AND b.sha256 = stale.sha256
    RETURNING b.sha256
)
INSERT INTO retired_blobs (sha256, retired_at) SELECT DISTINCT sha256, 0 FROM unheld ON CONFLICT DO NOTHING;
