import Foundation
import LedgerCore
import LedgerStore

/// An event of the log as an audit query reports it: the envelope, with the object it is about.
public struct AuditEvent: Sendable, Hashable {
    /// The event.
    public let eventID: UUID
    /// The device that made it.
    public let device: DeviceID
    /// Its position among the device's events.
    public let deviceSequence: Int64
    /// When, as the device's hybrid logical clock stamped it.
    public let timestamp: HLCTimestamp
    /// The change block it belongs to.
    public let changeBlock: UUID
    /// The asset or album it is about (nil for event types this version does not know).
    public let localIdentifier: String?
    /// The event type, for example `asset.changed`.
    public let type: String
    /// Its position in this library's log.
    public let localSequence: Int64
    /// Its position in the server's log, once acknowledged.
    public let serverSequence: Int64?
    /// Where it is kept.
    public let location: EventLocation

    /// When, in wall-clock time.
    public var date: Date { timestamp.date }

    init(_ stored: StoredEvent, location: EventLocation) {
        let event = stored.event
        eventID = event.id
        device = event.device
        deviceSequence = event.deviceSequence
        timestamp = event.timestamp
        changeBlock = event.changeBlock
        let kind: ObjectKind? = event.type.hasPrefix("asset.") ? .asset : event.type.hasPrefix("album.") ? .album : nil
        localIdentifier = kind.map { LocalIdentifier(uuid: event.object, kind: $0).description }
        type = event.type
        localSequence = stored.localSequence
        serverSequence = stored.serverSequence
        self.location = location
    }
}

/// Where a page of an audit query ended.
public struct AuditCursor: Hashable, Sendable, Codable {
    let key: Int64
    let localSequence: Int64
}

/// A page of an audit query, archive and live log together, in the query's order.
public struct AuditPage: Sendable, Hashable {
    /// The events of the page.
    public let events: [AuditEvent]
    /// The cursor for the next page, or nil when this is the last one.
    public let next: AuditCursor?
}

extension PhotoLibrary {
    /// The events one device made, in device order, in keyset pages.
    public func events(fromDevice device: DeviceID, after cursor: AuditCursor? = nil, limit: Int = 100) throws -> AuditPage {
        try auditPage(
            condition: "device_id = ? AND device_seq > ?", values: [device.rawValue, cursor?.key ?? 0],
            order: "device_seq", limit: limit
        ) { $0.event.deviceSequence }
    }

    /// The events stamped within `range`, in `(HLC, local position)` order, in keyset pages.
    public func events(in range: ClosedRange<HLCTimestamp>, after cursor: AuditCursor? = nil, limit: Int = 100) throws -> AuditPage {
        let start = cursor ?? AuditCursor(key: Int64(bitPattern: range.lowerBound.rawValue), localSequence: -1)
        return try auditPage(
            condition: "(hlc, local_seq) > (?, ?) AND hlc <= ?",
            values: [start.key, start.localSequence, Int64(bitPattern: range.upperBound.rawValue)], order: "hlc, local_seq", limit: limit
        ) { Int64(bitPattern: $0.event.timestamp.rawValue) }
    }

    /// The events of one change block, in log order, in keyset pages.
    public func events(inChangeBlock block: UUID, after cursor: AuditCursor? = nil, limit: Int = 100) throws -> AuditPage {
        try auditPage(
            condition: "change_block = ? AND local_seq > ?", values: [block.bytes, cursor?.localSequence ?? 0],
            order: "local_seq", limit: limit
        ) { $0.localSequence }
    }

    /// The SQL of an audit query (for checking its plan).
    static func auditSQL(condition: String, order: String) -> String {
        "SELECT event_id FROM events WHERE \(condition) ORDER BY \(order) LIMIT ?"
    }

    /// Runs an audit query on the archive and the live log and merges the two in `(key, local_seq)` order.
    private func auditPage(
        condition: String, values: [any SQLBindable], order: String, limit: Int, keyOf: (StoredEvent) -> Int64
    ) throws -> AuditPage {
        let limit = max(1, limit)
        let found = try withArchive { state, archive in
            try readDatabase { db in
                // The archive's part ends at the horizon (an interrupted compaction may have copied more);
                // the live log's starts after the archive's last event (a library started from a
                // snapshot keeps the snapshot's event in both).
                let archived = try archive.map { archive in
                    min(state.archivedThrough, try archive.firstRow("SELECT coalesce(max(local_seq), 0) FROM events") { $0.int64(0) } ?? 0)
                }
                let stores: [(Database, EventLocation, String)] =
                    (archive.map { [($0, .archive, " AND local_seq <= \(state.archivedThrough)")] } ?? [])
                    + [(db, .live, archived.map { " AND local_seq > \($0)" } ?? "")]
                return try stores.flatMap { store, location, bound in
                    let sql = Self.auditSQL(condition: condition + bound, order: order)
                    let ids = try store.rows(sql, values + [Int64(limit + 1)]) { UUID(bytes: $0.blob(0)) }
                    return try ids.compactMap { id in try id.flatMap { try EventLog(store).event(withID: $0) }.map { ($0, location) } }
                }
            }
        }
        let sorted = found.sorted { (keyOf($0.0), $0.0.localSequence) < (keyOf($1.0), $1.0.localSequence) }
        let page = sorted.prefix(limit)
        let next = sorted.count > limit ? page.last.map { AuditCursor(key: keyOf($0.0), localSequence: $0.0.localSequence) } : nil
        return AuditPage(events: page.map { AuditEvent($0.0, location: $0.1) }, next: next)
    }
}
