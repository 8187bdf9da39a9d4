import Foundation
import LedgerCore
import LedgerStore

/// What resolving conflicts between creations did.
struct ConflictResolution: Sendable {
    /// The objects refolded.
    var touched = TouchedObjects()
    /// Events whose verdict changed: newly quarantined, or folded again after being quarantined.
    var changedVerdicts: Set<UUID> = []
}

/// Conflicts between creations, resolved the same way on every device.
///
/// An asset or a folder is created once, and an identifier names one kind of object (asset,
/// album or folder). A second creation of an asset or a folder, or creations of two kinds for one
/// identifier, can only come from a damaged or hostile
/// device (the server refuses them, but logs may hold them from before it did). Of all the
/// creations of an object, the earliest by `(HLC, device, event identifier)` wins: an asset's
/// other creations, and the creations of the other kind, are quarantined (`rule` 1 in the
/// quarantine table) and the object is refolded without them. (Creation events hold the object's
/// whole first state, so a refold without the losers is the object as its first creator made it.) The winner depends only on the set
/// of events, so every device quarantines the same ones; a creation that arrives later and is
/// earlier changes the verdicts, and the sync summary reports the change.
///
/// Albums may be created more than once (an album with a stable key is created by every device
/// that needs it): those creations are not conflicts.
extension Projection {
    /// Finds the objects whose creations conflict (after a fold that folded creations) and
    /// resolves each. `progress` is a rebuild's (refolded rows count as written).
    ///
    /// A conflict arises when a creation is folded, so only the objects created now are looked
    /// at (objects resolved before keep their verdicts until another creation of theirs
    /// arrives): the partial index of created-twice assets, the albums and folders (few) read
    /// once, one probe per created object that is also an album or a folder.
    func resolveConflicts(among created: [UUID], context: FoldContext, progress: inout RebuildProgress?) throws
        -> ConflictResolution
    {
        // Assets that folded two different creations: the partial index holds only these.
        var objects = Set(
            try database.rows("SELECT asset_id FROM assets WHERE created_twice = 1") { UUID(bytes: $0.blob(0)) }.compactMap { $0 }
        ).intersection(created)
        // Identifiers created as two kinds, and folders created twice.
        let albums = Set(try database.rows("SELECT album_id FROM albums WHERE created = 1") { UUID(bytes: $0.blob(0)) }.compactMap { $0 })
        var folders: [UUID: Bool] = [:]
        try database.forEachRow("SELECT list_id, created_twice FROM collection_lists WHERE created = 1") { row in
            if let id = UUID(bytes: row.blob(0)) { folders[id] = row.int64(1) != 0 }
        }
        for object in created where albums.contains(object) || folders[object] != nil {
            let asset =
                try database.firstRow("SELECT 1 FROM assets WHERE asset_id = ? AND created = 1", [object.bytes]) { _ in true } ?? false
            if asset || (albums.contains(object) && folders[object] != nil) || folders[object] == true { objects.insert(object) }
        }
        return try resolveCreations(of: objects, context: context, progress: &progress)
    }

    /// Decides the verdicts on the creations of each of `objects` again and refolds it: after a
    /// fold, for the objects in conflict; after a creation was folded out (the server rejected
    /// it), for its object, whose other creation may win now.
    func resolveCreations(of objects: Set<UUID>, context: FoldContext, progress: inout RebuildProgress?) throws -> ConflictResolution {
        var result = ConflictResolution()
        for object in objects.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            result.changedVerdicts.formUnion(try resolve(object))
            result.touched.formUnion(try refold([object], context: context, progress: &progress))
        }
        return result
    }

    /// Decides the verdicts on the creations of `object`; returns the events whose verdict changed.
    private func resolve(_ object: UUID) throws -> Set<UUID> {
        struct Creation {
            var id: UUID
            var type: EventType
            var stamp: WriterStamp
        }
        var creations: [UUID: Creation] = [:]
        for store in [archive, database].compactMap({ $0 }) {
            for creation in try store.rows(
                """
                SELECT event_id, type, hlc, device_id FROM events
                WHERE object_id = ? AND type IN (
                    '\(EventType.assetCreated.rawValue)', '\(EventType.albumCreated.rawValue)', '\(EventType.collectionListCreated.rawValue)')
                """, [object.bytes],
                { row -> Creation? in
                    guard let id = UUID(bytes: row.blob(0)), let type = EventType(rawValue: row.text(1)) else { return nil }
                    return Creation(id: id, type: type, stamp: WriterStamp(hlc: row.int64(2), device: row.text(3)))
                }
            ) {
                if let creation { creations[creation.id] = creation }
            }
        }
        // Candidates: creations not invalid on their own, not rejected by the server.
        let excluded = try excludedEvents(Array(creations.keys), rule: 0)
        let candidates = creations.values.filter { !excluded.contains($0.id) }
        let previous = try excludedEvents(Array(creations.keys), rule: 1)
        guard let winner = candidates.min(by: { Self.precedes($0.stamp, $0.id, $1.stamp, $1.id) }) else {
            try clearVerdicts(previous)
            return previous
        }
        var losers: [UUID: String] = [:]
        let name = LocalIdentifier(uuid: object, kind: winner.type.objectKind).description
        for creation in candidates where creation.id != winner.id {
            let kind = Self.kindName(winner.type)
            if creation.type != winner.type {
                losers[creation.id] = "its identifier names \(kind) \(name), created before by event \(winner.id.uuidString)"
            } else if winner.type != .albumCreated {
                losers[creation.id] =
                    "\(kind) \(name) was created before, by event \(winner.id.uuidString); \(kind == "asset" ? "an" : "a") \(kind) is created once"
            }
        }
        try clearVerdicts(previous)
        let insert = try database.cachedStatement("INSERT INTO quarantine (event_id, kind, rule, reason) VALUES (?, 1, 1, ?)")
        for (id, reason) in losers {
            defer { insert.reset() }
            try insert.bind(id.bytes, at: 1)
            try insert.bind(reason, at: 2)
            try insert.step()
        }
        return previous.symmetricDifference(losers.keys)
    }

    /// How a reason names the kind of object an event creates.
    private static func kindName(_ type: EventType) -> String {
        switch type.objectKind {
        case .asset: "asset"
        case .album: "album"
        case .collectionList: "folder"
        }
    }

    /// Whether the creation `(a, aID)` precedes `(b, bID)`: by stamp, then by event identifier.
    private static func precedes(_ a: WriterStamp, _ aID: UUID, _ b: WriterStamp, _ bID: UUID) -> Bool {
        if a < b { return true }
        if b < a { return false }
        return aID.bytes.lexicographicallyPrecedes(bID.bytes)
    }

    /// Among `events`, those quarantined by `rule` (0: invalid alone; 1: a conflict), or, for
    /// rule 0, rejected by the server.
    private func excludedEvents(_ events: [UUID], rule: Int) throws -> Set<UUID> {
        var result = Set<UUID>()
        for id in events {
            let quarantined =
                try database.firstRow("SELECT 1 FROM quarantine WHERE event_id = ? AND rule = ?", [id.bytes, Int64(rule)]) { _ in true }
                ?? false
            let rejected =
                rule == 0
                ? try database.firstRow("SELECT 1 FROM sync_rejections WHERE event_id = ?", [id.bytes]) { _ in true } ?? false : false
            if quarantined || rejected { result.insert(id) }
        }
        return result
    }

    private func clearVerdicts(_ events: Set<UUID>) throws {
        for id in events { try database.execute("DELETE FROM quarantine WHERE event_id = ? AND rule = 1", [id.bytes]) }
    }

    /// Refolds objects from the log: their rows (and the memberships that name them) are deleted
    /// and folded again from every event that made them, leaving out the events the quarantine
    /// holds and this device's events the server rejected. Returns what was refolded.
    func refold(_ objects: Set<UUID>, context: FoldContext, progress: inout RebuildProgress?) throws -> TouchedObjects {
        guard !objects.isEmpty else { return TouchedObjects() }
        var events: [UUID: Event] = [:]
        for object in objects {
            let key = object.bytes
            // Albums whose membership events name the object as an asset, and albums merged into it.
            let albums = try database.rows("SELECT DISTINCT album_id FROM album_members WHERE asset_id = ?", [key]) { $0.blob(0) }
            let losers = try database.rows("SELECT album_id FROM albums WHERE merged_into = ?", [key]) { $0.blob(0) }
            try database.execute("DELETE FROM album_members WHERE asset_id = ?1 OR album_id = ?1", [key])
            try database.execute("DELETE FROM asset_resources WHERE asset_id = ?", [key])
            try database.execute("DELETE FROM asset_renditions WHERE asset_id = ?", [key])
            try database.execute("DELETE FROM assets WHERE asset_id = ?", [key])
            try database.execute("DELETE FROM albums WHERE album_id = ?", [key])
            try database.execute("DELETE FROM collection_lists WHERE list_id = ?", [key])
            for store in [archive, database].compactMap({ $0 }) {
                let log = EventLog(store)
                var cursor: Int64 = 0
                while case let page = try log.events(forObject: object, after: cursor, limit: 1000), let last = page.last {
                    for stored in page { events[stored.event.id] = stored.event }
                    cursor = last.localSequence
                }
                let related =
                    try albums.flatMap { album in
                        try store.rows(
                            // A sealed payload cannot be searched: every sealed membership event of the
                            // album is taken (folding the others again changes nothing).
                            "SELECT event_id FROM events WHERE object_id = ? AND type = ? AND (instr(payload, ?) > 0 OR key_id != 0)",
                            [album, EventType.albumMembersChanged.rawValue, key]
                        ) { $0.blob(0) }
                    }
                    + losers.flatMap { album in
                        try store.rows(
                            "SELECT event_id FROM events WHERE object_id = ? AND type = ?", [album, EventType.albumMerged.rawValue]
                        ) { $0.blob(0) }
                    }
                for id in related.compactMap(UUID.init(bytes:)) where events[id] == nil {
                    if let stored = try log.event(withID: id) { events[id] = stored.event }
                }
            }
        }
        var batch = ProjectionBatch()
        var dropped = Set<[UInt8]>()
        for event in events.values.sorted(by: { $0.id.bytes.lexicographicallyPrecedes($1.id.bytes) }) {
            if try isExcluded(event.id) {
                dropped.formUnion(ProjectionBatch.references(of: event, context: context))
            } else {
                batch.add(event, context: context)
            }
        }
        if progress != nil {
            for object in objects {
                progress!.assets.insert(object)
                progress!.memberAssets.insert(object)
            }
        }
        try batch.write(to: database, rebuilding: &progress)
        try forgetResources(dropped.subtracting(batch.referencedHashes), context: context)
        if archive != nil { try CompactionSnapshot.replace(objects, from: database) }
        var touched = batch.touched
        touched.assets.formUnion(objects)
        touched.albums.formUnion(objects)
        touched.lists.formUnion(objects)
        return touched
    }

    /// Whether the fold leaves `event` out: quarantined, or this device's event the server rejected.
    private func isExcluded(_ event: UUID) throws -> Bool {
        try database.firstRow("SELECT 1 FROM quarantine WHERE event_id = ?", [event.bytes]) { _ in true } ?? false
            || (try database.firstRow("SELECT 1 FROM sync_rejections WHERE event_id = ?", [event.bytes]) { _ in true } ?? false)
    }

    /// Removes from `referenced_resources` the resources of events left out of a refold that no
    /// folded event refers to any more (a rejected import's photo), as a full fold would: the
    /// views first (asset resources, current edits), then, for what they do not hold, the
    /// events that carry resources (superseded edits). A rare path: rejections and conflicts.
    private func forgetResources(_ candidates: Set<[UInt8]>, context: FoldContext) throws {
        var unreferenced = Set<[UInt8]>()
        for hash in candidates {
            let held =
                try database.firstRow("SELECT 1 FROM asset_resources WHERE sha256 = ?", [hash]) { _ in true }
                ?? database.firstRow("SELECT 1 FROM assets WHERE content_sha256 = ?1 OR adjustment_sha256 = ?1", [hash]) { _ in true }
                ?? false
            if !held { unreferenced.insert(hash) }
        }
        guard !unreferenced.isEmpty else { return }
        let types = [EventType.assetCreated, .assetContentEdited].map { "'\($0.rawValue)'" }.joined(separator: ", ")
        for store in [archive, database].compactMap({ $0 }) where !unreferenced.isEmpty {
            // One scan of the events that carry resources, each decoded where the statement stands.
            let scan = try store.cachedStatement("SELECT \(EventLog.columns) FROM events WHERE type IN (\(types))")
            defer { scan.reset() }
            while try scan.step() {
                let event = try EventLog.decode(scan).event
                guard try !isExcluded(event.id) else { continue }
                unreferenced.subtract(ProjectionBatch.references(of: event, context: context))
                if unreferenced.isEmpty { break }
            }
        }
        for hash in unreferenced { try database.execute("DELETE FROM referenced_resources WHERE sha256 = ?", [hash]) }
    }
}
