-- Asset keys published in packs (LedgerCrypto's AssetKeyPack): the keys of the assets one change
-- block made go to the server's key store as a few entries (pack/BLOCK.N) rather than one entry
-- per asset.
--
-- e2e_packs: the names of the packs this device made or took keys from, by a small number (a
-- large library's keys each name one; a name would be 43 bytes a key).
CREATE TABLE e2e_packs (
    id   INTEGER PRIMARY KEY,
    name TEXT    NOT NULL UNIQUE
) STRICT;

-- e2e_asset_keys.pack: the pack (e2e_packs.id) that holds the asset's key in the server's key
-- store, when it is one; NULL for a key published on its own (asset/UUID). A purge of one of the
-- pack's assets publishes the keys of the others on their own and deletes the pack.
ALTER TABLE e2e_asset_keys ADD COLUMN pack INTEGER;
CREATE INDEX e2e_asset_keys_by_pack ON e2e_asset_keys (pack) WHERE pack IS NOT NULL;

-- e2e_outbox.carrier: the asset whose event must carry the entry to the server (in the push
-- batch that holds it): a purge's replacement of a pack by the entries of its other assets goes
-- up with the purge, in one transaction.
ALTER TABLE e2e_outbox ADD COLUMN carrier BLOB CHECK (carrier IS NULL OR length(carrier) = 16);
CREATE INDEX e2e_outbox_by_carrier ON e2e_outbox (carrier) WHERE carrier IS NOT NULL;
