import Foundation
import LedgerCore
import LedgerStore

/// An event kept in the log but not folded into the views, with why.
///
/// The list is the same on every device that holds the same events: verdicts depend on the
/// events alone (see `EventSchema` and the conflict rules of creations), never on the order
/// they arrived in.
public struct QuarantineEntry: Sendable, Hashable {
    /// The event.
    public let eventID: UUID
    /// The device that made it.
    public let device: DeviceID
    /// Its type, as written (possibly one this build does not know).
    public let type: String
    /// The object it names.
    public let object: UUID
    /// When it was made, by its device's clock.
    public let timestamp: HLCTimestamp
    /// Why it is not folded.
    public let kind: QuarantineKind
    /// What is wrong, or what it waits for.
    public let reason: String

    init(event: Event, kind: QuarantineKind, reason: String) {
        eventID = event.id
        device = event.device
        type = event.type
        object = event.object
        timestamp = event.timestamp
        self.kind = kind
        self.reason = reason
    }
}

extension PhotoLibrary {
    /// Every event kept but not folded, in event identifier order (the same order on every
    /// device): quarantined events, events that need a newer PhotoLedger, sealed events.
    public func quarantine() throws -> [QuarantineEntry] {
        try withArchive { _, archive in
            try readDatabase { db in
                try db.rows("SELECT event_id, kind, reason FROM quarantine ORDER BY event_id") { row in
                    (UUID(bytes: row.blob(0)), QuarantineKind(rawValue: Int(row.int64(1))), row.text(2))
                }.compactMap { id, kind, reason -> QuarantineEntry? in
                    guard let id, let kind else { return nil }
                    let stored = try EventLog(db).event(withID: id) ?? archive.flatMap { try EventLog($0).event(withID: id) }
                    return stored.map { QuarantineEntry(event: $0.event, kind: kind, reason: reason) }
                }
            }
        }
    }

    /// How many events are kept but not folded, by kind.
    public func quarantineCounts() throws -> [QuarantineKind: Int] {
        try readDatabase { db in
            var counts: [QuarantineKind: Int] = [:]
            try db.forEachRow("SELECT kind, count(*) FROM quarantine GROUP BY kind") { row in
                if let kind = QuarantineKind(rawValue: Int(row.int64(0))) { counts[kind] = Int(row.int64(1)) }
            }
            return counts
        }
    }
}
