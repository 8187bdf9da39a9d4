import Foundation
import LedgerStore

/// A last-writer-wins stamp: the event's clock value, ties broken by the device identifier's
/// bytes (the order SQLite's `(hlc, device) > (hlc, device)` gives on the stored columns).
struct WriterStamp: Comparable {
    var hlc: Int64
    var device: String

    static let zero = WriterStamp(hlc: 0, device: "")

    static func < (lhs: WriterStamp, rhs: WriterStamp) -> Bool {
        lhs.hlc != rhs.hlc ? lhs.hlc < rhs.hlc : lhs.device.utf8.lexicographicallyPrecedes(rhs.device.utf8)
    }
}

/// A last-writer-wins register folded in memory: keeps the value with the greatest stamp.
struct Register<Value> {
    var value: Value
    var stamp = WriterStamp.zero

    init(_ value: Value) { self.value = value }

    mutating func offer(_ candidate: Value, at stamp: WriterStamp) {
        if stamp > self.stamp {
            value = candidate
            self.stamp = stamp
        }
    }
}

/// Events folded in memory, one merged row per object, then written with one upsert per row.
///
/// The in-memory merge is the same commutative, idempotent merge the upserts perform against the
/// stored rows (last-writer-wins registers by `(hlc, device)`, causal lengths and timestamps
/// with `max`, flags with OR, the merge winner with `min`), so folding a batch first and merging
/// the result into the tables gives the tables that folding each event alone gives. A page of a
/// thousand events about a few hundred objects costs a few hundred statements instead of one or
/// more per event.
struct ProjectionBatch {
    struct AssetRow {
        var created = false
        var createdHLC: Int64 = 0
        var sourceDevice = ""
        var mediaType = 0
        var mediaSubtypes = 0
        var pixelWidth = 0
        var pixelHeight = 0
        var duration = 0.0
        var creationDate = Register<Double?>(nil)
        var location = Register<Location?>(nil)
        var favorite = Register(false)
        var hidden = Register(false)
        var trashCausalLength: Int64 = 0
        var trashedHLC: Int64 = 0
        var purged = false
        var content = Register<ChangeEvent.ContentEdit?>(nil)
        var modificationHLC: Int64 = 0

        /// The state and version memberships carry, as ``ProjectionBatch/assetState(_:)`` computes
        /// them from a stored row equal to this one.
        var carried: AssetState {
            AssetState(state: created && !purged && trashCausalLength % 2 == 1 ? (hidden.value ? 1 : 2) : 0, version: modificationHLC)
        }
    }

    struct AlbumRow {
        var created = false
        var creation = WriterStamp.zero
        var subtype = 2
        var title = Register("")
        var deleted = false
        var mergedInto: UUID?
        var modificationHLC: Int64 = 0
    }

    struct MemberKey: Hashable {
        var album: UUID
        var asset: UUID
    }

    struct MemberRow {
        var causalLength: Int64 = 0
        var position = Register("")
    }

    /// Rows keyed by object, in the order the objects were first touched (for the UUIDv7
    /// identifiers of a log, close to key order, which keeps B-tree inserts local).
    private struct Rows<Key: Hashable, Row> {
        private(set) var keys: [Key] = []
        private var indexes: [Key: Int] = [:]
        private(set) var rows: [Row] = []
        let empty: Row

        init(empty: Row) { self.empty = empty }

        /// Changes the row of `key` in place (an empty row when the key is new).
        mutating func update(_ key: Key, _ body: (inout Row) -> Void) {
            let index: Int
            if let known = indexes[key] {
                index = known
            } else {
                index = rows.count
                indexes[key] = index
                keys.append(key)
                rows.append(empty)
            }
            body(&rows[index])
        }

        var isEmpty: Bool { keys.isEmpty }

        /// The row of `key`, when the batch has one.
        func row(for key: Key) -> Row? { indexes[key].map { rows[$0] } }
    }

    private var assets = Rows<UUID, AssetRow>(empty: AssetRow())
    private var albums = Rows<UUID, AlbumRow>(empty: AlbumRow())
    private var members = Rows<MemberKey, MemberRow>(empty: MemberRow())
    private var resources: [(asset: UUID, index: Int, record: ResourceRecord)] = []
    private var referenced: [ResourceRecord] = []
    private var referencedHashes: Set<[UInt8]> = []

    /// The objects the folded events touched: every object with a folded row, and the assets
    /// of the memberships.
    var touched: TouchedObjects {
        TouchedObjects(assets: Set(assets.keys).union(members.keys.lazy.map(\.asset)), albums: Set(albums.keys))
    }
    /// The number of events folded.
    private(set) var eventCount = 0

    var isEmpty: Bool { eventCount == 0 }


    // MARK: Folding

    /// Folds one stored event (events of types this build does not know change nothing).
    mutating func add(_ event: Event) throws {
        guard let change = try ChangeEvent.decode(type: event.type, schemaVersion: event.schemaVersion, payload: event.payload) else {
            return
        }
        add(change, object: event.object, stamp: WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue))
    }

    /// Folds a decoded change about `object` written at `stamp`.
    mutating func add(_ change: ChangeEvent, object id: UUID, stamp: WriterStamp) {
        eventCount += 1
        let hlc = stamp.hlc
        switch change {
        case .assetCreated(let c):
            assets.update(id) { row in
                row.created = true
                row.createdHLC = hlc
                row.sourceDevice = stamp.device
                row.mediaType = c.mediaType.rawValue
                row.mediaSubtypes = c.mediaSubtypes.rawValue
                row.pixelWidth = c.pixelWidth
                row.pixelHeight = c.pixelHeight
                row.duration = c.duration
                row.creationDate.offer(c.creationDate?.timeIntervalSince1970, at: stamp)
                row.location.offer(c.location, at: stamp)
                row.favorite.offer(c.isFavorite, at: stamp)
                row.hidden.offer(c.isHidden, at: stamp)
                row.trashCausalLength = max(row.trashCausalLength, 1)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
            for (index, record) in c.resources.enumerated() {
                resources.append((id, index, record))
                reference(record)
            }
        case .assetChanged(let c):
            assets.update(id) { row in
                if let date = c.creationDate { row.creationDate.offer(date?.timeIntervalSince1970, at: stamp) }
                if let location = c.location { row.location.offer(location, at: stamp) }
                if let favorite = c.isFavorite { row.favorite.offer(favorite, at: stamp) }
                if let hidden = c.isHidden { row.hidden.offer(hidden, at: stamp) }
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .assetDeleted(let causalLength), .assetRecovered(let causalLength):
            let deleted = if case .assetDeleted = change { true } else { false }
            assets.update(id) { row in
                row.trashCausalLength = max(row.trashCausalLength, causalLength)
                if deleted { row.trashedHLC = max(row.trashedHLC, hlc) }
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .assetPurged:
            assets.update(id) { row in
                row.purged = true
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .assetContentEdited(let edit):
            assets.update(id) { row in
                row.content.offer(edit, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
            for record in [edit.rendered, edit.adjustment].compactMap({ $0 }) { reference(record) }
        case .albumCreated(let title, let subtype):
            albums.update(id) { row in
                if !row.created || stamp < row.creation {
                    row.creation = stamp
                    row.subtype = subtype
                }
                row.created = true
                row.title.offer(title, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .albumRenamed(let title):
            albums.update(id) { row in
                row.title.offer(title, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .albumDeleted:
            albums.update(id) { row in
                row.deleted = true
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .albumMerged(let winner):
            albums.update(id) { row in
                if row.mergedInto.map({ winner.bytes < $0.bytes }) ?? true { row.mergedInto = winner }
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
            albums.update(winner) { $0.modificationHLC = max($0.modificationHLC, hlc) }
        case .albumMembersChanged(_, let entries):
            albums.update(id) { $0.modificationHLC = max($0.modificationHLC, hlc) }
            for entry in entries {
                members.update(MemberKey(album: id, asset: entry.asset)) { row in
                    row.causalLength = max(row.causalLength, entry.causalLength)
                    if let position = entry.position { row.position.offer(position, at: stamp) }
                }
            }
        }
    }

    private mutating func reference(_ record: ResourceRecord) {
        if referencedHashes.insert(record.sha256).inserted { referenced.append(record) }
    }

    // MARK: Writing

    /// Merges the folded rows into the projection tables: one upsert per object.
    ///
    /// - Parameter intoEmptyTables: the projection tables hold no row yet (the first batch of a
    ///   rebuild): the folded rows are then the stored rows, and no membership row exists
    ///   before this batch's.
    func write(to database: Database, intoEmptyTables: Bool = false) throws {
        guard !isEmpty else { return }
        // The state and version each asset's memberships carry
        // (Migrations/Library/0006_album_member_asset_state.sql): the folded row's when the table
        // was empty, else what the upsert returns, as stored after the merge.
        var written: [UUID: AssetState] = [:]
        if !intoEmptyTables { written.reserveCapacity(assets.rows.count) }
        let carriedState = { (asset: UUID) -> AssetState? in intoEmptyTables ? assets.row(for: asset)?.carried : written[asset] }
        try writeRows(
            assets.rows.count, columns: 32, sql: intoEmptyTables ? Self.assetStatements : Self.assetReturningStatements, in: database,
            returning: { row in written[row.withBlob(0) { UUID(bytes: $0) }!] = AssetState(state: row.int64(1), version: row.int64(2)) }
        ) { index, base, statement in
            let id = assets.keys[index], row = assets.rows[index]
            try bind(id, at: base + 1, statement)
            try statement.bind(row.created ? 1 : 0, at: base + 2)
            try statement.bind(row.createdHLC, at: base + 3)
            try statement.bind(row.sourceDevice, at: base + 4)
            try statement.bind(Int64(row.mediaType), at: base + 5)
            try statement.bind(Int64(row.mediaSubtypes), at: base + 6)
            try statement.bind(Int64(row.pixelWidth), at: base + 7)
            try statement.bind(Int64(row.pixelHeight), at: base + 8)
            try statement.bind(.real(row.duration), at: base + 9)
            try statement.bind(row.creationDate.value.map(SQLValue.real) ?? .null, at: base + 10)
            try bind(row.creationDate.stamp, at: base + 11, statement)
            let location = row.location.value
            try statement.bind(location.map { .real($0.latitude) } ?? .null, at: base + 13)
            try statement.bind(location.map { .real($0.longitude) } ?? .null, at: base + 14)
            try statement.bind(location?.altitude.map(SQLValue.real) ?? .null, at: base + 15)
            try bind(row.location.stamp, at: base + 16, statement)
            try statement.bind(row.favorite.value ? 1 : 0, at: base + 18)
            try bind(row.favorite.stamp, at: base + 19, statement)
            try statement.bind(row.hidden.value ? 1 : 0, at: base + 21)
            try bind(row.hidden.stamp, at: base + 22, statement)
            try statement.bind(row.trashCausalLength, at: base + 24)
            try statement.bind(row.trashedHLC, at: base + 25)
            try statement.bind(row.purged ? 1 : 0, at: base + 26)
            let content = row.content.value
            try statement.bind(content?.rendered.map { .blob($0.sha256) } ?? .null, at: base + 27)
            try statement.bind(content?.adjustment.map { .blob($0.sha256) } ?? .null, at: base + 28)
            try statement.bind(content?.adjustmentFormat.map(SQLValue.text) ?? .null, at: base + 29)
            try bind(row.content.stamp, at: base + 30, statement)
            try statement.bind(row.modificationHLC, at: base + 32)
        }
        if !intoEmptyTables {
            let passed = assets.keys.compactMap { asset in written[asset].map { (asset, $0) } }
            try writeRows(passed.count, columns: 3, sql: Self.memberAssetStatements, in: database) { index, base, statement in
                try bind(passed[index].0, at: base + 1, statement)
                try statement.bind(passed[index].1.state, at: base + 2)
                try statement.bind(passed[index].1.version, at: base + 3)
            }
        }
        if !resources.isEmpty {
            let statement = try database.cachedStatement(Self.resourceSQL)
            for (asset, index, record) in resources {
                defer { statement.reset() }
                try bind(asset, at: 1, statement)
                try statement.bind(Int64(index), at: 2)
                try statement.bind(Int64(record.type.rawValue), at: 3)
                try statement.bind(record.sha256, at: 4)
                try statement.bind(record.size, at: 5)
                try statement.bind(record.uniformType, at: 6)
                try statement.bind(record.filename, at: 7)
                try statement.step()
            }
        }
        if !referenced.isEmpty {
            let statement = try database.cachedStatement(Self.referenceSQL)
            for record in referenced {
                defer { statement.reset() }
                try statement.bind(record.sha256, at: 1)
                try statement.bind(record.size, at: 2)
                try statement.bind(record.uniformType, at: 3)
                try statement.step()
            }
        }
        if !albums.isEmpty {
            let statement = try database.cachedStatement(Self.albumSQL)
            for (id, row) in zip(albums.keys, albums.rows) {
                defer { statement.reset() }
                try bind(id, at: 1, statement)
                try statement.bind(row.created ? 1 : 0, at: 2)
                try bind(row.creation, at: 3, statement)
                try statement.bind(Int64(row.subtype), at: 5)
                try statement.bind(row.title.value, at: 6)
                try bind(row.title.stamp, at: 7, statement)
                try statement.bind(row.deleted ? 1 : 0, at: 9)
                if let winner = row.mergedInto { try bind(winner, at: 10, statement) }
                try statement.bind(row.modificationHLC, at: 11)
                try statement.step()
            }
        }
        // Memberships of assets written above take their state from what the upserts returned;
        // the others read it from the asset row.
        var known: [Int] = [], unknown: [Int] = []
        for (index, key) in members.keys.enumerated() {
            if carriedState(key.asset) != nil { known.append(index) } else { unknown.append(index) }
        }
        try writeRows(known.count, columns: 8, sql: Self.memberStatements, in: database) { index, base, statement in
            let key = members.keys[known[index]], row = members.rows[known[index]]
            try bindMember(key, row, at: base, statement)
            let state = carriedState(key.asset)!
            try statement.bind(state.state, at: base + 7)
            try statement.bind(state.version, at: base + 8)
        }
        try writeRows(unknown.count, columns: 6, sql: Self.memberReadingAssetStatements, in: database) { index, base, statement in
            try bindMember(members.keys[unknown[index]], members.rows[unknown[index]], at: base, statement)
        }
    }

    /// What a membership row carries of its asset.
    struct AssetState {
        var state: Int64
        var version: Int64
    }


    private func bindMember(_ key: MemberKey, _ row: MemberRow, at base: Int32, _ statement: Statement) throws {
        try bind(key.album, at: base + 1, statement)
        try bind(key.asset, at: base + 2, statement)
        try statement.bind(row.causalLength, at: base + 3)
        try statement.bind(row.position.value, at: base + 4)
        try bind(row.position.stamp, at: base + 5, statement)
    }

    /// Rows per multi-row upsert: one statement execution per hundred rows instead of per row.
    static let rowsPerStatement = 100

    /// A table's upsert for one row and for ``rowsPerStatement`` rows.
    struct RowStatements: Sendable {
        let single: PreparedSQL
        let multiple: PreparedSQL

        init(_ sql: (Int) -> String) {
            single = PreparedSQL(sql(1))
            multiple = PreparedSQL(sql(ProjectionBatch.rowsPerStatement))
        }
    }

    static let assetStatements = RowStatements(assetSQL(rows:))
    static let assetReturningStatements = RowStatements(assetReturningSQL(rows:))
    static let memberStatements = RowStatements(memberSQL(rows:))
    static let memberReadingAssetStatements = RowStatements(memberReadingAssetSQL(rows:))
    static let memberAssetStatements = RowStatements(memberAssetSQL(rows:))

    /// Writes `count` rows through multi-row statements, `bindRow(index, base, statement)`
    /// binding row `index` to parameters `base + 1`…. Rows past the last full hundred go one by
    /// one. `returning` receives each row the statement returns.
    private func writeRows(
        _ count: Int, columns: Int32, sql: RowStatements, in database: Database,
        returning: (Statement) -> Void = { _ in },
        _ bindRow: (_ index: Int, _ base: Int32, Statement) throws -> Void
    ) throws {
        var start = 0
        while start < count {
            let rows = count - start >= Self.rowsPerStatement ? Self.rowsPerStatement : 1
            // Every parameter is bound below, so the old bindings need no clearing.
            let statement = try database.cachedStatement(rows == 1 ? sql.single : sql.multiple, clearingBindings: false)
            defer { statement.resetKeepingBindings() }
            for offset in 0..<rows { try bindRow(start + offset, Int32(offset) * columns, statement) }
            while try statement.step() { returning(statement) }
            start += rows
        }
    }

    private func bind(_ id: UUID, at index: Int32, _ statement: Statement) throws {
        try withUnsafeBytes(of: id.uuid) { try statement.bind(bytes: $0, at: index) }
    }

    /// Binds a stamp to two parameters: the clock value at `index`, the device at `index + 1`.
    private func bind(_ stamp: WriterStamp, at index: Int32, _ statement: Statement) throws {
        try statement.bind(stamp.hlc, at: index)
        try statement.bind(stamp.device, at: index + 1)
    }

    // MARK: SQL

    /// `CASE` choosing the winner of a last-writer-wins register between the stored row and `excluded`.
    private static func lww(_ columns: [String], stamp: String) -> String {
        (columns + ["\(stamp)_hlc", "\(stamp)_device"]).map { column in
            "\(column) = CASE WHEN (excluded.\(stamp)_hlc, excluded.\(stamp)_device) > (\(stamp)_hlc, \(stamp)_device) "
                + "THEN excluded.\(column) ELSE \(column) END"
        }.joined(separator: ",\n    ")
    }

    /// Creation fields are written once, by the object's creation event.
    private static func fromCreation(_ columns: [String]) -> String {
        columns.map { "\($0) = CASE WHEN excluded.created = 1 THEN excluded.\($0) ELSE \($0) END" }.joined(separator: ",\n    ")
    }

    /// The upsert of `rows` asset rows, returning each row's state and version after the merge.
    static func assetReturningSQL(rows: Int) -> String {
        assetSQL(rows: rows) + "\nRETURNING asset_id, \(assetState("")), modification_hlc"
    }

    /// The upsert of `rows` asset rows.
    static func assetSQL(rows: Int) -> String {
        """
        INSERT INTO assets (asset_id, created, created_hlc, source_device, media_type, media_subtypes, pixel_width, pixel_height,
            duration, creation_date, creation_date_hlc, creation_date_device, latitude, longitude, altitude, location_hlc,
            location_device, favorite, favorite_hlc, favorite_device, hidden, hidden_hlc, hidden_device, trash_cl, trashed_hlc,
            purged, content_sha256, adjustment_sha256, adjustment_format, content_hlc, content_device, modification_hlc)
        VALUES \(valueRows(rows, columns: 32))
        ON CONFLICT (asset_id) DO UPDATE SET
            \(fromCreation(["created_hlc", "source_device", "media_type", "media_subtypes", "pixel_width", "pixel_height", "duration"])),
            created = max(created, excluded.created),
            \(lww(["creation_date"], stamp: "creation_date")),
            \(lww(["latitude", "longitude", "altitude"], stamp: "location")),
            \(lww(["favorite"], stamp: "favorite")),
            \(lww(["hidden"], stamp: "hidden")),
            \(lww(["content_sha256", "adjustment_sha256", "adjustment_format"], stamp: "content")),
            trash_cl = max(trash_cl, excluded.trash_cl),
            trashed_hlc = max(trashed_hlc, excluded.trashed_hlc),
            purged = max(purged, excluded.purged),
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """
    }

    /// An asset's state as its memberships carry it (0 not shown, 1 hidden, 2 shown), from the
    /// asset row's columns with the given prefix (NULL columns, a missing row, give 0).
    static func assetState(_ prefix: String) -> String {
        "CASE WHEN \(prefix)created = 1 AND \(prefix)purged = 0 AND \(prefix)trash_cl % 2 = 1 THEN 2 - \(prefix)hidden ELSE 0 END"
    }

    /// Sets every membership row's asset state and version from the asset rows (after restoring
    /// a snapshot, which may have been taken before memberships carried them).
    static let allMemberAssetsSQL = """
        UPDATE album_members SET asset_state = a.state, asset_version = a.version
        FROM (SELECT asset_id, \(assetState("")) AS state, modification_hlc AS version FROM assets) AS a
        WHERE a.asset_id = album_members.asset_id AND (album_members.asset_state, album_members.asset_version) IS NOT (a.state, a.version)
        """

    /// Passes the state and version of `rows` assets on to their membership rows (only to rows
    /// that differ).
    static func memberAssetSQL(rows: Int) -> String {
        """
        UPDATE album_members SET asset_state = v.column2, asset_version = v.column3
        FROM (VALUES \(valueRows(rows, columns: 3))) AS v
        WHERE album_members.asset_id = v.column1
          AND (album_members.asset_state, album_members.asset_version) IS NOT (v.column2, v.column3)
        """
    }

    static let resourceSQL = PreparedSQL("""
        INSERT INTO asset_resources (asset_id, resource_index, type, sha256, size, uniform_type, original_filename)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
        """)

    static let referenceSQL = PreparedSQL("INSERT INTO referenced_resources (sha256, size, uniform_type) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")

    /// An album's creation stamp is the earliest creation's (two devices may create the same
    /// album: named system albums have deterministic identifiers); its subtype comes with it.
    private static let earlierCreation =
        "excluded.created = 1 AND (albums.created = 0 OR (excluded.created_hlc, excluded.source_device) < (albums.created_hlc, albums.source_device))"

    static let albumSQL = PreparedSQL("""
        INSERT INTO albums (album_id, created, created_hlc, source_device, subtype, title, title_hlc, title_device, deleted,
            merged_into, modification_hlc)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
        ON CONFLICT (album_id) DO UPDATE SET
            created_hlc = CASE WHEN \(earlierCreation) THEN excluded.created_hlc ELSE albums.created_hlc END,
            source_device = CASE WHEN \(earlierCreation) THEN excluded.source_device ELSE albums.source_device END,
            subtype = CASE WHEN \(earlierCreation) THEN excluded.subtype ELSE albums.subtype END,
            created = max(created, excluded.created),
            \(lww(["title"], stamp: "title")),
            deleted = max(deleted, excluded.deleted),
            merged_into = CASE WHEN excluded.merged_into IS NOT NULL AND (merged_into IS NULL OR excluded.merged_into < merged_into)
                THEN excluded.merged_into ELSE merged_into END,
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    /// The upsert of `rows` membership rows.
    /// The upsert of `rows` membership rows with their asset's state and version.
    static func memberSQL(rows: Int) -> String {
        """
        INSERT INTO album_members (album_id, asset_id, cl, position, position_hlc, position_device, asset_state, asset_version)
        VALUES \(valueRows(rows, columns: 8))
        \(memberConflict)
        """
    }

    /// The upsert of `rows` membership rows taking their asset's state and version from the
    /// asset row (none yet: not shown).
    static func memberReadingAssetSQL(rows: Int) -> String {
        """
        INSERT INTO album_members (album_id, asset_id, cl, position, position_hlc, position_device, asset_state, asset_version)
        SELECT m.column1, m.column2, m.column3, m.column4, m.column5, m.column6, \(assetState("a.")), coalesce(a.modification_hlc, 0)
        FROM (VALUES \(valueRows(rows, columns: 6))) AS m LEFT JOIN assets a ON a.asset_id = m.column2
        WHERE true
        \(memberConflict)
        """
    }

    private static let memberConflict = """
        ON CONFLICT (album_id, asset_id) DO UPDATE SET
            cl = max(cl, excluded.cl),
            \(lww(["position"], stamp: "position")),
            asset_state = excluded.asset_state,
            asset_version = excluded.asset_version
        """

    /// `(?, …), (?, …)`: `rows` groups of `columns` parameters.
    private static func valueRows(_ rows: Int, columns: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        return Array(repeating: row, count: rows).joined(separator: ", ")
    }
}
