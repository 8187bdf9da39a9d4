import Foundation
import LedgerCore
import LedgerStore

/// Where a library keeps an event.
public enum EventLocation: String, Sendable, Hashable, Codable {
    /// The archive file, where compaction moved it.
    case archive
    /// The library's live log.
    case live
}

/// A place where the stored history does not match its hashes: an event changed, removed or
/// reordered, in this library or on the server.
public struct ChainFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which chain failed.
    public enum Chain: String, Sendable, Hashable, Codable {
        /// This library's own chain, in local order (archive, then live log).
        case local
        /// The server's chain, in server order, recomputed over the events held here.
        case server
    }

    /// Which chain failed.
    public let chain: Chain
    /// The position in that chain: the local sequence, or the server sequence.
    public let position: Int64
    /// The event at that position, when known.
    public let eventID: UUID?
    /// Where the event is kept, when it is held here.
    public let location: EventLocation?
    /// What does not match.
    public let reason: String

    public var description: String {
        let event = eventID.map { "event \($0.uuidString)" } ?? "an event"
        let place = location.map { " (\($0.rawValue))" } ?? ""
        return "\(chain == .local ? "local" : "server") hash chain fails at \(event), position \(position)\(place): \(reason)"
    }
}

/// The result of verifying this library's hash chain across the archive and the live log.
public struct ChainVerificationReport: Sendable, Hashable, CustomStringConvertible {
    /// Events checked in the archive.
    public let archivedEvents: Int
    /// Events checked in the live log.
    public let liveEvents: Int
    /// The first problem found, or nil when the chain is intact.
    public let failure: ChainFailure?
    /// Events that name no library (written before events were bound to their library, or
    /// before this device learned the library's identifier): their hashes cannot change, but they
    /// could be replayed into another library.
    public internal(set) var unboundEvents = 0

    /// Whether every event matched its hash.
    public var isIntact: Bool { failure == nil }

    /// The events checked: archived and live.
    public var checkedEvents: Int { archivedEvents + liveEvents }

    public var description: String {
        failure?.description
            ?? "hash chain intact: \(archivedEvents) archived and \(liveEvents) live events"
            + (unboundEvents > 0 ? " (\(unboundEvents) name no library)" : "")
    }
}

/// One event of the server's chain as a pull page reports it.
package struct ServerChainEntry: Sendable, Hashable {
    /// The event's position in the server's log.
    package var serverSequence: Int64
    /// The event.
    package var eventID: UUID
    /// The server's chain value after the event.
    package var chainHash: [UInt8]

    /// Creates an entry.
    package init(serverSequence: Int64, eventID: UUID, chainHash: [UInt8]) {
        self.serverSequence = serverSequence
        self.eventID = eventID
        self.chainHash = chainHash
    }
}

/// An event a transaction has just appended, with its local position and chain link.
struct AppendedEvent {
    var event: Event
    var localSequence: Int64
    /// The local chain values before and after it (nil when unknown).
    var link: EventLog.ChainLink?
    /// The server's chain value stored in its row with it, if any.
    var serverChainHash: [UInt8]?
}

/// The result of checking the events held here against the server's chain.
public struct ServerChainReport: Sendable, Hashable, CustomStringConvertible {
    /// Events held here whose server chain value was recomputed from the local copy and matched.
    public internal(set) var checked = 0
    /// Server positions whose event this library does not hold (not pulled yet).
    public internal(set) var notHeld = 0
    /// Events held here whose previous server chain value is unknown, so their link was not checked.
    public internal(set) var unlinked = 0
    /// The first mismatch, or nil when every checked event matches.
    public internal(set) var failure: ChainFailure?

    /// Whether no mismatch was found.
    public var isIntact: Bool { failure == nil }

    public var description: String {
        failure?.description
            ?? "server chain matches: \(checked) events checked, \(notHeld) not held here, \(unlinked) without a known predecessor"
    }
}

extension PhotoLibrary {
    // MARK: Local chain

    /// Verifies the library's hash chain: the archive from the first event to the compaction
    /// horizon, then the live log continuing from the archive's last chain value, and that no
    /// committed event is missing at the end of the log.
    public func verifyChain() throws -> ChainVerificationReport {
        try withArchive { state, archive in
            var archivedEvents = 0
            if let archive {
                let result = try Self.verifyArchive(archive, state: state)
                archivedEvents = result.count
                if var failure = result.failure {
                    // A library started from a snapshot fetches its history after (Snapshots.swift).
                    if let status = try snapshotBootstrapStatus(), status.fetchedThrough < status.position {
                        failure = ChainFailure(
                            chain: .local, position: status.fetchedThrough + 1, eventID: nil, location: .archive,
                            reason: "the history up to the snapshot this library started from (position \(status.position)) is fetched "
                                + "through \(status.fetchedThrough) only: sync to fetch the rest, then verify again")
                    }
                    return ChainVerificationReport(archivedEvents: archivedEvents, liveEvents: 0, failure: failure)
                }
            }
            let unbound = try [archive].compactMap { $0 }.reduce(0) { count, archive in
                count + Int(try archive.firstRow("SELECT count(*) FROM events WHERE library IS NULL") { $0.int64(0) } ?? 0)
            }
            var report = try readDatabase { db in
                let log = EventLog(db)
                switch try log.verify(after: state.archivedThrough, head: state.archivedHash) {
                case .broken(let broken):
                    return ChainVerificationReport(
                        archivedEvents: archivedEvents, liveEvents: broken.verifiedCount,
                        failure: ChainFailure(
                            chain: .local, position: broken.localSequence, eventID: broken.eventID, location: .live,
                            reason: "the stored hash does not match: the event, or one before it, was changed, removed or reordered"))
                case .intact(let count):
                    return ChainVerificationReport(
                        archivedEvents: archivedEvents, liveEvents: count,
                        failure: try Self.missingTail(in: db, archivedThrough: state.archivedThrough))
                }
            }
            report.unboundEvents =
                unbound
                + (try readDatabase { db in
                    Int(try db.firstRow("SELECT count(*) FROM events WHERE library IS NULL") { $0.int64(0) } ?? 0)
                })
            return report
        }
    }

    /// A failure when the log ends before the last committed change block does: events were
    /// removed from its end, which the chain alone cannot show.
    static func missingTail(in db: Database, archivedThrough: Int64) throws -> ChainFailure? {
        let last = max(try EventLog(db).lastLocalSequence(), archivedThrough)
        guard let committed = try db.firstRow("SELECT max(end_seq) FROM commits", [], { $0.optionalInt64(0) }) ?? nil, committed > last
        else { return nil }
        return ChainFailure(
            chain: .local, position: last + 1, eventID: nil, location: .live,
            reason: "events up to position \(committed) were committed but the log ends at \(last): events were removed from its end")
    }

    /// The chain of the archive up to the horizon, ending at the chain value the library recorded.
    static func verifyArchive(_ archive: Database, state: AuditState) throws -> (count: Int, failure: ChainFailure?) {
        let log = EventLog(archive)
        if case .broken(let broken) = try log.verify() {
            return (
                broken.verifiedCount,
                ChainFailure(
                    chain: .local, position: broken.localSequence, eventID: broken.eventID, location: .archive,
                    reason: "the stored hash does not match: the archived event, or one before it, was changed, removed or reordered")
            )
        }
        let count = Int(
            try archive.firstRow("SELECT count(*) FROM events WHERE local_seq <= ?", [state.archivedThrough]) { $0.int64(0) } ?? 0)
        let head = try archive.firstRow("SELECT hash FROM events WHERE local_seq = ?", [state.archivedThrough]) { $0.blob(0) }
        guard head == state.archivedHash else {
            return (
                count,
                ChainFailure(
                    chain: .local, position: state.archivedThrough, eventID: nil, location: .archive,
                    reason:
                        "the archive does not end with the chain value recorded at compaction: archived events are missing or were replaced"
                )
            )
        }
        return (count, nil)
    }

    // MARK: Server chain

    /// Checks the events of a pull page (or of any run of the server's log, in server order)
    /// against the server's chain values, and records the values for ``verifyServerChain()``.
    ///
    /// For every entry whose event this library holds, the server's chain value is recomputed
    /// from the previous server value (the previous entry, the value recorded from an earlier
    /// page, or the origin at position 1) and the local copy of the event: a mismatch means the
    /// local copy (or the server's) was changed. A held event acknowledged at another server
    /// position, or a server that now reports another event or value at a position it reported
    /// before, is a mismatch too. Call it after applying the page's events; it stops at the
    /// first mismatch and records nothing after it.
    package func verifyServerChain(_ entries: [ServerChainEntry]) throws -> ServerChainReport {
        try withArchive { _, archive in
            try withDatabase { db in try Self.recordServerChain(entries, db: db, archive: archive) }
        }
    }

    /// The work of ``verifyServerChain(_:)`` inside the caller's transaction. `appended` holds
    /// events this transaction has just stored from the same page, with their local positions and
    /// chain links: their stored copies are the events themselves, so they are not read back, and
    /// where the server's previous value equals the local one, the local chain value is the
    /// server's value recomputed (the same SHA-256 over the same bytes).
    ///
    /// An appended event may hold its server chain value in its own row already
    /// (``AppendedEvent/serverChainHash``); the values recorded before are read from the events
    /// before `appendedFrom` (the first local position this transaction appended) and from
    /// `server_chain`.
    static func recordServerChain(
        _ entries: [ServerChainEntry], appended: [UUID: AppendedEvent] = [:], appendedFrom: Int64? = nil, db: Database, archive: Database?
    ) throws -> ServerChainReport {
        var report = ServerChainReport()
        let sorted = entries.sorted { $0.serverSequence < $1.serverSequence }
        guard let first = sorted.first, let last = sorted.last else { return report }
        var recorded: [Int64: (entry: ServerChainEntry, held: Bool)] = [:]
        try db.forEachRow(
            """
            SELECT server_seq, event_id, chain_hash, held FROM server_chain WHERE server_seq BETWEEN ?1 AND ?2
            UNION ALL
            SELECT server_seq, event_id, server_chain_hash, 1 FROM events
            WHERE server_seq BETWEEN ?1 AND ?2 AND local_seq < ?3 AND server_chain_hash IS NOT NULL
            """,
            [first.serverSequence - 1, last.serverSequence, appendedFrom ?? Int64.max]
        ) { row in
            recorded[row.int64(0)] = (
                ServerChainEntry(serverSequence: row.int64(0), eventID: UUID(bytes: row.blob(1)) ?? UUID(), chainHash: row.blob(2)),
                row.int64(3) == 1
            )
        }
        // Rows are written a hundred per statement; those checked before a mismatch are written
        // before returning it, and all checked so far before a value is looked up in the table.
        var rows: [(entry: ServerChainEntry, held: Bool)] = []
        rows.reserveCapacity(sorted.count)
        func write() throws {
            _ = try Self.serverChainInsert.run(count: rows.count, in: db) { index, values in
                let row = rows[index]
                values.append(row.entry.serverSequence)
                values.append(uuid: row.entry.eventID)
                values.append(blob: row.entry.chainHash)
                values.append(Int64(row.held ? 1 : 0))
            }
            rows.removeAll(keepingCapacity: true)
        }
        var previous = recorded[first.serverSequence - 1]?.entry
        for entry in sorted {
            defer { previous = entry }
            let before = recorded[entry.serverSequence]
            if let before = before?.entry, before != entry {
                report.failure = ChainFailure(
                    chain: .server, position: entry.serverSequence, eventID: entry.eventID, location: nil,
                    reason: "the server now reports another event or chain value at this position than it did before "
                        + "(event \(before.eventID.uuidString)): the server's log was changed")
                try write()
                return report
            }
            let link = previous?.serverSequence == entry.serverSequence - 1 ? previous?.chainHash : nil
            if link == nil { try write() }  // check reads the previous value from the table
            let event = appended[entry.eventID]
            let outcome = try check(entry, after: link, expectHeld: false, appended: event, db: db, archive: archive)
            guard report.count(outcome) else {
                try write()
                return report
            }
            let held = outcome != .notHeld
            // Recorded already: in the event's own row, or in server_chain as held (or still not held).
            if event?.serverChainHash == entry.chainHash || before.map({ $0.held || !held }) == true { continue }
            rows.append((entry, held))
        }
        try write()
        return report
    }

    private static let serverChainInsert = BatchInsert(
        "INSERT INTO server_chain (server_seq, event_id, chain_hash, held)", columns: 4,
        tail: "ON CONFLICT (server_seq) DO UPDATE SET held = max(held, excluded.held)")

    /// Checks the events held here against every server chain value recorded from pull pages:
    /// recomputes each value from the previous one and the local copy of the event, and reports
    /// the first event that was changed, removed or moved since the server chained it.
    public func verifyServerChain() throws -> ServerChainReport {
        try withArchive { _, archive in
            try readDatabase { db in
                var report = ServerChainReport()
                var cursor: Int64 = 0
                var previous: ServerChainEntry?
                while true {
                    // The two sources of server_chain_entries, merged in server order: each is read
                    // through its own index and only as far as the page goes.
                    let page = try db.rows(
                        """
                        SELECT server_seq, event_id, chain_hash, held FROM server_chain WHERE server_seq > ?1
                        UNION ALL
                        SELECT server_seq, event_id, server_chain_hash, 1 FROM events WHERE server_seq > ?1 AND server_chain_hash IS NOT NULL
                        ORDER BY 1 LIMIT 1000
                        """,
                        [cursor]
                    ) {
                        (
                            ServerChainEntry(
                                serverSequence: $0.int64(0), eventID: UUID(bytes: $0.blob(1)) ?? UUID(), chainHash: $0.blob(2)),
                            $0.int64(3) == 1
                        )
                    }
                    for (entry, held) in page {
                        let link = previous?.serverSequence == entry.serverSequence - 1 ? previous?.chainHash : nil
                        guard report.count(try Self.check(entry, after: link, expectHeld: held, db: db, archive: archive)) else {
                            return report
                        }
                        previous = entry
                        cursor = entry.serverSequence
                    }
                    if page.count < 1000 { return report }
                }
            }
        }
    }

    /// Compares the server's chain head (from `GET …/chain`: the last server sequence and the
    /// chain value after it) with the value recorded here for that position from the pull pages.
    /// Returns nil when they agree or when this library has not pulled that far.
    package func verifyServerChainHead(lastServerSequence: Int64, headHash: [UInt8]) throws -> ChainFailure? {
        let recorded = try readDatabase { try Self.recordedEntry(at: lastServerSequence, in: $0) }
        guard let recorded, recorded.entry.chainHash != headHash else { return nil }
        return ChainFailure(
            chain: .server, position: lastServerSequence, eventID: recorded.entry.eventID, location: nil,
            reason:
                "the server's chain head differs from the value it reported for this position in a pull page: the server's log was changed")
    }

    private static func recordedEntry(at serverSequence: Int64, in db: Database) throws -> (entry: ServerChainEntry, held: Bool)? {
        try db.firstRow("SELECT event_id, chain_hash, held FROM server_chain_entries WHERE server_seq = ?", [serverSequence]) {
            (
                ServerChainEntry(serverSequence: serverSequence, eventID: UUID(bytes: $0.blob(0)) ?? UUID(), chainHash: $0.blob(1)),
                $0.int64(2) == 1
            )
        }
    }

    /// Checks one entry against the local copy of its event.
    private static func check(
        _ entry: ServerChainEntry, after link: [UInt8]?, expectHeld: Bool, appended: AppendedEvent? = nil,
        db: Database, archive: Database?
    ) throws -> ServerEntryOutcome {
        func fail(_ reason: String, _ location: EventLocation?) -> ServerEntryOutcome {
            .failed(
                ChainFailure(chain: .server, position: entry.serverSequence, eventID: entry.eventID, location: location, reason: reason))
        }
        let held: (event: Event, localSequence: Int64, location: EventLocation)
        if let appended {
            // Stored by this transaction with this server sequence.
            held = (appended.event, appended.localSequence, .live)
        } else {
            let live = try EventLog(db).event(withID: entry.eventID)
            let archived = live == nil ? try archive.flatMap { try EventLog($0).event(withID: entry.eventID) } : nil
            guard let stored = live ?? archived else {
                return expectHeld
                    ? fail("the event was held here when the server reported it and is now missing: a row was deleted", nil) : .notHeld
            }
            let location: EventLocation = live != nil ? .live : .archive
            if let acknowledged = stored.serverSequence, acknowledged != entry.serverSequence {
                return fail(
                    "the event is acknowledged here at server position \(acknowledged) but the server has it at \(entry.serverSequence): "
                        + "rows were reordered", location)
            }
            held = (stored.event, stored.localSequence, location)
        }
        let previous =
            entry.serverSequence == 1 ? HashChain.origin : try link ?? recordedEntry(at: entry.serverSequence - 1, in: db)?.entry.chainHash
        guard let previous else { return .unlinked }
        let recomputed: [UInt8]
        if let local = appended?.link, local.previous == previous {
            // The same digest as the local chain's: SHA-256(previous || canonical bytes).
            recomputed = local.hash
        } else {
            var chain = HashChain(head: previous)
            recomputed = chain.hash(linking: held.event)
        }
        guard recomputed == entry.chainHash else {
            return fail(
                "the event held here (local position \(held.localSequence)) differs from the one the server chained: "
                    + "its payload or envelope was changed", held.location)
        }
        return .matched
    }
}

/// What checking one server chain entry found.
enum ServerEntryOutcome: Equatable {
    case matched, notHeld, unlinked
    case failed(ChainFailure)
}

extension ServerChainReport {
    /// Counts an outcome; false when it is a failure (recorded in the report).
    mutating func count(_ outcome: ServerEntryOutcome) -> Bool {
        switch outcome {
        case .matched: checked += 1
        case .notHeld: notHeld += 1
        case .unlinked: unlinked += 1
        case .failed(let failure):
            self.failure = failure
            return false
        }
        return true
    }
}

extension PhotoLibrary {
    /// Confirms a batch of this device's events from the server's answer to their push, without
    /// pulling them back: when the server stored them, in order, at the positions right after
    /// this device's pull cursor and its head is the last of them, the chain value after them
    /// is recomputed from the value held here at the cursor and this device's own copies, and
    /// compared with the server's. On a match the events are acknowledged with their server
    /// chain values and the cursor moves past them, in one transaction: the server holds exactly
    /// these events there, as this device made them.
    ///
    /// Returns false, changing nothing, whenever the shortcut does not apply (other devices'
    /// events came between, the value at the cursor is not held here, the values differ): the
    /// events are then acknowledged as usual and checked when the pull brings them back.
    func confirmPushed(_ batch: [Event], serverSequences: [Int64], head: (serverSequence: Int64, chainHash: [UInt8])) throws -> Bool {
        guard let first = serverSequences.first, batch.count == serverSequences.count,
            head.serverSequence == first + Int64(batch.count) - 1,
            serverSequences.enumerated().allSatisfy({ $1 == first + Int64($0) })
        else { return false }
        struct NotConfirmed: Error {}
        do {
            try storage.write { db in
                let cursor = try db.firstRow("SELECT pull_cursor FROM replica_state WHERE id = 1") { $0.int64(0) } ?? 0
                guard cursor == first - 1 else { throw NotConfirmed() }
                let previous = cursor == 0 ? HashChain.origin : try Self.recordedEntry(at: cursor, in: db)?.entry.chainHash
                guard let previous else { throw NotConfirmed() }
                var chain = HashChain(head: previous)
                let hashes = batch.map { chain.link($0) }
                guard let last = hashes.last, constantTimeEquals(last, head.chainHash) else { throw NotConfirmed() }
                try Self.acknowledge(
                    zip(batch, serverSequences).map { ($0.deviceSequence, $1) }, device: device, db: db)
                _ = try Self.serverChainInsert.run(count: batch.count, in: db) { index, values in
                    values.append(serverSequences[index])
                    values.append(uuid: batch[index].id)
                    values.append(blob: hashes[index])
                    values.append(Int64(1))
                }
                try db.execute("UPDATE replica_state SET pull_cursor = ? WHERE id = 1", [head.serverSequence])
            }
            return true
        } catch is NotConfirmed {
            return false
        } catch {
            throw Self.translate(error, doing: "record the server's answer to a push")
        }
    }
}
