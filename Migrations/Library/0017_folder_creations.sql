-- A folder is created once, like an asset: its row records the creation event folded (the
-- smallest identifier when several were) and whether two different creations were folded, a
-- conflict resolved as an asset's is (the earliest creation wins, the others are quarantined).
ALTER TABLE collection_lists ADD COLUMN creation_event BLOB CHECK (creation_event IS NULL OR length(creation_event) = 16);
ALTER TABLE collection_lists ADD COLUMN created_twice INTEGER NOT NULL DEFAULT 0;
