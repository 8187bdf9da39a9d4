-- Events the sync server refused for good (acknowledged as rejected, with its reason). They stay
-- in the log, where the device made them, but leave the sync outbox so it never blocks.
CREATE TABLE sync_rejections (
    event_id    BLOB    PRIMARY KEY CHECK (length(event_id) = 16),
    reason      TEXT    NOT NULL,
    rejected_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
