-- The manual order of the albums and folders in a folder (PhotoKit's insert, move and remove of
-- a collection list's child collections at indexes): each album and folder has a position key,
-- a fractional index like an album member's, in a last-writer-wins register of its own (apart
-- from its parent, so reordering never undoes a move made on another device). A folder lists
-- what it holds by (position key, creation date, identifier); a collection without a key (made
-- before keys, or placed by a device that does not write them) sorts before the keyed ones.
ALTER TABLE albums ADD COLUMN position TEXT;
ALTER TABLE albums ADD COLUMN position_hlc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE albums ADD COLUMN position_device TEXT NOT NULL DEFAULT '';
ALTER TABLE collection_lists ADD COLUMN position TEXT;
ALTER TABLE collection_lists ADD COLUMN position_hlc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE collection_lists ADD COLUMN position_device TEXT NOT NULL DEFAULT '';
