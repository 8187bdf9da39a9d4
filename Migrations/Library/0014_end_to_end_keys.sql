-- End-to-end encryption's keys as this device holds them. Never synced as rows: what other
-- devices need travels through the server's key store, wrapped (see e2e_outbox).
--
-- e2e_state: present only in an encrypted library.
--   device_secret:  this device's X25519 secret key (its public key is enrolled).
--   ring:           the library's key ring (LedgerCrypto's KeyRing), NULL until this device is
--                   enrolled by another one.
--   library_public: the library identity's public key, for short authentication codes.
--   key_cursor:     the server key store's position this device has read up to.
CREATE TABLE e2e_state (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    device_secret  BLOB    NOT NULL CHECK (length(device_secret) = 32),
    ring           BLOB,
    library_public BLOB    CHECK (library_public IS NULL OR length(library_public) = 32),
    key_cursor     INTEGER NOT NULL DEFAULT 0 CHECK (key_cursor >= 0)
) STRICT;

-- The key of each asset this device knows, by asset (key identifiers are 30 random bits: unique
-- per asset, not across a large library). key is NULL once the asset was purged: the key is
-- destroyed (crypto-shredding) and the row stays so that the key is never taken back from a
-- server that has not deleted it yet. blobs: the encrypted resource blobs, 64 bytes each (the
-- plaintext SHA-256, then the blob's name). own: the asset was made here (this device's record
-- of its blobs is the one that counts).
CREATE TABLE e2e_asset_keys (
    asset  BLOB    PRIMARY KEY CHECK (length(asset) = 16),
    key_id INTEGER NOT NULL,
    key    BLOB    CHECK (key IS NULL OR length(key) = 32),
    blobs  BLOB    NOT NULL DEFAULT x'',
    own    INTEGER NOT NULL DEFAULT 0 CHECK (own IN (0, 1))
) STRICT, WITHOUT ROWID;

-- Entries of the server's key store that this device still has to write (value) or delete
-- (value NULL): its public key, rings wrapped for devices it enrolled, asset keys, shreds.
CREATE TABLE e2e_outbox (
    name        TEXT    PRIMARY KEY,
    value       BLOB,
    create_only INTEGER NOT NULL DEFAULT 0 CHECK (create_only IN (0, 1))
) STRICT;
