-- Each membership row carries what fetching an album needs of its asset, so an album is read in
-- order from one index without looking up a single asset row:
--   asset_state   0 = not shown (not created yet, purged, or in Recently Deleted),
--                 1 = hidden (shown only when hidden assets are asked for), 2 = shown;
--   asset_version the asset's modification_hlc (what change details compare).
-- Both are functions of the asset's row, kept equal to it by the fold: a membership row takes
-- them from the asset when written, and an asset row written passes them on to its memberships.
--
-- The table is keyed by (asset_id, album_id): the key then serves the lookups of an asset's
-- memberships, which needed an index of their own before, and each membership written updates
-- two B-trees instead of three.
CREATE TABLE album_members_by_asset_key (
    album_id        BLOB    NOT NULL,
    asset_id        BLOB    NOT NULL,
    cl              INTEGER NOT NULL DEFAULT 0,
    position        TEXT    NOT NULL DEFAULT '',
    position_hlc    INTEGER NOT NULL DEFAULT 0,
    position_device TEXT    NOT NULL DEFAULT '',
    asset_state     INTEGER NOT NULL DEFAULT 0,
    asset_version   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (asset_id, album_id)
) STRICT, WITHOUT ROWID;

INSERT INTO album_members_by_asset_key
    (album_id, asset_id, cl, position, position_hlc, position_device, asset_state, asset_version)
SELECT m.album_id, m.asset_id, m.cl, m.position, m.position_hlc, m.position_device,
    CASE WHEN a.created = 1 AND a.purged = 0 AND a.trash_cl % 2 = 1 THEN 2 - a.hidden ELSE 0 END,
    coalesce(a.modification_hlc, 0)
FROM album_members m LEFT JOIN assets a ON a.asset_id = m.asset_id;

DROP TABLE album_members;
ALTER TABLE album_members_by_asset_key RENAME TO album_members;
CREATE INDEX album_members_in_order ON album_members (album_id, position, asset_id, cl, asset_state, asset_version);
