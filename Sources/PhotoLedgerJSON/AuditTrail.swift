import Foundation
import PhotoLedger

/// The audit trail `photoledger history` shows, read through the library's audit API, and its
/// JSON shape (`history --json`).
package enum AuditTrail {
    /// One entry of the audit trail: an event and the fields it wrote.
    package struct Entry {
        package let localSequence: Int64
        package let eventID: UUID
        package let device: String
        package let timestamp: HLCTimestamp
        package let type: String
        package let object: String
        package let changes: [FieldChange]
    }

    /// The entries after the log position `since`: those of `object` (a local identifier) when
    /// given, else every event of the library in clock order (or one device's in device order);
    /// only those made on `device` when given.
    package static func entries(in library: PhotoLibrary, object: String? = nil, device: String? = nil, after since: Int64 = 0) throws
        -> [Entry]
    {
        var entries: [Entry]
        if let object {
            entries = try objectHistory(object, in: library)
        } else {
            entries = try libraryHistory(library, device: device.map { DeviceID($0) }, after: since)
        }
        entries = entries.filter { $0.localSequence > since }
        if let device { entries = entries.filter { $0.device == device } }
        return entries
    }

    /// The history of one object, with what each event changed and how conflicts were resolved.
    package static func objectHistory(_ identifier: String, in library: PhotoLibrary) throws -> [Entry] {
        var entries: [Entry] = []
        var cursor: ObjectHistoryCursor?
        repeat {
            let page = try library.history(of: identifier, after: cursor, limit: 1000)
            entries += page.entries.map { entry in
                Entry(
                    localSequence: entry.localSequence, eventID: entry.eventID, device: entry.device.rawValue, timestamp: entry.timestamp,
                    type: entry.type, object: identifier, changes: entry.changes)
            }
            cursor = page.next
        } while cursor != nil
        return entries
    }

    /// Every event of the library after the log position `since` (archived ones included) in
    /// clock order, or one device's in device order, each with the fields it changed.
    package static func libraryHistory(_ library: PhotoLibrary, device: DeviceID?, after since: Int64) throws -> [Entry] {
        var events: [AuditEvent] = []
        var cursor: AuditCursor?
        repeat {
            let page =
                try device.map { try library.events(fromDevice: $0, after: cursor, limit: 1000) }
                ?? library.events(in: HLCTimestamp.zero...HLCTimestamp(rawValue: UInt64(Int64.max)), after: cursor, limit: 1000)
            events += page.events.filter { $0.localSequence > since }
            cursor = page.next
        } while cursor != nil
        // The fields each event changed come from its object's history.
        let objects = Dictionary(events.map { ($0.eventID, $0.localIdentifier) }, uniquingKeysWith: { first, _ in first })
        var changes: [UUID: [FieldChange]] = [:]
        for object in Set(events.compactMap(\.localIdentifier)) {
            guard let history = try? objectHistory(object, in: library) else { continue }
            for entry in history where objects[entry.eventID] == object { changes[entry.eventID] = entry.changes }
        }
        return events.map { event in
            Entry(
                localSequence: event.localSequence, eventID: event.eventID, device: event.device.rawValue, timestamp: event.timestamp,
                type: event.type, object: event.localIdentifier ?? "", changes: changes[event.eventID] ?? [])
        }
    }

    /// The `history --json` array of `entries`.
    package static func json(_ entries: [Entry]) -> JSON {
        .array(entries.map(json))
    }

    /// The `history --json` shape of one entry.
    package static func json(_ entry: Entry) -> JSON {
        .object([
            ("eventId", .string(entry.eventID.uuidString)), ("device", .string(entry.device)),
            ("timestamp", .string(Listing.isoDate(entry.timestamp.date))), ("type", .string(entry.type)), ("object", .string(entry.object)),
            ("changes", .array(entry.changes.map(json))),
        ])
    }

    /// The `history --json` shape of one field change.
    package static func json(_ change: FieldChange) -> JSON {
        let (outcome, by): (String, UUID?)
        switch change.outcome {
        case .inEffect: (outcome, by) = ("inEffect", nil)
        case .replaced(let event): (outcome, by) = ("replaced", event)
        case .overruled(let event): (outcome, by) = ("overruled", event)
        }
        return .object([
            ("field", .string(change.field)), ("oldValue", .string(change.oldValue)), ("newValue", .string(change.newValue)),
            ("outcome", .string(outcome)), ("by", .string(by?.uuidString)),
        ])
    }
}
