-- This device's state as a replica of a shared library, typed, in one row (before: string keys
-- holding bytes in device_settings). Never synced.
--
-- library:        the shared library's identifier, learned from the server; new events name it
--                 (NULL until the first contact: events made before are unbound).
-- remote_url, remote_token: where the library syncs, and this device's token.
-- scope:          what the token allows, as the server last said (NULL before the first contact).
-- pull_cursor:    the server sequence this device has pulled up to.
-- last_sync:      when the last sync finished (Unix milliseconds).
-- folded_schema:  the event schema the projections were folded with (EventSchema.fingerprint):
--                 when the build reads more, events kept for a newer build are folded again.
-- recorded_device: the device name `photoledger init` recorded.
CREATE TABLE replica_state (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    library         BLOB    CHECK (library IS NULL OR length(library) = 16),
    remote_url      TEXT,
    remote_token    TEXT,
    scope           TEXT    CHECK (scope IS NULL OR scope IN ('readWrite', 'addOnly', 'readOnly')),
    pull_cursor     INTEGER NOT NULL DEFAULT 0 CHECK (pull_cursor >= 0),
    last_sync       INTEGER,
    folded_schema   TEXT    NOT NULL DEFAULT '',
    recorded_device TEXT
) STRICT;

INSERT INTO replica_state (id, remote_url, remote_token, pull_cursor, last_sync, recorded_device)
VALUES (
    1,
    (SELECT CAST(value AS TEXT) FROM device_settings WHERE key = 'sync.remote.url'),
    (SELECT CAST(value AS TEXT) FROM device_settings WHERE key = 'sync.remote.token'),
    coalesce((SELECT CAST(CAST(value AS TEXT) AS INTEGER) FROM device_settings WHERE key = 'sync.cursor'), 0),
    (SELECT CAST(CAST(value AS TEXT) AS INTEGER) FROM device_settings WHERE key = 'sync.lastSync'),
    (SELECT CAST(value AS TEXT) FROM device_settings WHERE key = 'cli.device'));

DELETE FROM device_settings WHERE key IN ('sync.remote.url', 'sync.remote.token', 'sync.cursor', 'sync.lastSync', 'cli.device');
