-- Asset keys without CHECK constraints on their rows: a new device writes the row of every key
-- of a large library before its first pulled page applies (50,000 rows for 50,000 assets), and
-- evaluating the three checks made that write half as long again (about 50 ms against 33 ms for
-- 50,000 rows, here). The values are checked where they are made and where they are read: the
-- asset is written from a UUID (16 bytes), the key from a SecretKey (32 bytes); a row read back
-- with an asset of another length names no asset, and a key of another length fails the loading
-- of the library's keys with an error. STRICT still refuses values of another type.
CREATE TABLE e2e_asset_keys_unchecked (
    asset  BLOB    PRIMARY KEY,
    key_id INTEGER NOT NULL,
    key    BLOB,
    blobs  BLOB    NOT NULL DEFAULT x'',
    own    INTEGER NOT NULL DEFAULT 0,
    pack   INTEGER
) STRICT, WITHOUT ROWID;
INSERT INTO e2e_asset_keys_unchecked (asset, key_id, key, blobs, own, pack)
    SELECT asset, key_id, key, blobs, own, pack FROM e2e_asset_keys;
DROP TABLE e2e_asset_keys;
ALTER TABLE e2e_asset_keys_unchecked RENAME TO e2e_asset_keys;
