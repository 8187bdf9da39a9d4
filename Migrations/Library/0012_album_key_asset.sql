-- An album's key asset (its cover), a last-writer-wins register like the title: the asset the
-- user chose (NULL: none chosen, or cleared). The cover shown is the key asset while it is a
-- member of the album, and the album's first asset otherwise (it was removed on another device,
-- deleted or hidden): the register keeps the choice, so the cover comes back when it returns.
ALTER TABLE albums ADD COLUMN key_asset BLOB CHECK (key_asset IS NULL OR length(key_asset) = 16);
ALTER TABLE albums ADD COLUMN key_asset_hlc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE albums ADD COLUMN key_asset_device TEXT NOT NULL DEFAULT '';
