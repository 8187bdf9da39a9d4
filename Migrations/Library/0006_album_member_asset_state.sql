-- Each membership row carries what fetching an album needs of its asset, so an album is read in
-- order from one index without looking up a single asset row:
--   asset_state   0 = not shown (not created yet, purged, or in Recently Deleted),
--                 1 = hidden (shown only when hidden assets are asked for), 2 = shown;
--   asset_version the asset's modification_hlc (what change details compare).
-- Both are functions of the asset's row, kept equal to it by the fold: a membership row takes
-- them from the asset when written, and an asset row written passes them on to its memberships.
ALTER TABLE album_members ADD COLUMN asset_state INTEGER NOT NULL DEFAULT 0;
ALTER TABLE album_members ADD COLUMN asset_version INTEGER NOT NULL DEFAULT 0;

UPDATE album_members
SET asset_state = a.state, asset_version = a.version
FROM (
    SELECT asset_id,
        CASE WHEN created = 1 AND purged = 0 AND trash_cl % 2 = 1 THEN 2 - hidden ELSE 0 END AS state,
        modification_hlc AS version
    FROM assets
) AS a
WHERE a.asset_id = album_members.asset_id;

DROP INDEX album_members_in_order;
CREATE INDEX album_members_in_order ON album_members (album_id, position, asset_id, cl, asset_state, asset_version);
