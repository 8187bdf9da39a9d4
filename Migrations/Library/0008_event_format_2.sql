-- Event format 2 (LedgerCore's Event): the envelope names the library the event belongs to and,
-- for a payload sealed with end-to-end encryption, the key and nonce. Events keep the format
-- they were made in: format 1 rows have no library, key 0 and no nonce. The row holds every
-- envelope field, so the canonical bytes (and the hash chains over them) can be rebuilt from it.
ALTER TABLE events ADD COLUMN format INTEGER NOT NULL DEFAULT 1 CHECK (format IN (1, 2));
ALTER TABLE events ADD COLUMN library BLOB CHECK (library IS NULL OR length(library) = 16);
ALTER TABLE events ADD COLUMN key_id INTEGER NOT NULL DEFAULT 0 CHECK (key_id >= 0);
ALTER TABLE events ADD COLUMN nonce BLOB;

DROP TRIGGER events_are_never_changed;
CREATE TRIGGER events_are_never_changed BEFORE UPDATE ON events
WHEN OLD.server_seq IS NOT NULL
  OR NEW.server_seq IS NULL
  OR NEW.local_seq IS NOT OLD.local_seq
  OR NEW.event_id IS NOT OLD.event_id
  OR NEW.device_id IS NOT OLD.device_id
  OR NEW.device_seq IS NOT OLD.device_seq
  OR NEW.hlc IS NOT OLD.hlc
  OR NEW.change_block IS NOT OLD.change_block
  OR NEW.object_id IS NOT OLD.object_id
  OR NEW.type IS NOT OLD.type
  OR NEW.schema_version IS NOT OLD.schema_version
  OR NEW.payload IS NOT OLD.payload
  OR NEW.hash IS NOT OLD.hash
  OR NEW.server_chain_hash IS NOT OLD.server_chain_hash
  OR NEW.format IS NOT OLD.format
  OR NEW.library IS NOT OLD.library
  OR NEW.key_id IS NOT OLD.key_id
  OR NEW.nonce IS NOT OLD.nonce
BEGIN
    SELECT RAISE(ABORT, 'the event log is append-only: only server_seq may be set, and only once');
END;
