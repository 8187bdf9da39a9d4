import Foundation
import LedgerCore

/// The append-only event log of a device library, used inside a database access closure.
///
/// ```swift
/// try queue.write { db in
///     let log = EventLog(db)
///     try log.append(events)
/// }
/// ```
///
/// Appending an event whose identifier is already present is a no-op, so deliveries can repeat.
/// Rows are never updated or deleted, except that the server sequence is set once; triggers in
/// the schema refuse anything else.
public struct EventLog {
    /// The connection the log works on.
    public let database: Database

    /// The log stored in `database`.
    public init(_ database: Database) { self.database = database }

    /// What happened to one appended event.
    public enum AppendOutcome: Sendable, Hashable {
        /// Stored at this local sequence.
        case appended(localSequence: Int64)
        /// An event with the same identifier was already in the log; nothing changed.
        case duplicate
    }

    /// The columns ``decode(_:)`` reads, in order, for queries of the `events` table.
    public static let columns =
        "local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version, payload, server_seq, hash, "
        + "format, library, key_id, nonce"

    // MARK: Appending

    /// An appended event's place in the local hash chain: the chain value before it and its own.
    public struct ChainLink: Sendable, Hashable {
        /// The chain value after the event before it (32 zero bytes for the first event).
        public var previous: [UInt8]
        /// The chain value after this event: SHA-256(previous || canonical bytes).
        public var hash: [UInt8]

        /// A link from `previous` to `hash`.
        public init(previous: [UInt8], hash: [UInt8]) {
            self.previous = previous
            self.hash = hash
        }
    }

    /// What ``appendLinking(_:serverSequences:)`` did: one outcome per event, and for each
    /// appended event its chain link (nil for duplicates).
    public struct LinkedAppend: Sendable {
        /// One outcome per event, in order.
        public var outcomes: [AppendOutcome]
        /// One entry per event: the chain link of an appended event, nil for a duplicate.
        public var links: [ChainLink?]
    }

    /// Appends events in order, in one transaction (a savepoint when a transaction is open).
    ///
    /// `serverSequences`, when given, holds the server's sequence of each event (events pulled
    /// from the server arrive with it), stored with the new rows. An event already in the log is
    /// left as it is; acknowledge it with ``setServerSequence(_:for:)``.
    @discardableResult
    public func append(_ events: [Event], serverSequences: [Int64]? = nil) throws -> [AppendOutcome] {
        try appendLinking(events, serverSequences: serverSequences).outcomes
    }

    /// Chain values computed ahead of an append (on another thread, while an earlier batch was
    /// being appended): `hashes[i]` is the value of `events[i]` when the events are linked in
    /// order after `head`, as ``HashChain`` computes it.
    public struct PrecomputedChain: Sendable, Hashable {
        /// The chain value the events were linked after.
        public var head: [UInt8]
        /// One value per event, in order.
        public var hashes: [[UInt8]]

        /// Links `events` after `head` with ``HashChain``.
        public init(linking events: [Event], after head: [UInt8]) {
            var chain = HashChain(head: head)
            self.head = head
            hashes = events.map { chain.link($0) }
        }
    }

    /// Appends like ``append(_:serverSequences:)`` and also returns each appended event's chain
    /// link, so that a caller checking another chain over the same events (the server's) can
    /// reuse a digest when that chain's previous value is the same.
    ///
    /// A batch of events none of which is in the log yet is inserted a hundred rows per
    /// statement; a batch with a duplicate (of the log, or within the batch) is appended row by
    /// row, skipping the duplicates, with the same result. `precomputed` chain values are used
    /// when they were linked after the log's current head and every event is new; otherwise
    /// each value is computed here.
    ///
    /// `serverChainHashes`, when given, holds for each event the server's chain value reported
    /// with it (or nil); an event appended now keeps it in its row (`server_chain_hash`).
    public func appendLinking(
        _ events: [Event], serverSequences: [Int64]? = nil, serverChainHashes: [[UInt8]?]? = nil, precomputed: PrecomputedChain? = nil
    ) throws -> LinkedAppend {
        precondition(serverSequences.map { $0.count == events.count } ?? true, "one server sequence per event")
        precondition(serverChainHashes.map { $0.count == events.count } ?? true, "one server chain value (or nil) per event")
        return try database.inTransaction {
            let last = try database.firstRow("SELECT local_seq, hash FROM events ORDER BY local_seq DESC LIMIT 1") {
                (localSequence: $0.int64(0), hash: $0.blob(1))
            }
            let head = last?.hash ?? HashChain.origin
            // A batch starting with a stored event (a device pulling back its own events) goes row by row at once.
            if events.count > 1, try !contains(events[0].id) {
                do {
                    // A savepoint: a duplicate found part-way rolls back the rows inserted so far.
                    return try database.inTransaction {
                        try appendAllNew(
                            events, serverSequences: serverSequences, serverChainHashes: serverChainHashes, after: last?.localSequence ?? 0,
                            head: head,
                            precomputed: precomputed.flatMap { $0.head == head && $0.hashes.count == events.count ? $0.hashes : nil })
                    }
                } catch is DuplicateInBatch {}
            }
            return try appendOneByOne(events, serverSequences: serverSequences, serverChainHashes: serverChainHashes, head: head)
        }
    }

    /// Thrown inside ``appendAllNew(_:serverSequences:serverChainHashes:after:head:precomputed:)`` to roll it back.
    private struct DuplicateInBatch: Error {}

    private static let batchInsert = BatchInsert(
        """
        INSERT INTO events (local_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version, payload, hash,
            server_seq, server_chain_hash, format, library, key_id, nonce)
        """, columns: 17, tail: "ON CONFLICT (event_id) DO NOTHING")

    /// Inserts every event at the next local positions, a hundred rows per statement; throws
    /// ``DuplicateInBatch`` when any of them is already stored or repeats within the batch.
    private func appendAllNew(
        _ events: [Event], serverSequences: [Int64]?, serverChainHashes: [[UInt8]?]?, after localSequence: Int64, head: [UInt8],
        precomputed: [[UInt8]]?
    ) throws -> LinkedAppend {
        var links: [ChainLink?] = []
        links.reserveCapacity(events.count)
        var latest = HLCTimestamp.zero
        var previous = head
        for (event, hash) in zip(events, precomputed ?? PrecomputedChain(linking: events, after: head).hashes) {
            links.append(ChainLink(previous: previous, hash: hash))
            previous = hash
            latest = max(latest, event.timestamp)
        }
        let inserted = try Self.batchInsert.run(count: events.count, in: database, stopAtSkippedRow: true) { row, values in
            let event = events[row]
            values.append(localSequence + Int64(row) + 1)
            values.append(envelopeOf: event)
            values.append(blob: links[row]!.hash)
            values.append(serverSequences?[row])
            if let value = serverChainHashes?[row] { values.append(blob: value) } else { values.appendNull() }
            values.append(Int64(event.format.rawValue))
            if let library = event.library { values.append(uuid: library) } else { values.appendNull() }
            values.append(Int64(event.seal?.keyID ?? 0))
            if let seal = event.seal { seal.withNonce { values.append(blob: $0) } } else { values.appendNull() }
        }
        guard inserted == events.count else { throw DuplicateInBatch() }
        if latest > .zero { try record(timestamp: latest) }
        return LinkedAppend(outcomes: (1...Int64(events.count)).map { .appended(localSequence: localSequence + $0) }, links: links)
    }

    /// Appends events one statement each, skipping those already stored.
    private func appendOneByOne(_ events: [Event], serverSequences: [Int64]?, serverChainHashes: [[UInt8]?]?, head: [UInt8]) throws
        -> LinkedAppend
    {
        var chain = HashChain(head: head)
        let insert = try database.cachedStatement(
            """
            INSERT INTO events (event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version, payload, hash,
                server_seq, server_chain_hash, format, library, key_id, nonce)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING
            """)
        var outcomes: [AppendOutcome] = []
        outcomes.reserveCapacity(events.count)
        var links: [ChainLink?] = []
        links.reserveCapacity(events.count)
        var latest = HLCTimestamp.zero
        for (index, event) in events.enumerated() {
            let hash = chain.hash(linking: event)
            try bind(event, hash: hash, to: insert)
            if let serverSequences { try insert.bind(serverSequences[index], at: 11) }
            if let value = serverChainHashes?[index] { try insert.bind(value, at: 12) }
            defer { insert.reset() }
            try insert.step()
            if database.changes == 1 {
                links.append(ChainLink(previous: chain.head, hash: hash))
                chain.advance(to: hash)
                outcomes.append(.appended(localSequence: database.lastInsertedRowID))
                latest = max(latest, event.timestamp)
            } else {
                links.append(nil)
                outcomes.append(.duplicate)
            }
        }
        if latest > .zero { try record(timestamp: latest) }
        return LinkedAppend(outcomes: outcomes, links: links)
    }

    /// Appends one event.
    @discardableResult
    public func append(_ event: Event) throws -> AppendOutcome {
        try append([event])[0]
    }

    private func bind(_ event: Event, hash: [UInt8], to statement: Statement) throws {
        try withUnsafeBytes(of: event.id.uuid) { try statement.bind(bytes: $0, at: 1) }
        try statement.bind(event.device.rawValue, at: 2)
        try statement.bind(event.deviceSequence, at: 3)
        try statement.bind(Int64(bitPattern: event.timestamp.rawValue), at: 4)
        try withUnsafeBytes(of: event.changeBlock.uuid) { try statement.bind(bytes: $0, at: 5) }
        try withUnsafeBytes(of: event.object.uuid) { try statement.bind(bytes: $0, at: 6) }
        try statement.bind(event.type, at: 7)
        try statement.bind(Int64(event.schemaVersion), at: 8)
        try statement.bind(event.payload, at: 9)
        try statement.bind(hash, at: 10)
        try statement.bind(Int64(event.format.rawValue), at: 13)
        if let library = event.library {
            try withUnsafeBytes(of: library.uuid) { try statement.bind(bytes: $0, at: 14) }
        } else {
            try statement.bind(.null, at: 14)
        }
        try statement.bind(Int64(event.seal?.keyID ?? 0), at: 15)
        if let seal = event.seal { try statement.bind(seal.nonce, at: 16) } else { try statement.bind(.null, at: 16) }
    }

    /// The hash-chain value after the last event (32 zero bytes for an empty log).
    public func lastHash() throws -> [UInt8] {
        try database.firstRow("SELECT hash FROM events ORDER BY local_seq DESC LIMIT 1") { $0.blob(0) } ?? HashChain.origin
    }

    // MARK: Clock persistence

    /// The last clock stamp issued or received, persisted so the clock stays monotonic across restarts.
    public func lastTimestamp() throws -> HLCTimestamp {
        let raw = try database.firstRow("SELECT last_hlc FROM ledger_clock WHERE id = 1") { $0.int64(0) } ?? 0
        return HLCTimestamp(rawValue: UInt64(bitPattern: raw))
    }

    /// Records `timestamp` as issued or received when it is later than the one stored.
    public func record(timestamp: HLCTimestamp) throws {
        try database.execute(
            "UPDATE ledger_clock SET last_hlc = max(last_hlc, ?) WHERE id = 1", [Int64(bitPattern: timestamp.rawValue)])
    }

    // MARK: Sequences

    /// The highest device sequence stored for `device` (0 when none).
    public func lastDeviceSequence(for device: DeviceID) throws -> Int64 {
        try database.firstRow("SELECT max(device_seq) FROM events WHERE device_id = ?", [device.rawValue]) { $0.int64(0) } ?? 0
    }

    /// Whether an event with this identifier is stored.
    public func contains(_ eventID: UUID) throws -> Bool {
        try database.firstRow("SELECT 1 FROM events WHERE event_id = ?", [eventID.bytes]) { _ in true } ?? false
    }

    /// The number of events stored.
    public func count() throws -> Int {
        Int(try database.firstRow("SELECT count(*) FROM events") { $0.int64(0) } ?? 0)
    }

    /// The highest local sequence (0 for an empty log).
    public func lastLocalSequence() throws -> Int64 {
        try database.firstRow("SELECT max(local_seq) FROM events") { $0.int64(0) } ?? 0
    }

    /// Records the server's sequence for an event it acknowledged. Setting it a second time, to
    /// any value, is refused by the schema.
    public func setServerSequence(_ serverSequence: Int64, for eventID: UUID) throws {
        try database.execute("UPDATE events SET server_seq = ? WHERE event_id = ?", [serverSequence, eventID.bytes])
        if database.changes == 0 {
            throw StoreUsageError("no event \(eventID.uuidString) in the log to acknowledge")
        }
    }

    // MARK: Reading (keyset pages: no cursor stays open between pages)

    /// The event with this identifier, or nil.
    public func event(withID eventID: UUID) throws -> StoredEvent? {
        try withUnsafeBytes(of: eventID.uuid) { key in
            let statement = try database.cachedStatement("SELECT \(Self.columns) FROM events WHERE event_id = ?")
            defer { statement.reset() }
            try statement.bind(bytes: key, at: 1)
            return try statement.step() ? Self.decode(statement) : nil
        }
    }

    /// Events after `localSequence`, in log order, at most `limit`.
    public func events(after localSequence: Int64 = 0, limit: Int = 1000) throws -> [StoredEvent] {
        try page("SELECT \(Self.columns) FROM events WHERE local_seq > ? ORDER BY local_seq LIMIT ?", [localSequence, Int64(limit)])
    }

    /// Events about `object`, in log order, after `localSequence`.
    public func events(forObject object: UUID, after localSequence: Int64 = 0, limit: Int = 1000) throws -> [StoredEvent] {
        try page(
            "SELECT \(Self.columns) FROM events WHERE object_id = ? AND local_seq > ? ORDER BY local_seq LIMIT ?",
            [object.bytes, localSequence, Int64(limit)])
    }

    /// Events made by `device`, in device order, after `deviceSequence`.
    public func events(fromDevice device: DeviceID, afterDeviceSequence deviceSequence: Int64 = 0, limit: Int = 1000) throws
        -> [StoredEvent]
    {
        try page(
            "SELECT \(Self.columns) FROM events WHERE device_id = ? AND device_seq > ? ORDER BY device_seq LIMIT ?",
            [device.rawValue, deviceSequence, Int64(limit)])
    }

    /// Events not yet acknowledged by the server (the sync outbox), in log order.
    public func pendingEvents(after localSequence: Int64 = 0, limit: Int = 1000) throws -> [StoredEvent] {
        try page(
            "SELECT \(Self.columns) FROM events WHERE server_seq IS NULL AND local_seq > ? ORDER BY local_seq LIMIT ?",
            [localSequence, Int64(limit)])
    }

    /// The number of events not yet acknowledged by the server.
    public func pendingCount() throws -> Int {
        Int(try database.firstRow("SELECT count(*) FROM events WHERE server_seq IS NULL") { $0.int64(0) } ?? 0)
    }

    /// Calls `body` for every event after `localSequence`, reading in keyset pages of `pageSize`.
    public func forEach(after localSequence: Int64 = 0, pageSize: Int = 1000, _ body: (StoredEvent) throws -> Void) throws {
        var cursor = localSequence
        while true {
            let events = try self.events(after: cursor, limit: pageSize)
            for event in events { try body(event) }
            guard let last = events.last, events.count == pageSize else { return }
            cursor = last.localSequence
        }
    }

    private func page(_ sql: String, _ values: [any SQLBindable]) throws -> [StoredEvent] {
        try database.rows(sql, values, Self.decode)
    }

    /// Decodes a row selected with ``columns``.
    public static func decode(_ row: Statement) throws -> StoredEvent {
        func uuid(_ column: Int32) throws -> UUID {
            guard let value = row.withBlob(column, { UUID(bytes: $0) }) else {
                throw DecodingError("a 16-byte identifier in column \(column)", offset: 0)
            }
            return value
        }
        guard let format = UInt8(exactly: row.int64(12)).flatMap(Event.Format.init(rawValue:)) else {
            throw DecodingError("an event format of \(row.int64(12)) in the event at local position \(row.int64(0))", offset: 0)
        }
        let keyID = row.int64(14)
        guard let key = UInt32(exactly: keyID), format == .v2 || (key == 0 && row.isNull(13) && row.isNull(15)) else {
            throw DecodingError(
                "an envelope that format \(format.rawValue) cannot have in the event at local position \(row.int64(0))", offset: 0)
        }
        let event = Event(
            id: try uuid(1),
            library: row.isNull(13) ? nil : try uuid(13),
            device: DeviceID(row.text(2)),
            deviceSequence: row.int64(3),
            timestamp: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(4))),
            changeBlock: try uuid(5),
            object: try uuid(6),
            type: row.text(7),
            schemaVersion: Int(row.int64(8)),
            seal: key == 0 ? nil : Event.Seal(keyID: key, nonce: row.isNull(15) ? [] : row.blob(15)),
            payload: row.blob(9),
            format: format)
        return StoredEvent(event: event, localSequence: row.int64(0), serverSequence: row.optionalInt64(10), hash: row.blob(11))
    }

    // MARK: Verification

    /// The result of walking the hash chain.
    public enum Verification: Sendable, Equatable {
        /// Every event matches its hash; `count` events were checked.
        case intact(count: Int)
        /// The first event whose stored hash does not match the chain.
        case broken(ChainBreak)
    }

    /// Where a hash chain stops matching.
    public struct ChainBreak: Error, Sendable, Equatable, CustomStringConvertible {
        /// The position (local sequence) of the first event that does not match.
        public let localSequence: Int64
        /// Its event identifier, as stored.
        public let eventID: UUID?
        /// How many events matched before it.
        public let verifiedCount: Int

        /// Describes a break found at `localSequence`.
        public init(localSequence: Int64, eventID: UUID?, verifiedCount: Int) {
            self.localSequence = localSequence
            self.eventID = eventID
            self.verifiedCount = verifiedCount
        }

        public var description: String {
            "hash chain broken at event \(eventID?.uuidString ?? "?") (position \(localSequence)) after "
                + "\(verifiedCount) intact events: the event, or one before it, was changed, removed or reordered"
        }
    }

    /// Walks the log in order and recomputes the hash chain: the whole log by default, or the
    /// events after `localSequence` continuing from the chain value `head` (the part of a log
    /// whose earlier events were moved to an archive).
    public func verify(after localSequence: Int64 = 0, head: [UInt8] = HashChain.origin) throws -> Verification {
        var previous = head, value = [UInt8](repeating: 0, count: 32)
        var digest = SHA256()
        var canonical = ByteWriter(capacity: 1024)
        var count = 0
        // One scan in order; each row's canonical bytes are written from its columns where the
        // statement stands, without decoding the event.
        let scan = try database.cachedStatement("SELECT \(Self.columns) FROM events WHERE local_seq > ? ORDER BY local_seq")
        defer { scan.reset() }
        try scan.bind(localSequence, at: 1)
        while try scan.step() {
            canonical.removeAll()
            guard Self.writeCanonicalBytes(of: scan, into: &canonical) else {
                return .broken(
                    ChainBreak(localSequence: scan.int64(0), eventID: scan.withBlob(1) { UUID(bytes: $0) }, verifiedCount: count))
            }
            digest.update(previous)
            canonical.bytes.withUnsafeBytes { digest.update($0) }
            digest.finalizeAndReset(into: &value)
            guard scan.blob(11, equals: value) else {
                return .broken(
                    ChainBreak(localSequence: scan.int64(0), eventID: scan.withBlob(1) { UUID(bytes: $0) }, verifiedCount: count))
            }
            swap(&previous, &value)
            count += 1
        }
        return .intact(count: count)
    }

    /// Writes the canonical bytes (``Event/writeCanonicalBytes(into:)``) of the event in a row of
    /// ``columns`` straight from the column bytes: what ``decode(_:)`` would read and the event
    /// then write, for every row it reads. False for a row it refuses (an unknown format, an
    /// envelope the format cannot have, a nonce without a key, an identifier that is not 16 bytes).
    static func writeCanonicalBytes(of row: Statement, into writer: inout ByteWriter) -> Bool {
        guard let format = UInt8(exactly: row.int64(12)).flatMap(Event.Format.init(rawValue:)),
            let key = UInt32(exactly: row.int64(14)), format == .v2 || (key == 0 && row.isNull(13) && row.isNull(15))
        else { return false }
        func uuid(_ column: Int32) -> Bool {
            row.withBlob(column) { bytes in
                guard bytes.count == 16 else { return false }
                writer.write(raw: bytes)
                return true
            }
        }
        func lengthPrefixed(_ column: Int32) {
            row.withBlob(column) { bytes in
                writer.write(varint: UInt64(bytes.count))
                writer.write(raw: bytes)
            }
        }
        writer.write(byte: format.rawValue)
        guard uuid(1) else { return false }
        if format == .v2 {
            if row.isNull(13) {
                writer.write(raw: Self.zeroIdentifier)
            } else if !uuid(13) {
                return false
            }
        }
        lengthPrefixed(2)
        writer.write(fixed: UInt64(bitPattern: row.int64(3)))
        writer.write(fixed: UInt64(bitPattern: row.int64(4)))
        guard uuid(5), uuid(6) else { return false }
        lengthPrefixed(7)
        // A schema version is never negative; a row changed to one breaks the chain (its hash differs).
        writer.write(varint: UInt64(bitPattern: row.int64(8)))
        if format == .v2 {
            writer.write(varint: UInt64(key))
            // An unsealed event has no nonce (a row given one was changed).
            if key == 0 {
                guard row.isNull(15) || row.withBlob(15, { $0.isEmpty }) else { return false }
                writer.write(varint: 0)
            } else {
                lengthPrefixed(15)
            }
        }
        lengthPrefixed(9)
        return true
    }

    private static let zeroIdentifier = [UInt8](repeating: 0, count: 16)
}
