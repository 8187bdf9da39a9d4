-- The log's rows no longer carry a foreign key to their library. Only a push inserts them, and a
-- push holds its library's row locked (`SELECT … FOR NO KEY UPDATE`, after reading it) until it
-- commits; no library is ever deleted. The key checked each inserted event on its own, with a
-- `SELECT … FOR KEY SHARE` of that same row: about a sixth of the insert's time, for nothing.
-- (The embedded store keeps its key: there the check is a lookup in the same process.)
ALTER TABLE server_events DROP CONSTRAINT server_events_library_id_fkey;
