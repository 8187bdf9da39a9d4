-- Projections of the event log: the asset and album views. Every row is a commutative,
-- idempotent fold of the events about it: scalar fields are last-writer-wins registers with
-- their (hlc, device) stamp beside them, deletion and membership are causal-length counters
-- (merge = max), flags that only ever turn on merge with OR. Folding the same events in any
-- order, with duplicates, gives byte-identical rows; `rebuild` refolds the log into them.
-- Rows may exist before the event that creates their object ("created" = 0): events that
-- arrive before their target are held there and become visible when it arrives.

CREATE TABLE assets (
    asset_id             BLOB    PRIMARY KEY CHECK (length(asset_id) = 16),
    created              INTEGER NOT NULL DEFAULT 0,
    created_hlc          INTEGER NOT NULL DEFAULT 0,
    source_device        TEXT    NOT NULL DEFAULT '',
    media_type           INTEGER NOT NULL DEFAULT 0,
    media_subtypes       INTEGER NOT NULL DEFAULT 0,
    pixel_width          INTEGER NOT NULL DEFAULT 0,
    pixel_height         INTEGER NOT NULL DEFAULT 0,
    duration             REAL    NOT NULL DEFAULT 0,
    creation_date        REAL,
    creation_date_hlc    INTEGER NOT NULL DEFAULT 0,
    creation_date_device TEXT    NOT NULL DEFAULT '',
    latitude             REAL,
    longitude            REAL,
    altitude             REAL,
    location_hlc         INTEGER NOT NULL DEFAULT 0,
    location_device      TEXT    NOT NULL DEFAULT '',
    favorite             INTEGER NOT NULL DEFAULT 0,
    favorite_hlc         INTEGER NOT NULL DEFAULT 0,
    favorite_device      TEXT    NOT NULL DEFAULT '',
    hidden               INTEGER NOT NULL DEFAULT 0,
    hidden_hlc           INTEGER NOT NULL DEFAULT 0,
    hidden_device        TEXT    NOT NULL DEFAULT '',
    trash_cl             INTEGER NOT NULL DEFAULT 0,
    trashed_hlc          INTEGER NOT NULL DEFAULT 0,
    purged               INTEGER NOT NULL DEFAULT 0,
    content_sha256       BLOB,
    adjustment_sha256    BLOB,
    adjustment_format    TEXT,
    content_hlc          INTEGER NOT NULL DEFAULT 0,
    content_device       TEXT    NOT NULL DEFAULT '',
    modification_hlc     INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
CREATE INDEX assets_by_creation_date ON assets (creation_date, asset_id) WHERE created = 1;

-- The resources an asset was created with (immutable after creation).
CREATE TABLE asset_resources (
    asset_id          BLOB    NOT NULL,
    resource_index    INTEGER NOT NULL,
    type              INTEGER NOT NULL,
    sha256            BLOB    NOT NULL CHECK (length(sha256) = 32),
    size              INTEGER NOT NULL,
    uniform_type      TEXT    NOT NULL,
    original_filename TEXT    NOT NULL,
    PRIMARY KEY (asset_id, resource_index)
) STRICT, WITHOUT ROWID;
CREATE INDEX asset_resources_by_hash ON asset_resources (sha256);

-- Every resource any event refers to (creations and edits, winning or not): the set the
-- resource store's garbage collection must keep.
CREATE TABLE referenced_resources (
    sha256       BLOB    PRIMARY KEY CHECK (length(sha256) = 32),
    size         INTEGER NOT NULL,
    uniform_type TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE albums (
    album_id         BLOB    PRIMARY KEY CHECK (length(album_id) = 16),
    created          INTEGER NOT NULL DEFAULT 0,
    created_hlc      INTEGER NOT NULL DEFAULT 0,
    source_device    TEXT    NOT NULL DEFAULT '',
    subtype          INTEGER NOT NULL DEFAULT 2,
    title            TEXT    NOT NULL DEFAULT '',
    title_hlc        INTEGER NOT NULL DEFAULT 0,
    title_device     TEXT    NOT NULL DEFAULT '',
    deleted          INTEGER NOT NULL DEFAULT 0,
    merged_into      BLOB,
    modification_hlc INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

-- Membership of an asset in an album: present while the causal length is odd. The position is a
-- fractional-index key (a last-writer-wins register); members sort by (position, asset_id).
CREATE TABLE album_members (
    album_id        BLOB    NOT NULL,
    asset_id        BLOB    NOT NULL,
    cl              INTEGER NOT NULL DEFAULT 0,
    position        TEXT    NOT NULL DEFAULT '',
    position_hlc    INTEGER NOT NULL DEFAULT 0,
    position_device TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (album_id, asset_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX album_members_in_order ON album_members (album_id, position, asset_id);
CREATE INDEX album_members_by_asset ON album_members (asset_id);

-- Settings of this device only (authorization, limited selection, sync cursor): not events,
-- never synced.
CREATE TABLE device_settings (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE limited_selection (
    asset_id BLOB PRIMARY KEY
) STRICT, WITHOUT ROWID;
