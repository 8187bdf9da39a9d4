-- The server's chain value of a pulled event that is appended with it is kept in the event's own
-- row (server_chain_hash), set with the row and never changed, instead of in a server_chain row
-- of its own: one B-tree write fewer per pulled event. server_chain keeps the values reported
-- for every other position: events not held here, events held before their page arrived (this
-- device's own), and events that compaction moved to the archive (their values are copied to
-- server_chain before their rows leave). server_chain_entries reads both.
ALTER TABLE events ADD COLUMN server_chain_hash BLOB CHECK (server_chain_hash IS NULL OR length(server_chain_hash) = 32);

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
BEGIN
    SELECT RAISE(ABORT, 'the event log is append-only: only server_seq may be set, and only once');
END;

CREATE VIEW server_chain_entries (server_seq, event_id, chain_hash, held) AS
    SELECT server_seq, event_id, chain_hash, held FROM server_chain
    UNION ALL
    SELECT server_seq, event_id, server_chain_hash, 1 FROM events WHERE server_chain_hash IS NOT NULL;
