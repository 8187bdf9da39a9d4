import Foundation
import LedgerStore

/// The objects a set of events touched, for change notifications.
struct TouchedObjects: Sendable {
    var assets: Set<UUID> = []
    var albums: Set<UUID> = []

    var isEmpty: Bool { assets.isEmpty && albums.isEmpty }

    mutating func formUnion(_ other: TouchedObjects) {
        assets.formUnion(other.assets)
        albums.formUnion(other.albums)
    }
}

/// The fold of events into the projection tables (see Migrations/Library/0002_projections.sql).
///
/// Every statement is an upsert whose merge is commutative and idempotent: last-writer-wins
/// registers compare `(hlc, device)` stamps, causal lengths and timestamps merge with `max`,
/// flags with OR, the merge winner with `min`. So the tables depend only on the set of events,
/// never on their order or on duplicates, and an event whose target has not arrived yet leaves
/// an invisible row (`created = 0`) that the target's creation completes.
struct Projection {
    let database: Database

    init(_ database: Database) { self.database = database }

    /// Folds one stored event into the projections; returns what it touched.
    @discardableResult
    func apply(_ event: Event) throws -> TouchedObjects {
        guard let change = try ChangeEvent.decode(type: event.type, schemaVersion: event.schemaVersion, payload: event.payload) else {
            return TouchedObjects()
        }
        return try apply(change, of: event)
    }

    /// Folds a decoded change of `event` into the projections.
    @discardableResult
    func apply(_ change: ChangeEvent, of event: Event) throws -> TouchedObjects {
        let id = event.object.bytes
        let hlc = Int64(bitPattern: event.timestamp.rawValue)
        let device = event.device.rawValue
        switch change {
        case .assetCreated(let c):
            try database.execute(Self.assetCreatedSQL, [
                id, hlc, device, c.mediaType.rawValue, c.mediaSubtypes.rawValue, c.pixelWidth, c.pixelHeight, c.duration,
                c.creationDate?.timeIntervalSince1970, c.location?.latitude, c.location?.longitude, c.location?.altitude,
                c.isFavorite, c.isHidden,
            ])
            for (index, resource) in c.resources.enumerated() {
                try database.execute(Self.resourceSQL, [id, index, resource.type.rawValue, resource.sha256, resource.size, resource.uniformType, resource.filename])
                try database.execute(Self.referenceSQL, [resource.sha256, resource.size, resource.uniformType])
            }
            return TouchedObjects(assets: [event.object])
        case .assetChanged(let c):
            func stamp(_ isSet: Bool) -> [any SQLBindable] { isSet ? [hlc, device] : [Int64(0), ""] }
            let date = c.creationDate.flatMap { $0 }?.timeIntervalSince1970
            let location = c.location.flatMap { $0 }
            try database.execute(
                Self.assetChangedSQL,
                [id, date] + stamp(c.creationDate != nil) + [location?.latitude, location?.longitude, location?.altitude]
                    + stamp(c.location != nil) + [c.isFavorite ?? false] + stamp(c.isFavorite != nil) + [c.isHidden ?? false]
                    + stamp(c.isHidden != nil) + [hlc])
            return TouchedObjects(assets: [event.object])
        case .assetDeleted(let cl):
            try database.execute(Self.assetTrashSQL, [id, cl, hlc, hlc])
            return TouchedObjects(assets: [event.object])
        case .assetRecovered(let cl):
            try database.execute(Self.assetTrashSQL, [id, cl, Int64(0), hlc])
            return TouchedObjects(assets: [event.object])
        case .assetPurged:
            try database.execute(Self.assetPurgedSQL, [id, hlc])
            return TouchedObjects(assets: [event.object])
        case .assetContentEdited(let edit):
            try database.execute(Self.assetContentSQL, [id, edit.rendered?.sha256, edit.adjustment?.sha256, edit.adjustmentFormat, hlc, device, hlc])
            for record in [edit.rendered, edit.adjustment].compactMap({ $0 }) {
                try database.execute(Self.referenceSQL, [record.sha256, record.size, record.uniformType])
            }
            return TouchedObjects(assets: [event.object])
        case .albumCreated(let title, let subtype):
            try database.execute(Self.albumCreatedSQL, [id, hlc, device, subtype, title, hlc, device, hlc])
            return TouchedObjects(albums: [event.object])
        case .albumRenamed(let title):
            try database.execute(Self.albumRenamedSQL, [id, title, hlc, device, hlc])
            return TouchedObjects(albums: [event.object])
        case .albumDeleted:
            try database.execute(Self.albumDeletedSQL, [id, hlc])
            return TouchedObjects(albums: [event.object])
        case .albumMerged(let winner):
            try database.execute(Self.albumMergedSQL, [id, winner.bytes, hlc])
            try database.execute(Self.albumTouchedSQL, [winner.bytes, hlc])
            return TouchedObjects(albums: [event.object, winner])
        case .albumMembersChanged(_, let entries):
            try database.execute(Self.albumTouchedSQL, [id, hlc])
            var touched = TouchedObjects(albums: [event.object])
            for entry in entries {
                let position: [any SQLBindable] = entry.position.map { [$0, hlc, device] } ?? ["", Int64(0), ""]
                try database.execute(Self.memberSQL, [id, entry.asset.bytes, entry.causalLength] + position)
                touched.assets.insert(entry.asset)
            }
            return touched
        }
    }

    /// The projection tables, in the order a dump lists them.
    static let tables = ["assets", "asset_resources", "referenced_resources", "albums", "album_members"]

    /// Deletes every projection row and folds the whole log again, in keyset pages. After a
    /// compaction, the fold starts from the snapshot of the archived history (Compaction.swift).
    func rebuild() throws {
        for table in Self.tables {
            try database.execute("DELETE FROM \(table)")
        }
        let start = try CompactionSnapshot.restore(into: database)
        try EventLog(database).forEach(after: start) { try apply($0.event) }
    }

    // MARK: SQL

    /// `CASE` choosing the winner of a last-writer-wins register between the stored row and `excluded`.
    private static func lww(_ column: String, stamp: String) -> String {
        "CASE WHEN (excluded.\(stamp)_hlc, excluded.\(stamp)_device) > (\(stamp)_hlc, \(stamp)_device) THEN excluded.\(column) ELSE \(column) END"
    }

    private static func lwwSet(_ columns: [String], stamp: String) -> String {
        (columns + ["\(stamp)_hlc", "\(stamp)_device"]).map { "\($0) = \(lww($0, stamp: stamp))" }.joined(separator: ", ")
    }

    static let assetCreatedSQL = PreparedSQL("""
        INSERT INTO assets (asset_id, created, created_hlc, source_device, media_type, media_subtypes, pixel_width, pixel_height,
            duration, creation_date, latitude, longitude, altitude, favorite, hidden, creation_date_hlc, creation_date_device,
            location_hlc, location_device, favorite_hlc, favorite_device, hidden_hlc, hidden_device, trash_cl, modification_hlc)
        VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?2, ?3, ?2, ?3, ?2, ?3, ?2, ?3, 1, ?2)
        ON CONFLICT (asset_id) DO UPDATE SET
            created = 1, created_hlc = excluded.created_hlc, source_device = excluded.source_device,
            media_type = excluded.media_type, media_subtypes = excluded.media_subtypes, pixel_width = excluded.pixel_width,
            pixel_height = excluded.pixel_height, duration = excluded.duration,
            \(lwwSet(["creation_date"], stamp: "creation_date")),
            \(lwwSet(["latitude", "longitude", "altitude"], stamp: "location")),
            \(lwwSet(["favorite"], stamp: "favorite")),
            \(lwwSet(["hidden"], stamp: "hidden")),
            trash_cl = max(trash_cl, 1), modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let assetChangedSQL = PreparedSQL("""
        INSERT INTO assets (asset_id, creation_date, creation_date_hlc, creation_date_device, latitude, longitude, altitude,
            location_hlc, location_device, favorite, favorite_hlc, favorite_device, hidden, hidden_hlc, hidden_device, modification_hlc)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (asset_id) DO UPDATE SET
            \(lwwSet(["creation_date"], stamp: "creation_date")),
            \(lwwSet(["latitude", "longitude", "altitude"], stamp: "location")),
            \(lwwSet(["favorite"], stamp: "favorite")),
            \(lwwSet(["hidden"], stamp: "hidden")),
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let assetTrashSQL = PreparedSQL("""
        INSERT INTO assets (asset_id, trash_cl, trashed_hlc, modification_hlc) VALUES (?, ?, ?, ?)
        ON CONFLICT (asset_id) DO UPDATE SET trash_cl = max(trash_cl, excluded.trash_cl),
            trashed_hlc = max(trashed_hlc, excluded.trashed_hlc), modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let assetPurgedSQL = PreparedSQL("""
        INSERT INTO assets (asset_id, purged, modification_hlc) VALUES (?, 1, ?)
        ON CONFLICT (asset_id) DO UPDATE SET purged = 1, modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let assetContentSQL = PreparedSQL("""
        INSERT INTO assets (asset_id, content_sha256, adjustment_sha256, adjustment_format, content_hlc, content_device, modification_hlc)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (asset_id) DO UPDATE SET
            \(lwwSet(["content_sha256", "adjustment_sha256", "adjustment_format"], stamp: "content")),
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let resourceSQL = PreparedSQL("""
        INSERT INTO asset_resources (asset_id, resource_index, type, sha256, size, uniform_type, original_filename)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
        """)

    static let referenceSQL = PreparedSQL("INSERT INTO referenced_resources (sha256, size, uniform_type) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")

    static let albumCreatedSQL = PreparedSQL("""
        INSERT INTO albums (album_id, created, created_hlc, source_device, subtype, title, title_hlc, title_device, modification_hlc)
        VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (album_id) DO UPDATE SET
            created = 1,
            created_hlc = CASE WHEN albums.created = 0 OR excluded.created_hlc < albums.created_hlc THEN excluded.created_hlc ELSE albums.created_hlc END,
            source_device = CASE WHEN albums.created = 0 OR (excluded.created_hlc, excluded.source_device) < (albums.created_hlc, albums.source_device)
                THEN excluded.source_device ELSE albums.source_device END,
            subtype = excluded.subtype,
            \(lwwSet(["title"], stamp: "title")),
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let albumRenamedSQL = PreparedSQL("""
        INSERT INTO albums (album_id, title, title_hlc, title_device, modification_hlc) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (album_id) DO UPDATE SET \(lwwSet(["title"], stamp: "title")),
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let albumDeletedSQL = PreparedSQL("""
        INSERT INTO albums (album_id, deleted, modification_hlc) VALUES (?, 1, ?)
        ON CONFLICT (album_id) DO UPDATE SET deleted = 1, modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let albumMergedSQL = PreparedSQL("""
        INSERT INTO albums (album_id, merged_into, modification_hlc) VALUES (?, ?, ?)
        ON CONFLICT (album_id) DO UPDATE SET
            merged_into = CASE WHEN merged_into IS NULL OR excluded.merged_into < merged_into THEN excluded.merged_into ELSE merged_into END,
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let albumTouchedSQL = PreparedSQL("""
        INSERT INTO albums (album_id, modification_hlc) VALUES (?, ?)
        ON CONFLICT (album_id) DO UPDATE SET modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    static let memberSQL = PreparedSQL("""
        INSERT INTO album_members (album_id, asset_id, cl, position, position_hlc, position_device) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (album_id, asset_id) DO UPDATE SET
            cl = max(cl, excluded.cl),
            \(lwwSet(["position"], stamp: "position"))
        """)
}
