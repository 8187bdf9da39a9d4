-- Folders of albums and folders (PhotoKit's collection lists), folded like albums: a title and a
-- parent that are last-writer-wins registers, a deletion flag. An album's parent is a register of
-- its own row. A parent of NULL is the top level.
--
-- The tree is read from the registers, never stored: a collection whose parent is not a live
-- folder is at the top level, and where concurrent moves made a cycle (a folder moved into
-- itself through another device's move), the folder of the cycle moved last (the greatest parent
-- stamp) is at the top level. Every device holds the same registers, so every device reads the
-- same tree.
CREATE TABLE collection_lists (
    list_id          BLOB    PRIMARY KEY CHECK (length(list_id) = 16),
    created          INTEGER NOT NULL DEFAULT 0,
    created_hlc      INTEGER NOT NULL DEFAULT 0,
    source_device    TEXT    NOT NULL DEFAULT '',
    title            TEXT    NOT NULL DEFAULT '',
    title_hlc        INTEGER NOT NULL DEFAULT 0,
    title_device     TEXT    NOT NULL DEFAULT '',
    parent           BLOB    CHECK (parent IS NULL OR length(parent) = 16),
    parent_hlc       INTEGER NOT NULL DEFAULT 0,
    parent_device    TEXT    NOT NULL DEFAULT '',
    deleted          INTEGER NOT NULL DEFAULT 0,
    modification_hlc INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

ALTER TABLE albums ADD COLUMN parent BLOB CHECK (parent IS NULL OR length(parent) = 16);
ALTER TABLE albums ADD COLUMN parent_hlc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE albums ADD COLUMN parent_device TEXT NOT NULL DEFAULT '';
