-- Event format 2, as in the live log (Library/0008): library binding and seal in the envelope.
ALTER TABLE events ADD COLUMN format INTEGER NOT NULL DEFAULT 1 CHECK (format IN (1, 2));
ALTER TABLE events ADD COLUMN library BLOB CHECK (library IS NULL OR length(library) = 16);
ALTER TABLE events ADD COLUMN key_id INTEGER NOT NULL DEFAULT 0 CHECK (key_id >= 0);
ALTER TABLE events ADD COLUMN nonce BLOB;
