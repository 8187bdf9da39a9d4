import Foundation
import LedgerCore
import LedgerStore

/// A last-writer-wins stamp: the event's clock value, ties broken by the device identifier's
/// bytes (the order SQLite's `(hlc, device) > (hlc, device)` gives on the stored columns).
struct WriterStamp: Comparable, Hashable, Sendable {
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

extension Register: Sendable where Value: Sendable {}

/// Events folded in memory, one merged row per object, then written with one upsert per row.
///
/// The in-memory merge is the same commutative, idempotent merge the upserts perform against the
/// stored rows (last-writer-wins registers by `(hlc, device)`, causal lengths and timestamps
/// with `max`, flags with OR, the merge winner with `min`), so folding a batch first and merging
/// the result into the tables gives the tables that folding each event alone gives. A page of a
/// thousand events about a few hundred objects costs a few hundred statements instead of one or
/// more per event.
struct ProjectionBatch: Sendable {
    struct AssetRow {
        var created = false
        /// The creation event folded (the smallest identifier when several were).
        var creationEvent: UUID?
        /// Whether two different creation events were folded: a conflict to resolve.
        var createdTwice = false
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
        var burstIdentifier: String?
        var burstAutoPick = false
        var burstUserPick = Register(false)

        /// The state and version memberships carry, as ``ProjectionBatch/assetState(_:)`` computes
        /// them from a stored row equal to this one.
        var carried: AssetState {
            AssetState(
                state: MemberAssetState.of(created: created, purged: purged, trashCausalLength: trashCausalLength, hidden: hidden.value)
                    .rawValue,
                version: modificationHLC)
        }
    }

    struct AlbumRow {
        var created = false
        var creation = WriterStamp.zero
        var subtype = CollectionSubtype.albumRegular.rawValue
        var title = Register("")
        var deleted = false
        var mergedInto: UUID?
        var modificationHLC: Int64 = 0
        var keyAsset = Register<UUID?>(nil)
        var parent = Register<UUID?>(nil)
        var position = Register<String?>(nil)
    }

    struct ListRow {
        var created = false
        /// The creation event folded (the smallest identifier when several were).
        var creationEvent: UUID?
        /// Whether two different creation events were folded: a conflict to resolve.
        var createdTwice = false
        var creation = WriterStamp.zero
        var title = Register("")
        var parent = Register<UUID?>(nil)
        var position = Register<String?>(nil)
        var deleted = false
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
    private struct Rows<Key: Hashable & Sendable, Row: Sendable>: Sendable {
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

        /// Makes room for `count` rows without growing.
        mutating func reserveCapacity(_ count: Int) {
            keys.reserveCapacity(count)
            indexes.reserveCapacity(count)
            rows.reserveCapacity(count)
        }

        /// The row of `key`, when the batch has one.
        func row(for key: Key) -> Row? { indexes[key].map { rows[$0] } }
    }

    private var assets = Rows<UUID, AssetRow>(empty: AssetRow())
    private var albums = Rows<UUID, AlbumRow>(empty: AlbumRow())
    private var members = Rows<MemberKey, MemberRow>(empty: MemberRow())
    private var lists = Rows<UUID, ListRow>(empty: ListRow())
    private var resources: [(asset: UUID, index: Int, record: ResourceRecord)] = []
    private var referenced: [ResourceRecord] = []
    /// Renditions recorded, by asset (they change no asset row: a rendition is derived, and
    /// touches nothing a fetch or an observer shows).
    private var renditions: [(asset: UUID, record: RenditionRecord)] = []
    /// The resources the folded events refer to (SHA-256 digests).
    private(set) var referencedHashes: Set<[UInt8]> = []
    /// Events not folded, with their verdicts.
    private(set) var quarantined: [(event: UUID, kind: QuarantineKind, reason: String)] = []
    /// The objects whose creations (of an asset, an album or a folder) the batch folded: conflicts
    /// between creations are looked for among them after it is written. An object created twice
    /// is listed twice (a list costs the fold of a creation less than a set).
    private(set) var createdObjects: [UUID] = []
    /// Whether the batch folded a creation.
    var foldedCreations: Bool { !createdObjects.isEmpty }

    /// The objects the folded events touched: every object with a folded row, and the assets
    /// of the memberships.
    var touched: TouchedObjects {
        TouchedObjects(assets: Set(assets.keys).union(members.keys.lazy.map(\.asset)), albums: Set(albums.keys), lists: Set(lists.keys))
    }
    /// An empty batch.
    init() {}

    /// An empty batch with room for the asset rows and creations of `events` events, for a fold
    /// whose size is known (most events are about assets).
    init(expectedEvents events: Int) {
        assets.reserveCapacity(events)
        createdObjects.reserveCapacity(events)
    }

    /// The number of events folded.
    private(set) var eventCount = 0
    /// The assets a folded content edit (or revert) is about.
    private(set) var contentEditedAssets: Set<UUID> = []

    /// The memberships folded, by album and asset.
    var memberships: Zip2Sequence<[MemberKey], [MemberRow]> { zip(members.keys, members.rows) }

    var isEmpty: Bool { eventCount == 0 }

    // MARK: Folding

    /// Folds one event as `context`'s schema judges it: a valid event changes the rows, any other
    /// is recorded with its verdict and changes nothing else.
    mutating func add(_ event: Event, context: FoldContext) {
        let stamp = WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
        let verdict = context.verdict(on: event, stamp: stamp, keepingClaims: false)
        add(verdict, event: event.id, object: event.object, stamp: stamp)
    }

    /// Folds an event's verdict: the change of a valid event, the verdict of any other.
    mutating func add(_ verdict: EventVerdict, event: UUID, object: UUID, stamp: WriterStamp) {
        eventCount += 1
        switch verdict {
        case .fold(let change, _): add(change, object: object, stamp: stamp, event: event)
        case .deferred, .sealed, .quarantined:
            if let (kind, reason) = verdict.stored { quarantined.append((event, kind, reason)) }
        }
    }

    /// Folds a decoded change about `object` written at `stamp`.
    private mutating func add(_ change: ChangeEvent, object id: UUID, stamp: WriterStamp, event: UUID) {
        let hlc = stamp.hlc
        switch change {
        case .assetCreated(let c):
            createdObjects.append(id)
            assets.update(id) { row in
                if let folded = row.creationEvent, folded != event { row.createdTwice = true }
                row.creationEvent = row.creationEvent.map { $0.bytes.lexicographicallyPrecedes(event.bytes) ? $0 : event } ?? event
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
                row.burstIdentifier = c.burstIdentifier
                row.burstAutoPick = c.burstSelectionTypes.contains(.autoPick)
                row.burstUserPick.offer(c.burstSelectionTypes.contains(.userPick), at: stamp)
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
                if let pick = c.burstUserPick { row.burstUserPick.offer(pick, at: stamp) }
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
            contentEditedAssets.insert(id)
            assets.update(id) { row in
                row.content.offer(edit, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
            for record in [edit.rendered, edit.adjustment].compactMap({ $0 }) { reference(record) }
        case .renditionRecorded(let record):
            renditions.append((id, record))
        case .albumCreated(let title, let subtype):
            createdObjects.append(id)
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
        case .albumMoved(let parent):
            albums.update(id) { row in
                row.parent.offer(parent, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .listCreated(let title):
            createdObjects.append(id)
            lists.update(id) { row in
                if let folded = row.creationEvent, folded != event { row.createdTwice = true }
                row.creationEvent = row.creationEvent.map { $0.bytes.lexicographicallyPrecedes(event.bytes) ? $0 : event } ?? event
                if !row.created || stamp < row.creation { row.creation = stamp }
                row.created = true
                row.title.offer(title, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .listRenamed(let title):
            lists.update(id) { row in
                row.title.offer(title, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .listDeleted:
            lists.update(id) { row in
                row.deleted = true
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .listMoved(let parent):
            lists.update(id) { row in
                row.parent.offer(parent, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .albumPositioned(let position):
            albums.update(id) { row in
                row.position.offer(position, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .listPositioned(let position):
            lists.update(id) { row in
                row.position.offer(position, at: stamp)
                row.modificationHLC = max(row.modificationHLC, hlc)
            }
        case .albumKeyAssetSet(let asset):
            albums.update(id) { row in
                row.keyAsset.offer(asset, at: stamp)
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

    /// The resources (SHA-256 digests) `event` refers to when it folds: an asset's creation its
    /// resources, a content edit its rendered image and adjustment data.
    static func references(of event: Event, context: FoldContext) -> [[UInt8]] {
        let stamp = WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
        switch context.verdict(on: event, stamp: stamp, keepingClaims: false) {
        case .fold(.assetCreated(let creation), _): return creation.resources.map(\.sha256)
        case .fold(.assetContentEdited(let edit), _): return [edit.rendered, edit.adjustment].compactMap { $0?.sha256 }
        default: return []
        }
    }

    private mutating func reference(_ record: ResourceRecord) {
        if referencedHashes.insert(record.sha256).inserted { referenced.append(record) }
    }

    // MARK: Writing

    /// Merges the folded rows into the projection tables: one upsert per object.
    func write(to database: Database) throws {
        var none: RebuildProgress?
        try write(to: database, rebuilding: &none)
    }

    /// Merges the folded rows into the projection tables, as one batch of a rebuild when
    /// `progress` is given: the tables were empty when the rebuild began, and `progress` holds
    /// what its batches wrote since (this batch is added to it). An asset no batch wrote before
    /// is stored exactly as folded, so its memberships take their state from the folded row,
    /// and only assets that may have memberships stored already pass their state on to them.
    func write(to database: Database, rebuilding progress: inout RebuildProgress?) throws {
        guard !isEmpty else { return }
        try Self.assetUpsert.run(count: assets.rows.count, in: database) { index, values in
            let row = assets.rows[index]
            values.append(uuid: assets.keys[index])
            values.append(row.created)
            values.append(row.createdHLC)
            values.append(row.sourceDevice)
            values.append(Int64(row.mediaType))
            values.append(Int64(row.mediaSubtypes))
            values.append(Int64(row.pixelWidth))
            values.append(Int64(row.pixelHeight))
            values.append(row.duration)
            values.append(row.creationDate.value)
            values.append(row.creationDate.stamp)
            let location = row.location.value
            values.append(location?.latitude)
            values.append(location?.longitude)
            values.append(location?.altitude)
            values.append(row.location.stamp)
            values.append(row.favorite.value)
            values.append(row.favorite.stamp)
            values.append(row.hidden.value)
            values.append(row.hidden.stamp)
            values.append(row.trashCausalLength)
            values.append(row.trashedHLC)
            values.append(row.purged)
            let content = row.content.value
            values.append(blob: content?.rendered?.sha256)
            values.append(blob: content?.adjustment?.sha256)
            values.append(content?.adjustmentFormat)
            values.append(row.content.stamp)
            values.append(row.modificationHLC)
            values.append(blob: row.creationEvent?.bytes)
            values.append(row.createdTwice)
            values.append(row.burstIdentifier)
            values.append(row.burstAutoPick)
            values.append(row.burstUserPick.value)
            values.append(row.burstUserPick.stamp)
        }
        // Memberships already stored take the state and version their asset has now
        // (Migrations/Library/0006_album_member_asset_state.sql).
        let withMemberships = progress.map { progress in assets.keys.filter(progress.memberAssets.mayContain) } ?? assets.keys
        try Self.memberAssetUpdate.run(count: withMemberships.count, in: database) { index, values in
            values.append(uuid: withMemberships[index])
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
        if !renditions.isEmpty {
            let statement = try database.cachedStatement(Self.renditionSQL)
            for (asset, record) in renditions {
                defer { statement.reset() }
                try bind(asset, at: 1, statement)
                try statement.bind(record.source, at: 2)
                try statement.bind(Int64(record.boxSize), at: 3)
                try statement.bind(record.fills ? 1 : 0, at: 4)
                try statement.bind(record.sha256, at: 5)
                try statement.bind(record.size, at: 6)
                try statement.bind(record.isPNG ? 1 : 0, at: 7)
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
                if let key = row.keyAsset.value { try bind(key, at: 12, statement) }
                try bind(row.keyAsset.stamp, at: 13, statement)
                if let parent = row.parent.value { try bind(parent, at: 15, statement) }
                try bind(row.parent.stamp, at: 16, statement)
                if let position = row.position.value { try statement.bind(position, at: 18) }
                try bind(row.position.stamp, at: 19, statement)
                try statement.step()
            }
        }
        if !lists.isEmpty {
            let statement = try database.cachedStatement(Self.listSQL)
            for (id, row) in zip(lists.keys, lists.rows) {
                defer { statement.reset() }
                try bind(id, at: 1, statement)
                try statement.bind(row.created ? 1 : 0, at: 2)
                try bind(row.creation, at: 3, statement)
                try statement.bind(row.title.value, at: 5)
                try bind(row.title.stamp, at: 6, statement)
                if let parent = row.parent.value { try bind(parent, at: 8, statement) }
                try bind(row.parent.stamp, at: 9, statement)
                try statement.bind(row.deleted ? 1 : 0, at: 11)
                try statement.bind(row.modificationHLC, at: 12)
                if let creation = row.creationEvent { try bind(creation, at: 13, statement) }
                try statement.bind(row.createdTwice ? 1 : 0, at: 14)
                if let position = row.position.value { try statement.bind(position, at: 15) }
                try bind(row.position.stamp, at: 16, statement)
                try statement.step()
            }
        }
        // A membership takes its asset's state and version from the folded row when that is the
        // stored row (a rebuild's asset no batch wrote before), is not shown when no batch wrote
        // its asset, and otherwise reads them from the asset row, written above.
        var carried: [(index: Int, state: AssetState)] = [], unknown: [Int] = []
        for (index, key) in members.keys.enumerated() {
            if let progress, !progress.assets.mayContain(key.asset) {
                carried.append(
                    (index, assets.row(for: key.asset)?.carried ?? AssetState(state: MemberAssetState.notShown.rawValue, version: 0)))
            } else {
                unknown.append(index)
            }
        }
        try Self.memberUpsert.run(count: carried.count, in: database) { index, values in
            let (member, state) = carried[index]
            append(members.keys[member], members.rows[member], to: &values)
            values.append(state.state)
            values.append(state.version)
        }
        try Self.memberUpsertReadingAsset.run(count: unknown.count, in: database) { index, values in
            append(members.keys[unknown[index]], members.rows[unknown[index]], to: &values)
        }
        if !quarantined.isEmpty {
            let statement = try database.cachedStatement(Self.quarantineSQL)
            for (event, kind, reason) in quarantined {
                defer { statement.reset() }
                try bind(event, at: 1, statement)
                try statement.bind(Int64(kind.rawValue), at: 2)
                try statement.bind(reason, at: 3)
                try statement.step()
            }
        }
        if progress != nil {
            for asset in assets.keys { progress!.assets.insert(asset) }
            for key in members.keys { progress!.memberAssets.insert(key.asset) }
        }
    }

    /// What a membership row carries of its asset.
    struct AssetState {
        var state: Int64
        var version: Int64
    }

    private func append(_ key: MemberKey, _ row: MemberRow, to values: inout BatchInsert.Values) {
        values.append(uuid: key.album)
        values.append(uuid: key.asset)
        values.append(row.causalLength)
        values.append(row.position.value)
        values.append(row.position.stamp)
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

    private static let assetColumns = """
        INSERT INTO assets (asset_id, created, created_hlc, source_device, media_type, media_subtypes, pixel_width, pixel_height,
            duration, creation_date, creation_date_hlc, creation_date_device, latitude, longitude, altitude, location_hlc,
            location_device, favorite, favorite_hlc, favorite_device, hidden, hidden_hlc, hidden_device, trash_cl, trashed_hlc,
            purged, content_sha256, adjustment_sha256, adjustment_format, content_hlc, content_device, modification_hlc, creation_event,
            created_twice, burst_identifier, burst_auto_pick, burst_user_pick, burst_user_pick_hlc, burst_user_pick_device)
        """

    private static let assetMerge = """
        ON CONFLICT (asset_id) DO UPDATE SET
            \(fromCreation([
                "created_hlc", "source_device", "media_type", "media_subtypes", "pixel_width", "pixel_height", "duration", "burst_identifier",
                "burst_auto_pick",
            ])),
            created = max(created, excluded.created),
            \(lww(["creation_date"], stamp: "creation_date")),
            \(lww(["latitude", "longitude", "altitude"], stamp: "location")),
            \(lww(["favorite"], stamp: "favorite")),
            \(lww(["hidden"], stamp: "hidden")),
            \(lww(["burst_user_pick"], stamp: "burst_user_pick")),
            \(lww(["content_sha256", "adjustment_sha256", "adjustment_format"], stamp: "content")),
            trash_cl = max(trash_cl, excluded.trash_cl),
            trashed_hlc = max(trashed_hlc, excluded.trashed_hlc),
            purged = max(purged, excluded.purged),
            modification_hlc = max(modification_hlc, excluded.modification_hlc),
            created_twice = max(created_twice, excluded.created_twice,
                creation_event IS NOT NULL AND excluded.creation_event IS NOT NULL AND creation_event <> excluded.creation_event),
            creation_event = CASE WHEN creation_event IS NULL OR excluded.creation_event < creation_event
                THEN coalesce(excluded.creation_event, creation_event) ELSE creation_event END
        """

    /// The asset upsert.
    static let assetUpsert = BatchInsert(assetColumns, columns: 39, tail: assetMerge)

    /// A verdict on the event alone (rule 0): it never changes, so a repeated fold keeps it.
    static let quarantineSQL = PreparedSQL(
        "INSERT INTO quarantine (event_id, kind, rule, reason) VALUES (?, ?, 0, ?) ON CONFLICT DO NOTHING")

    /// An asset's state as its memberships carry it (0 not shown, 1 hidden, 2 shown), from the
    /// asset row's columns with the given prefix (NULL columns, a missing row, give 0).
    static func assetState(_ prefix: String) -> String {
        MemberAssetState.sql(prefix)
    }

    /// Sets every membership row's asset state and version from the asset rows (after restoring
    /// a snapshot, which may have been taken before memberships carried them).
    static let allMemberAssetsSQL = """
        UPDATE album_members SET asset_state = a.state, asset_version = a.version
        FROM (SELECT asset_id, \(assetState("")) AS state, modification_hlc AS version FROM assets) AS a
        WHERE a.asset_id = album_members.asset_id AND (album_members.asset_state, album_members.asset_version) IS NOT (a.state, a.version)
        """

    /// Passes the state and version of the given assets, as their rows hold them, on to their
    /// membership rows (only to rows that differ).
    static let memberAssetUpdate = BatchInsert(
        """
        UPDATE album_members SET (asset_state, asset_version) = (\(assetOfMember))
        WHERE (asset_state, asset_version) IS NOT (\(assetOfMember)) AND asset_id IN (
        """, columns: 1, tail: ")")

    /// The state and version of a membership row's asset.
    private static let assetOfMember =
        "SELECT \(assetState("a.")), a.modification_hlc FROM assets AS a WHERE a.asset_id = album_members.asset_id"

    static let resourceSQL = PreparedSQL(
        """
        INSERT INTO asset_resources (asset_id, resource_index, type, sha256, size, uniform_type, original_filename)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
        """)

    /// Every recorded rendition is kept (two devices may record different bytes for one source
    /// and box: readers take the smallest hash), so the fold is a set union.
    static let renditionSQL = PreparedSQL(
        """
        INSERT INTO asset_renditions (asset_id, source_sha256, box, fills, sha256, size, png)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
        """)

    static let referenceSQL = PreparedSQL(
        "INSERT INTO referenced_resources (sha256, size, uniform_type) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")

    /// An album's creation stamp is the earliest creation's (two devices may create the same
    /// album: named system albums have deterministic identifiers); its subtype comes with it.
    private static let earlierCreation =
        "excluded.created = 1 AND (albums.created = 0 OR (excluded.created_hlc, excluded.source_device) < (albums.created_hlc, albums.source_device))"

    static let albumSQL = PreparedSQL(
        """
        INSERT INTO albums (album_id, created, created_hlc, source_device, subtype, title, title_hlc, title_device, deleted,
            merged_into, modification_hlc, key_asset, key_asset_hlc, key_asset_device, parent, parent_hlc, parent_device, position,
            position_hlc, position_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)
        ON CONFLICT (album_id) DO UPDATE SET
            created_hlc = CASE WHEN \(earlierCreation) THEN excluded.created_hlc ELSE albums.created_hlc END,
            source_device = CASE WHEN \(earlierCreation) THEN excluded.source_device ELSE albums.source_device END,
            subtype = CASE WHEN \(earlierCreation) THEN excluded.subtype ELSE albums.subtype END,
            created = max(created, excluded.created),
            \(lww(["title"], stamp: "title")),
            \(lww(["key_asset"], stamp: "key_asset")),
            \(lww(["parent"], stamp: "parent")),
            \(lww(["position"], stamp: "position")),
            deleted = max(deleted, excluded.deleted),
            merged_into = CASE WHEN excluded.merged_into IS NOT NULL AND (merged_into IS NULL OR excluded.merged_into < merged_into)
                THEN excluded.merged_into ELSE merged_into END,
            modification_hlc = max(modification_hlc, excluded.modification_hlc)
        """)

    /// A folder's creation stamp is the earliest creation's, like an album's.
    static let listSQL = PreparedSQL(
        """
        INSERT INTO collection_lists (list_id, created, created_hlc, source_device, title, title_hlc, title_device, parent, parent_hlc,
            parent_device, deleted, modification_hlc, creation_event, created_twice, position, position_hlc, position_device)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
        ON CONFLICT (list_id) DO UPDATE SET
            created_hlc = CASE WHEN \(earlierListCreation) THEN excluded.created_hlc ELSE collection_lists.created_hlc END,
            source_device = CASE WHEN \(earlierListCreation) THEN excluded.source_device ELSE collection_lists.source_device END,
            created = max(created, excluded.created),
            \(lww(["title"], stamp: "title")),
            \(lww(["parent"], stamp: "parent")),
            \(lww(["position"], stamp: "position")),
            deleted = max(deleted, excluded.deleted),
            modification_hlc = max(modification_hlc, excluded.modification_hlc),
            created_twice = max(created_twice, excluded.created_twice,
                creation_event IS NOT NULL AND excluded.creation_event IS NOT NULL AND creation_event <> excluded.creation_event),
            creation_event = CASE WHEN creation_event IS NULL OR excluded.creation_event < creation_event
                THEN coalesce(excluded.creation_event, creation_event) ELSE creation_event END
        """)

    private static let earlierListCreation = """
        excluded.created = 1 AND (collection_lists.created = 0 OR (excluded.created_hlc, excluded.source_device) < \
        (collection_lists.created_hlc, collection_lists.source_device))
        """

    /// The membership upsert, with the asset's state and version.
    static let memberUpsert = BatchInsert(
        "INSERT INTO album_members (album_id, asset_id, cl, position, position_hlc, position_device, asset_state, asset_version)",
        columns: 8, tail: memberConflict)

    /// The membership upsert taking the asset's state and version from the asset row (none
    /// yet: not shown).
    static let memberUpsertReadingAsset = BatchInsert(
        """
        INSERT INTO album_members (album_id, asset_id, cl, position, position_hlc, position_device, asset_state, asset_version)
        SELECT m.column1, m.column2, m.column3, m.column4, m.column5, m.column6, \(assetState("a.")), coalesce(a.modification_hlc, 0)
        FROM (
        """, columns: 6, tail: ") AS m LEFT JOIN assets a ON a.asset_id = m.column2 WHERE true " + memberConflict)

    private static let memberConflict = """
        ON CONFLICT (album_id, asset_id) DO UPDATE SET
            cl = max(cl, excluded.cl),
            \(lww(["position"], stamp: "position")),
            asset_state = excluded.asset_state,
            asset_version = excluded.asset_version
        """
}

extension BatchInsert.Values {
    /// A flag as 0 or 1.
    fileprivate mutating func append(_ value: Bool) { append(Int64(value ? 1 : 0)) }

    /// A last-writer-wins stamp: its clock value, then its device.
    fileprivate mutating func append(_ stamp: WriterStamp) {
        append(stamp.hlc)
        append(stamp.device)
    }

    /// Text or NULL.
    fileprivate mutating func append(_ value: String?) {
        if let value { append(value) } else { appendNull() }
    }

    /// A BLOB or NULL.
    fileprivate mutating func append(blob value: [UInt8]?) {
        if let value { append(blob: value) } else { appendNull() }
    }
}
