import Foundation
import LedgerCore
import LedgerStore

/// One event in the history of an asset or album: who made it, when, in which change block, and
/// what it changed.
public struct ObjectHistoryEntry: Sendable, Hashable {
    /// The event.
    public let eventID: UUID
    /// The event type, for example `album.renamed`.
    public let type: String
    /// The device that made the change.
    public let device: DeviceID
    /// When, as the device's hybrid logical clock stamped it.
    public let timestamp: HLCTimestamp
    /// The change block the event belongs to.
    public let changeBlock: UUID
    /// The event's position in this library's log.
    public let localSequence: Int64
    /// Its position in the server's log, once acknowledged.
    public let serverSequence: Int64?
    /// Where the event is kept.
    public let location: EventLocation
    /// The fields the event wrote, with the value before and after.
    public internal(set) var changes: [FieldChange]

    /// When, in wall-clock time (the physical part of ``timestamp``).
    public var date: Date { timestamp.date }
}

/// One field an event wrote, with the value it replaced.
///
/// Old values come from folding the object's events in `(HLC, device)` order, the order
/// conflict resolution uses, and verdicts from what each writer had seen (the causal claims its
/// event carries), so both are the same on every device that holds the same events.
///
/// A write of a last-writer-wins field is *replaced* when the next write in that order names it
/// as the write it overwrote, and *overruled* when that next write was made without seeing it (a
/// concurrent change that won by its higher stamp). Events made before writers recorded what they
/// had seen (schema version 1) carry no claims: a write they make is read as replacing the one
/// before it. Causal lengths (deletion, membership) carry their own order: a higher length
/// replaces, an equal or lower one is overruled.
public struct FieldChange: Sendable, Hashable {
    /// What became of the write.
    public enum Outcome: Sendable, Hashable {
        /// The value written is the one in effect now.
        case inEffect
        /// A later write (the event named) replaced it.
        case replaced(by: UUID)
        /// Conflict resolution overruled it: a concurrent write from another device (the event
        /// named) has a higher `(HLC, device)` stamp, or a higher causal length, and won.
        case overruled(by: UUID)
    }

    /// The field, for example `title`, `isFavorite` or `album <identifier>` (membership).
    public let field: String
    /// The value before the write, in the `(HLC, device)` order; nil when unset.
    public let oldValue: String?
    /// The value written; nil when cleared.
    public let newValue: String?
    /// What became of the write.
    public internal(set) var outcome: Outcome
}

/// A position in an object's history, for reading it in pages.
public struct ObjectHistoryCursor: Hashable, Sendable, Codable {
    let timestamp: UInt64
    let device: String
    let event: UUID
}

/// One page of an object's history, oldest first in `(HLC, device)` order.
public struct ObjectHistoryPage: Sendable, Hashable {
    /// The entries of the page.
    public let entries: [ObjectHistoryEntry]
    /// The cursor for the next page, or nil when this is the last one.
    public let next: ObjectHistoryCursor?
}

extension PhotoLibrary {
    /// Every event that touched one asset or album — including album membership changes that
    /// touched an asset, and merges into an album — oldest first in `(HLC, device)` order, with
    /// the fields each changed from what to what, and the writes that conflict resolution
    /// overruled. Archived events are included.
    ///
    /// - Parameters:
    ///   - identifier: An asset (`…/L0/001`) or album (`…/L0/040`) local identifier.
    ///   - cursor: Where the previous page ended, or nil for the first page.
    ///   - limit: The most entries to return.
    /// - Throws: ``PhotoLibraryError`` `.identifierNotFound` when the identifier is malformed
    ///   or no event ever touched it.
    public func history(of identifier: String, after cursor: ObjectHistoryCursor? = nil, limit: Int = 100) throws -> ObjectHistoryPage {
        guard let parsed = LocalIdentifier(identifier) else {
            throw PhotoLibraryError(.identifierNotFound, "'\(identifier)' is not an asset or album identifier (<UUID>/L0/001 or /L0/040)")
        }
        let events = try withArchive { _, archive in
            try readDatabase { db in try Self.historyEvents(of: parsed, db: db, archive: archive) }
        }
        guard !events.isEmpty else { throw PhotoLibraryError.notFound(identifier) }
        var fold = HistoryFold(
            object: parsed, context: FoldContext(schema: options.eventSchema, library: nil, keys: encryption.payloadKeys))
        for (stored, location) in events { fold.add(stored, location: location) }
        let after = cursor.map { HistoryFold.Key(timestamp: $0.timestamp, device: $0.device, event: $0.event) }
        let remaining = fold.entries.filter { entry in after.map { HistoryFold.key(of: entry) > $0 } ?? true }
        let page = Array(remaining.prefix(max(0, limit)))
        let next =
            remaining.count > page.count
            ? page.last.map {
                ObjectHistoryCursor(timestamp: $0.timestamp.rawValue, device: $0.device.rawValue, event: $0.eventID)
            } : nil
        return ObjectHistoryPage(entries: page, next: next)
    }

    /// The events of the history, from the archive and the live log, in `(HLC, device, id)` order.
    static func historyEvents(of object: LocalIdentifier, db: Database, archive: Database?) throws -> [(StoredEvent, EventLocation)] {
        // The archive first, so an event still in the live log (after an interrupted compaction) is reported there.
        let stores: [(Database, EventLocation)] = (archive.map { [($0, .archive)] } ?? []) + [(db, .live)]
        var events: [UUID: (StoredEvent, EventLocation)] = [:]
        for (store, location) in stores {
            let log = EventLog(store)
            var cursor: Int64 = 0
            while case let page = try log.events(forObject: object.uuid, after: cursor, limit: 1000), let last = page.last {
                for stored in page { events[stored.event.id] = (stored, location) }
                cursor = last.localSequence
            }
        }
        // Other objects' events that name this one: membership changes of the albums an asset was
        // ever in, and merges of other albums into an album.
        let (sql, type) =
            object.kind == .asset
            ? ("SELECT DISTINCT album_id FROM album_members WHERE asset_id = ?", EventType.albumMembersChanged)
            : ("SELECT album_id FROM albums WHERE merged_into = ?", EventType.albumMerged)
        let related = try db.rows(sql, [object.uuid.bytes]) { $0.blob(0) }
        for (store, location) in stores {
            for other in related {
                let ids = try store.rows(
                    "SELECT event_id FROM events WHERE object_id = ? AND type = ? AND instr(payload, ?) > 0 ORDER BY local_seq",
                    [other, type.rawValue, object.uuid.bytes]
                ) { UUID(bytes: $0.blob(0)) }
                for case let id? in ids {
                    if let stored = try EventLog(store).event(withID: id) { events[id] = (stored, location) }
                }
            }
        }
        return events.values.sorted { HistoryFold.key(of: $0.0.event) < HistoryFold.key(of: $1.0.event) }
    }
}

/// Folds one object's events in `(HLC, device)` order into history entries with old and new
/// values, the way the projection folds them: last-writer-wins registers and causal lengths.
struct HistoryFold {
    struct Key: Comparable {
        var timestamp: UInt64
        var device: String
        var event: UUID

        static func < (lhs: Key, rhs: Key) -> Bool {
            if lhs.timestamp != rhs.timestamp { return lhs.timestamp < rhs.timestamp }
            if lhs.device != rhs.device { return lhs.device.utf8.lexicographicallyPrecedes(rhs.device.utf8) }
            return lhs.event.bytes.lexicographicallyPrecedes(rhs.event.bytes)
        }
    }

    static func key(of event: Event) -> Key {
        Key(timestamp: event.timestamp.rawValue, device: event.device.rawValue, event: event.id)
    }

    static func key(of entry: ObjectHistoryEntry) -> Key {
        Key(timestamp: entry.timestamp.rawValue, device: entry.device.rawValue, event: entry.eventID)
    }

    /// How a field merges.
    enum Merge {
        /// Last writer wins by `(HLC, device)`.
        case register
        /// Causal length: the highest wins; odd and even name the two states.
        case causalLength(Int64, odd: String, even: String)
        /// Set once or only ever turned on: no conflict.
        case plain

        var isPlain: Bool {
            if case .plain = self { return true }
            return false
        }
    }

    /// The write currently in effect for a field.
    private struct Holder {
        var value: String?
        var causalLength: Int64
        var stamp: WriterStamp
        var entry: Int
        var change: Int
    }

    let object: LocalIdentifier
    let context: FoldContext
    private(set) var entries: [ObjectHistoryEntry] = []
    private var holders: [String: Holder] = [:]

    init(object: LocalIdentifier, context: FoldContext) {
        self.object = object
        self.context = context
    }

    mutating func add(_ stored: StoredEvent, location: EventLocation) {
        let event = stored.event
        entries.append(
            ObjectHistoryEntry(
                eventID: event.id, type: event.type, device: event.device, timestamp: event.timestamp, changeBlock: event.changeBlock,
                localSequence: stored.localSequence, serverSequence: stored.serverSequence, location: location, changes: []))
        let stamp = WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
        guard
            case .fold(let change, let claims) = context.verdict(on: event, stamp: stamp)
        else { return }
        for (field, value, merge, register) in writes(of: change, event: event) {
            // nil: no claim known (a version-1 event); .some(nil): the writer had seen no write of the field.
            let claim: WriterStamp?? = register.flatMap { register in claims.map { $0.overwritten[register] ?? nil } }
            write(field, value, merge, stamp: stamp, claim: claim)
        }
    }

    private mutating func write(_ field: String, _ value: String?, _ merge: Merge, stamp: WriterStamp, claim: WriterStamp??) {
        let index = entries.count - 1
        let holder = holders[field]
        let position = entries[index].changes.count
        var change = FieldChange(field: field, oldValue: holder?.value, newValue: value, outcome: .inEffect)
        var causalLength: Int64 = 0
        if case .causalLength(let length, let odd, let even) = merge {
            causalLength = length
            change = FieldChange(
                field: field, oldValue: holder?.value, newValue: CausalLength.isPresent(length) ? odd : even, outcome: .inEffect)
            if let holder, length <= holder.causalLength {
                change.outcome = .overruled(by: entries[holder.entry].eventID)
                entries[index].changes.append(change)
                return
            }
        }
        if let holder, !merge.isPlain {
            // A register write replaces the holder when the writer had seen it (its claim names the
            // holder's stamp), and overrules it otherwise; without a claim it replaces it.
            let sawHolder: Bool
            switch (merge, claim) {
            case (.register, .some(let claimed)): sawHolder = claimed == holder.stamp
            default: sawHolder = true
            }
            entries[holder.entry].changes[holder.change].outcome =
                sawHolder ? .replaced(by: entries[index].eventID) : .overruled(by: entries[index].eventID)
        }
        entries[index].changes.append(change)
        holders[field] = Holder(value: change.newValue, causalLength: causalLength, stamp: stamp, entry: index, change: position)
    }

    private func writes(of change: ChangeEvent, event: Event) -> [(String, String?, Merge, RegisterField?)] {
        switch change {
        case .assetCreated(let c):
            var writes: [(String, String?, Merge, RegisterField?)] = [
                ("mediaType", "\(c.mediaType)", .plain, nil), ("pixelSize", "\(c.pixelWidth)×\(c.pixelHeight)", .plain, nil),
                ("creationDate", Self.text(c.creationDate), .register, .creationDate),
                ("location", Self.text(c.location), .register, .location),
                ("isFavorite", "\(c.isFavorite)", .register, .isFavorite), ("isHidden", "\(c.isHidden)", .register, .isHidden),
                ("isDeleted", nil, .causalLength(1, odd: "false", even: "true"), nil),
            ]
            if c.duration > 0 { writes.append(("duration", "\(c.duration)", .plain, nil)) }
            if let burst = c.burstIdentifier {
                writes.append(("burstIdentifier", burst, .plain, nil))
                writes.append(("burstUserPick", "\(c.burstSelectionTypes.contains(.userPick))", .register, .burstUserPick))
            }
            if !c.resources.isEmpty { writes.append(("resources", c.resources.map(\.filename).joined(separator: ", "), .plain, nil)) }
            return writes
        case .assetChanged(let c):
            var writes: [(String, String?, Merge, RegisterField?)] = []
            if let date = c.creationDate { writes.append(("creationDate", Self.text(date), .register, .creationDate)) }
            if let location = c.location { writes.append(("location", Self.text(location), .register, .location)) }
            if let favorite = c.isFavorite { writes.append(("isFavorite", "\(favorite)", .register, .isFavorite)) }
            if let hidden = c.isHidden { writes.append(("isHidden", "\(hidden)", .register, .isHidden)) }
            if let pick = c.burstUserPick { writes.append(("burstUserPick", "\(pick)", .register, .burstUserPick)) }
            return writes
        case .assetDeleted(let cl), .assetRecovered(let cl):
            return [("isDeleted", nil, .causalLength(cl, odd: "false", even: "true"), nil)]
        case .assetPurged:
            return [("isPurged", "true", .plain, nil)]
        case .renditionRecorded:
            return []  // a derived resource: no field of the asset changes
        case .assetContentEdited(let edit):
            return [("content", edit.rendered.map { "edited " + Hex.encode($0.sha256).prefix(16) } ?? "original", .register, .content)]
        case .albumCreated(let title, let subtype):
            return [("subtype", "\(subtype)", .plain, nil), ("title", title, .register, .title)]
        case .albumRenamed(let title):
            return [("title", title, .register, .title)]
        case .albumDeleted:
            return [("isDeleted", "true", .plain, nil)]
        case .albumMoved(let parent), .listMoved(let parent):
            return [
                ("parent", parent.map { LocalIdentifier(uuid: $0, kind: .collectionList).description } ?? "top level", .register, .parent)
            ]
        case .listCreated(let title):
            return [("title", title, .register, .title)]
        case .albumPositioned(let position), .listPositioned(let position):
            return [("position", position, .register, .collectionPosition)]
        case .listRenamed(let title):
            return [("title", title, .register, .title)]
        case .listDeleted:
            return [("isDeleted", "true", .plain, nil)]
        case .albumKeyAssetSet(let asset):
            return [("keyAsset", asset.map { LocalIdentifier(uuid: $0, kind: .asset).description }, .register, .keyAsset)]
        case .albumMerged(let winner):
            return event.object == object.uuid
                ? [("mergedInto", LocalIdentifier(uuid: winner, kind: .album).description, .plain, nil)]
                : [("mergedFrom", LocalIdentifier(uuid: event.object, kind: .album).description, .plain, nil)]
        case .albumMembersChanged(_, let entries):
            return entries.flatMap { entry -> [(String, String?, Merge, RegisterField?)] in
                let other: LocalIdentifier
                if object.kind == .asset {
                    guard entry.asset == object.uuid else { return [] }
                    other = LocalIdentifier(uuid: event.object, kind: .album)
                } else {
                    other = LocalIdentifier(uuid: entry.asset, kind: .asset)
                }
                let name = object.kind == .asset ? "album \(other)" : "asset \(other)"
                var writes: [(String, String?, Merge, RegisterField?)] = []
                if entry.causalLength > 0 {
                    writes.append((name, nil, .causalLength(entry.causalLength, odd: "member", even: "not a member"), nil))
                }
                if let position = entry.position { writes.append((name + " position", position, .register, .position(asset: entry.asset))) }
                return writes
            }
        }
    }

    private static func text(_ date: Date?) -> String? { date?.ISO8601Format() }

    private static func text(_ location: Location?) -> String? {
        location.map { location in
            "\(location.latitude), \(location.longitude)" + (location.altitude.map { ", \($0) m" } ?? "")
        }
    }
}
