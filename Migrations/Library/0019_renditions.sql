-- Renditions recorded for the other devices (asset.renditionRecorded events): a device that made
-- a thumbnail of a resource records it, with its own bytes stored and synced as a derived
-- resource, so that a device without the original can show the asset. Rows are only ever added
-- (a set union: two devices may record different bytes for the same source and box; readers
-- take the smallest hash). A rendition counts while its source is shown by an asset that is not
-- purged; the others are garbage.
CREATE TABLE asset_renditions (
    asset_id      BLOB    NOT NULL,
    source_sha256 BLOB    NOT NULL CHECK (length(source_sha256) = 32),
    box           INTEGER NOT NULL,
    fills         INTEGER NOT NULL,
    sha256        BLOB    NOT NULL CHECK (length(sha256) = 32),
    size          INTEGER NOT NULL,
    png           INTEGER NOT NULL,
    PRIMARY KEY (asset_id, source_sha256, box, fills, sha256)
) STRICT, WITHOUT ROWID;
CREATE INDEX asset_renditions_by_source ON asset_renditions (source_sha256, box, fills);
