-- Key packs list their members instead of an index of e2e_asset_keys by pack: a new device writes
-- the rows of a large library's keys (tens of thousands) before its first pulled page applies,
-- and maintaining e2e_asset_keys_by_pack for them doubled that write. A purge reads the keys of
-- the pack that held the purged key from the pack's list instead.
--
-- e2e_packs.members: the assets whose keys were recorded in the pack, 16 bytes each in UUID
-- order (a key may have left the pack since: e2e_asset_keys.pack says where it is). NULL for a
-- pack recorded before this migration: its keys are found by reading e2e_asset_keys.
ALTER TABLE e2e_packs ADD COLUMN members BLOB CHECK (members IS NULL OR length(members) % 16 = 0);
DROP INDEX e2e_asset_keys_by_pack;
