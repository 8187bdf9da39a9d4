-- Event format 2 (LedgerCore's Event) and the rules that need the server's log by object.
--
-- Every library gets an identifier (library_uuid): format-2 events name the library they belong
-- to, and the server refuses an event that names another one. A stored event is either unbound
-- (bound = 0: format 1, or made before its device learned the library's identifier) or bound to
-- its library (bound = 1); the library's identifier is not repeated in every row. key_id and
-- nonce hold the seal of an end-to-end encrypted payload (0 and NULL for a plain one).
ALTER TABLE libraries ADD COLUMN library_uuid BLOB CHECK (library_uuid IS NULL OR length(library_uuid) = 16);
UPDATE libraries SET library_uuid = randomblob(16) WHERE library_uuid IS NULL;
CREATE UNIQUE INDEX libraries_by_uuid ON libraries (library_uuid);

ALTER TABLE server_events ADD COLUMN format INTEGER NOT NULL DEFAULT 1 CHECK (format IN (1, 2));
ALTER TABLE server_events ADD COLUMN bound INTEGER NOT NULL DEFAULT 0 CHECK (bound IN (0, 1));
ALTER TABLE server_events ADD COLUMN key_id INTEGER NOT NULL DEFAULT 0 CHECK (key_id >= 0);
ALTER TABLE server_events ADD COLUMN nonce BLOB;

-- The events of one object, for the push rules: a creation may not name an object the library
-- holds already (as another asset, or as an object of the other kind), and an addOnly device may
-- only create objects the library does not hold.
CREATE INDEX server_events_by_object ON server_events (library_id, object_id);
