-- The content hash of each event (SHA-256 of its canonical bytes), checked when the event was
-- pushed and kept so that pulls send it without hashing every event again. Events stored before
-- this migration have none; the server computes theirs when it sends them.
ALTER TABLE server_events ADD COLUMN content_hash BLOB CHECK (content_hash IS NULL OR length(content_hash) = 32);
