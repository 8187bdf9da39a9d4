-- Snapshot retention (see the sync module's snapshot documentation). A purge makes every
-- snapshot before it unusable (it may hold the purged asset): `snapshot_floor` is the position
-- of the library's last purge, below which no snapshot is kept or recorded. Blobs of retired
-- snapshots wait in `retired_blobs` until the server has deleted their bytes from the blob store
-- (a crash in between leaves them queued, never forgotten).
ALTER TABLE libraries ADD COLUMN snapshot_floor INTEGER NOT NULL DEFAULT 0;

CREATE TABLE retired_blobs (
    sha256     BLOB    PRIMARY KEY CHECK (length(sha256) = 32),
    retired_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Whether any library holds a blob, for the queue above.
CREATE INDEX blobs_by_hash ON blobs (sha256);

-- Purges stored before this migration.
UPDATE libraries SET snapshot_floor = coalesce(
    (SELECT max(server_seq) FROM server_events e WHERE e.library_id = libraries.library_id AND e.type = 'asset.purged'), 0);

CREATE TEMP TABLE stale_snapshots AS
    SELECT s.library_id, s.position, s.sha256 FROM snapshots s JOIN libraries l ON l.library_id = s.library_id
    WHERE s.position < l.snapshot_floor;
DELETE FROM snapshots WHERE (library_id, position, sha256) IN (SELECT library_id, position, sha256 FROM stale_snapshots);
DELETE FROM blobs WHERE (library_id, sha256) IN (SELECT library_id, sha256 FROM stale_snapshots)
    AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.library_id = blobs.library_id AND s.sha256 = blobs.sha256);
INSERT INTO retired_blobs (sha256, retired_at) SELECT DISTINCT sha256, 0 FROM stale_snapshots WHERE true ON CONFLICT DO NOTHING;
DROP TABLE stale_snapshots;
