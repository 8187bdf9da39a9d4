-- Events that are kept in the log but not folded, with the reason: a projection like the views
-- (rebuild refolds it), the same on every device that holds the same events.
--
-- kind: 1 quarantined (invalid: it never folds), 2 needs a newer build (a type or schema version
-- this build does not read), 3 sealed (an encrypted payload this device holds no key for).
-- rule: 0 for a verdict on the event alone (it never changes), 1 for a verdict that depends on
-- other events (a second creation of an asset, an object created as both kinds): recomputed
-- when the events it depends on change.
CREATE TABLE quarantine (
    event_id BLOB    PRIMARY KEY CHECK (length(event_id) = 16),
    kind     INTEGER NOT NULL CHECK (kind IN (1, 2, 3)),
    rule     INTEGER NOT NULL DEFAULT 0 CHECK (rule IN (0, 1)),
    reason   TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

-- The creation event an asset row folded (the smallest identifier, when it folded several), and
-- whether it folded two different ones: a second creation of the asset, which only the earliest
-- survives. Both merge commutatively and idempotently, like every column. The partial index
-- stays empty unless that happens, so finding such assets after a fold costs nothing.
ALTER TABLE assets ADD COLUMN creation_event BLOB CHECK (creation_event IS NULL OR length(creation_event) = 16);
ALTER TABLE assets ADD COLUMN created_twice INTEGER NOT NULL DEFAULT 0 CHECK (created_twice IN (0, 1));
CREATE INDEX assets_created_twice ON assets (asset_id) WHERE created_twice = 1;

-- Snapshots taken before this migration have no quarantine: none existed.
CREATE TABLE IF NOT EXISTS snapshot_quarantine (
    event_id BLOB    PRIMARY KEY,
    kind     INTEGER NOT NULL,
    rule     INTEGER NOT NULL,
    reason   TEXT    NOT NULL
) STRICT, WITHOUT ROWID;
