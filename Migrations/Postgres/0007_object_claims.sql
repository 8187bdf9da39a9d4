-- The objects a library's log holds, one row each (Migrations/Server/0008_object_claims.sql): the
-- first event about the object claims it. A push that leaves its checks to its write claims the
-- objects its creations must find new, and learns from a claim it could not make that one was
-- held; the lookups of the push rules read the kind of an object from its first event. One row
-- per object and one probe per event, where the index of every event by object it replaces took a
-- row per event and a range read per lookup.
--
-- Like the log's rows (0005), claims carry no foreign key to their library: only a push inserts
-- them, with its library's row locked.
CREATE TABLE server_objects (
    library_id bigint NOT NULL,
    object_id  bytea  NOT NULL CHECK (length(object_id) = 16),
    -- The server sequence of the first event about the object (its type gives the object's kind).
    first_seq  bigint NOT NULL,
    PRIMARY KEY (library_id, object_id)
);

INSERT INTO server_objects (library_id, object_id, first_seq)
SELECT library_id, object_id, min(server_seq) FROM server_events GROUP BY library_id, object_id;

-- Blob garbage collection asks whether an object was purged.
CREATE INDEX server_events_purges ON server_events (library_id, object_id) WHERE type = 'asset.purged';

DROP INDEX server_events_by_object;
