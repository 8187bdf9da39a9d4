import Foundation
import LedgerCore
import LedgerStore
import SyncProtocol
import Synchronization

/// The embedded server store: one SQLite file (WAL) with the `Server` migrations, one writer
/// connection and a few read-only connections so pulls do not wait for pushes.
public final class SQLiteServerStore: ServerStore {
    private let writer: DatabaseQueue
    private let readers: [DatabaseQueue]
    private let nextReader = Atomic<Int>(0)
    /// The database file.
    public let path: String
    /// Makes the identifiers of new libraries.
    private let identifiers = UUIDv7Generator(clock: { WallClock.milliseconds() }, random: SystemRandomNumberGenerator())

    /// Opens (creating and migrating when needed) the server database at `path`.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - readerCount: Read-only connections for pulls and lookups.
    public init(path: String, readerCount: Int = 4) throws {
        self.path = path
        writer = try DatabaseQueue(path: path)
        try writer.writeWithoutTransaction { try Migrator.server().migrate($0) }
        var options = Database.Options()
        options.readOnly = true
        readers = try (0..<max(1, readerCount)).map { _ in try DatabaseQueue(path: path, options: options) }
    }

    private func read<T>(_ body: (Database) throws -> T) throws -> T {
        let index = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        return try readers[abs(index % readers.count)].read(body)
    }

    // MARK: Administration

    public func createLibrary(named name: String, uuid: UUID?, at milliseconds: UInt64) throws {
        if let problem = LibraryName.problem(with: name) { throw ServerStoreError("invalid library name '\(name)': \(problem)") }
        let identifier = uuid ?? identifiers.next()
        try writer.write { db in
            if try libraryID(db, name) != nil {
                throw ServerStoreError("library '\(name)' already exists; choose another name")
            }
            if let other = try db.firstRow("SELECT name FROM libraries WHERE library_uuid = ?", [identifier.bytes], { $0.text(0) }) {
                throw ServerStoreError(
                    "library '\(other)' has the identifier \(identifier.uuidString) already; a library identifier names one library")
            }
            try db.execute(
                "INSERT INTO libraries (name, created_at, library_uuid) VALUES (?, ?, ?)", [name, Int64(milliseconds), identifier.bytes])
        }
    }

    public func libraryNames() throws -> [String] {
        try read { db in try db.rows("SELECT name FROM libraries ORDER BY name") { $0.text(0) } }
    }

    private func libraryID(_ db: Database, _ name: String) throws -> Int64? {
        try db.firstRow("SELECT library_id FROM libraries WHERE name = ?", [name]) { $0.int64(0) }
    }

    private func existingLibraryID(_ db: Database, _ name: String) throws -> Int64 {
        guard let id = try libraryID(db, name) else {
            throw ServerStoreError("no library named '\(name)'; create it with `photoledger-server admin create-library \(name)`")
        }
        return id
    }

    public func registerToken(hash: [UInt8], library: String, device: DeviceID, scope: TokenScope, at milliseconds: UInt64) throws {
        if let problem = DeviceID.problem(with: device.rawValue) { throw ServerStoreError("invalid device name '\(device)': \(problem)") }
        try writer.write { db in
            let id = try existingLibraryID(db, library)
            try db.execute(
                "INSERT INTO devices (library_id, device_id, registered_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [id, device.rawValue, Int64(milliseconds)])
            try db.execute(
                "INSERT INTO tokens (library_id, device_id, scope, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                [id, device.rawValue, scope.rawValue, hash, Int64(milliseconds)])
        }
    }

    public func revokeTokens(library: String, device: DeviceID, at milliseconds: UInt64) throws -> Int {
        try writer.write { db in
            let id = try existingLibraryID(db, library)
            let known = try db.firstRow("SELECT 1 FROM devices WHERE library_id = ? AND device_id = ?", [id, device.rawValue]) { _ in true }
            guard known != nil else {
                throw ServerStoreError("no device named '\(device)' in library '\(library)'; see `photoledger-server admin list-devices`")
            }
            try db.execute(
                "UPDATE tokens SET revoked_at = ? WHERE library_id = ? AND device_id = ? AND revoked_at IS NULL",
                [Int64(milliseconds), id, device.rawValue])
            return db.changes
        }
    }

    public func devices(library: String) throws -> [DeviceRecord] {
        try writer.read { db in
            let id = try existingLibraryID(db, library)
            return try db.rows(
                """
                SELECT d.device_id, d.last_device_seq, d.last_pulled_seq,
                       (SELECT scope FROM tokens t WHERE t.library_id = d.library_id AND t.device_id = d.device_id
                        ORDER BY t.revoked_at IS NULL DESC, t.token_id DESC LIMIT 1),
                       NOT EXISTS (SELECT 1 FROM tokens t WHERE t.library_id = d.library_id AND t.device_id = d.device_id
                                   AND t.revoked_at IS NULL)
                FROM devices d WHERE d.library_id = ? ORDER BY d.device_id
                """, [id]
            ) { row in
                DeviceRecord(
                    device: DeviceID(row.text(0)), scope: row.optionalText(3).flatMap(TokenScope.init(rawValue:)),
                    lastDeviceSequence: row.int64(1), lastPulledSequence: row.int64(2), revoked: row.int64(4) != 0)
            }
        }
    }

    // MARK: Authentication

    public func authenticate(tokenHash: [UInt8]) throws -> Credential? {
        try read { db in
            try db.firstRow(
                """
                SELECT t.token_hash, t.library_id, l.name, t.device_id, t.scope, l.library_uuid FROM tokens t
                JOIN libraries l ON l.library_id = t.library_id
                WHERE t.token_hash = ? AND t.revoked_at IS NULL
                """, [tokenHash]
            ) { row -> Credential? in
                guard constantTimeEquals(row.blob(0), tokenHash), let scope = TokenScope(rawValue: row.text(4)),
                    let uuid = row.withBlob(5, { UUID(bytes: $0) })
                else { return nil }
                return Credential(
                    libraryID: row.int64(1), library: row.text(2), libraryUUID: uuid, device: DeviceID(row.text(3)), scope: scope)
            } ?? nil
        }
    }

    // MARK: Push

    public func withPushTransaction<T>(
        library: Int64, device: DeviceID, at milliseconds: UInt64, _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        // The writer connection is the only one that writes: holding it is the lock on every head.
        try writer.write { db in
            try body(try Transaction(db: db, library: library, device: device, at: Int64(milliseconds), checksNewEventsOnWrite: false))
        }
    }

    /// A push first runs with its new events checked as they are written (the unique index of
    /// identifiers, the claims on objects): no lookup per event. A push that meets a stored
    /// identifier or a held object there (a retry, a hostile device, an album created again)
    /// runs again with every lookup, and is answered as that run decides.
    public func withPushTransaction<T>(
        library: Int64, device: DeviceID, at milliseconds: UInt64, readingAheadFor candidates: [PushCandidate],
        _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        do {
            return try writer.write { db in
                try body(try Transaction(db: db, library: library, device: device, at: Int64(milliseconds), checksNewEventsOnWrite: true))
            }
        } catch is DeferredCheckFailed {
            return try withPushTransaction(library: library, device: device, at: milliseconds, body)
        }
    }

    /// One push on the writer connection, inside its transaction.
    private final class Transaction: PushTransaction {
        let db: Database
        let library: Int64
        let device: DeviceID
        let receivedAt: Int64
        let head: LibraryHead
        let lastDeviceSequence: Int64
        let checksNewEventsOnWrite: Bool
        /// Events stored by this push, written to the table in groups (one statement per hundred
        /// rows, not one per event): lookups answer from them as if they were written.
        private var pending: [PendingEvent] = []
        private var pendingByID: [UUID: Int] = [:]
        /// The kind of the first pending event about each object.
        private var pendingObjects: [UUID: ObjectPresence] = [:]
        /// Whether the library has refused any event: while it has not, no identifier needs
        /// looking up among its rejections.
        private var hasRejections: Bool

        struct PendingEvent {
            var event: Event
            var serverSequence: Int64
            var chainHash: [UInt8]
            var contentHash: [UInt8]?
            /// Valid only if no event about its object comes before it (checked on write).
            var requiringNewObject: Bool
        }

        init(db: Database, library: Int64, device: DeviceID, at receivedAt: Int64, checksNewEventsOnWrite: Bool) throws {
            self.db = db
            self.library = library
            self.device = device
            self.receivedAt = receivedAt
            self.checksNewEventsOnWrite = checksNewEventsOnWrite
            let row = try db.firstRow("SELECT last_seq, last_hash FROM libraries WHERE library_id = ?", [library]) {
                LibraryHead(sequence: $0.int64(0), chainHash: $0.blob(1))
            }
            guard let row else { throw ServerStoreError("library \(library) no longer exists") }
            head = row
            try db.execute(
                "INSERT INTO devices (library_id, device_id, registered_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [library, device.rawValue, receivedAt])
            lastDeviceSequence =
                try db.firstRow(
                    "SELECT last_device_seq FROM devices WHERE library_id = ? AND device_id = ?", [library, device.rawValue]
                ) { $0.int64(0) } ?? 0
            hasRejections =
                try db.firstRow("SELECT EXISTS (SELECT 1 FROM rejected_events WHERE library_id = ?)", [library]) { $0.int64(0) } == 1
        }

        func storedEvent(_ id: UUID) throws -> (serverSequence: Int64, contentHash: [UInt8]?)? {
            if let index = pendingByID[id] { return (pending[index].serverSequence, pending[index].contentHash) }
            if checksNewEventsOnWrite, let index = pending.firstIndex(where: { $0.event.id == id }) {
                return (pending[index].serverSequence, pending[index].contentHash)
            }
            return try lookup("SELECT server_seq, content_hash FROM server_events WHERE library_id = ? AND event_id = ?", id) {
                ($0.int64(0), $0.isNull(1) ? nil : $0.blob(1))
            }
        }

        func rejectionReason(ofEvent id: UUID) throws -> String? {
            guard hasRejections else { return nil }
            return try lookup("SELECT reason FROM rejected_events WHERE library_id = ? AND event_id = ?", id) { $0.text(0) }
        }

        func presence(ofObject object: UUID) throws -> ObjectPresence {
            // The first event about the object gives its kind.
            let type = try lookup(
                """
                SELECT e.type FROM server_objects o JOIN server_events e ON e.library_id = o.library_id AND e.server_seq = o.first_seq
                WHERE o.library_id = ? AND o.object_id = ?
                """, object
            ) { $0.text(0) }
            if let type { return .held(EventType(rawValue: type)?.objectKind) }
            if checksNewEventsOnWrite, let first = pending.first(where: { $0.event.object == object }) {
                return .held(EventType(rawValue: first.event.type)?.objectKind)
            }
            return pendingObjects[object] ?? .absent
        }

        private func lookup<T>(_ sql: String, _ key: UUID, _ read: (Statement) -> T) throws -> T? {
            try withUnsafeBytes(of: key.uuid) { bytes in
                let statement = try db.cachedStatement(sql)
                defer { statement.reset() }
                try statement.bind(library, at: 1)
                try statement.bind(bytes: bytes, at: 2)
                return try statement.step() ? read(statement) : nil
            }
        }

        func insert(_ event: Event, serverSequence: Int64, chainHash: [UInt8], contentHash: [UInt8]?, requiringNewObject: Bool) throws
            -> Bool
        {
            if checksNewEventsOnWrite {
                // An identifier twice in the push fails the write's check, like one stored before.
                pending.append(
                    PendingEvent(
                        event: event, serverSequence: serverSequence, chainHash: chainHash, contentHash: contentHash,
                        requiringNewObject: requiringNewObject))
                return true
            }
            guard pendingByID[event.id] == nil else { return false }
            pendingByID[event.id] = pending.count
            pending.append(
                PendingEvent(
                    event: event, serverSequence: serverSequence, chainHash: chainHash, contentHash: contentHash, requiringNewObject: false)
            )
            if pendingObjects[event.object] == nil {
                pendingObjects[event.object] = .held(EventType(rawValue: event.type)?.objectKind)
            }
            return true
        }

        static let eventInsert = BatchInsert(
            """
            INSERT INTO server_events (library_id, server_seq, event_id, device_id, device_seq, hlc, change_block, object_id,
                                       type, schema_version, payload, chain_hash, received_at, content_hash, format, bound, key_id, nonce)
            """, columns: 18, tail: "ON CONFLICT DO NOTHING")

        /// The objects' claims: the first event about an object claims it.
        static let claimInsert = BatchInsert(
            "INSERT INTO server_objects (library_id, object_id, first_seq)", columns: 3, tail: "ON CONFLICT DO NOTHING")

        /// Writes the pending events and their objects' claims. An identifier or position the
        /// table holds already fails the push rather than dropping the event; when new events are
        /// checked on write, so does an event requiring a new object whose object was held before
        /// it (``DeferredCheckFailed``: the push runs again with every lookup).
        private func writePending() throws {
            guard !pending.isEmpty else { return }
            let library = library, rows = pending
            func claim(_ indices: [Int], stopAtSkippedRow: Bool) throws -> Int? {
                try Self.claimInsert.run(count: indices.count, in: db, stopAtSkippedRow: stopAtSkippedRow) { index, values -> Void in
                    values.append(library)
                    values.append(uuid: rows[indices[index]].event.object)
                    values.append(rows[indices[index]].serverSequence)
                }
            }
            // Events that must be first about their object claim it first, and every claim must
            // be made; then the others claim what is not claimed yet, in log order.
            let mustClaim = rows.indices.filter { rows[$0].requiringNewObject }
            if !mustClaim.isEmpty {
                guard Self.comeFirstAboutTheirObjects(rows), try claim(mustClaim, stopAtSkippedRow: true) == mustClaim.count else {
                    throw DeferredCheckFailed()
                }
            }
            _ = try claim(
                mustClaim.isEmpty ? Array(rows.indices) : rows.indices.filter { !rows[$0].requiringNewObject }, stopAtSkippedRow: false)
            let receivedAt = receivedAt
            let inserted = try Self.eventInsert.run(count: rows.count, in: db) { index, values -> Void in
                let row = rows[index]
                let (event, serverSequence, chainHash, contentHash) = (row.event, row.serverSequence, row.chainHash, row.contentHash)
                values.append(library)
                values.append(serverSequence)
                values.append(envelopeOf: event)
                values.append(blob: chainHash)
                values.append(receivedAt)
                if let contentHash { values.append(blob: contentHash) } else { values.appendNull() }
                values.append(Int64(event.format.rawValue))
                values.append(Int64(event.library == nil ? 0 : 1))
                values.append(Int64(event.seal?.keyID ?? 0))
                if let seal = event.seal { seal.withNonce { values.append(blob: $0) } } else { values.appendNull() }
            }
            guard let inserted, inserted == rows.count else {
                if checksNewEventsOnWrite { throw DeferredCheckFailed() }
                throw ServerStoreError(
                    "library \(library): \(rows.count - (inserted ?? 0)) of \(rows.count) events of a push collided with stored ones; nothing was stored"
                )
            }
            pending.removeAll(keepingCapacity: true)
            pendingByID.removeAll(keepingCapacity: true)
            pendingObjects.removeAll(keepingCapacity: true)
        }

        /// Whether each event that requires a new object is the first of `rows` about its object.
        private static func comeFirstAboutTheirObjects(_ rows: [PendingEvent]) -> Bool {
            func key(_ object: UUID) -> (UInt64, UInt64) {
                withUnsafeBytes(of: object.uuid) { ($0.load(as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self)) }
            }
            // Sorted by object, then log order: an event about the same object as the one before
            // it comes after it in the push.
            let order = rows.indices.map { (object: key(rows[$0].event.object), index: $0) }.sorted {
                $0.object != $1.object ? $0.object < $1.object : $0.index < $1.index
            }
            return !zip(order, order.dropFirst()).contains { $0.object == $1.object && rows[$1.index].requiringNewObject }
        }

        func recordRejection(ofEvent id: UUID, deviceSequence: Int64, reason: String) throws {
            hasRejections = true
            try db.execute(
                """
                INSERT INTO rejected_events (library_id, event_id, device_id, device_seq, reason, received_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, [library, id.bytes, device.rawValue, deviceSequence, reason, receivedAt])
        }

        func retireSnapshots(before position: Int64) throws {
            try db.execute(
                "UPDATE libraries SET snapshot_floor = max(snapshot_floor, ?) WHERE library_id = ?", [position, library])
            let retired = try db.rows(
                "DELETE FROM snapshots WHERE library_id = ? AND position < ? RETURNING sha256", [library, position]
            ) { $0.blob(0) }
            try SQLiteServerStore.retireBlobs(retired, libraryID: library, at: receivedAt, in: db)
        }

        func keyEntry(named name: String) throws -> [UInt8]? {
            try db.firstRow("SELECT value FROM key_entries WHERE library_id = ? AND name = ?", [library, name]) { $0.blob(0) }
        }

        func applyKeyChanges(_ changes: [KeyChange]) throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64) {
            try SQLiteServerStore.applyKeyChanges(changes, libraryID: library, by: device, at: receivedAt, in: db)
        }

        func finish(head: LibraryHead, lastDeviceSequence: Int64) throws {
            try writePending()
            try db.execute(
                "UPDATE libraries SET last_seq = ?, last_hash = ? WHERE library_id = ?", [head.sequence, head.chainHash, library])
            try db.execute(
                "UPDATE devices SET last_device_seq = ?, last_seen_at = ? WHERE library_id = ? AND device_id = ?",
                [lastDeviceSequence, receivedAt, library, device.rawValue])
        }
    }

    // MARK: Pull and chain

    private static let eventColumns =
        "e.server_seq, e.event_id, e.device_id, e.device_seq, e.hlc, e.change_block, e.object_id, e.type, e.schema_version, e.payload, "
        + "e.chain_hash, e.content_hash, e.format, CASE WHEN e.bound = 1 THEN l.library_uuid END, e.key_id, e.nonce"

    private static func decodeEvent(_ row: Statement) throws -> ServerEvent {
        func uuid(_ column: Int32) throws -> UUID {
            guard let value = row.withBlob(column, { UUID(bytes: $0) }) else {
                throw DecodingError("a 16-byte identifier in column \(column) of server_events", offset: 0)
            }
            return value
        }
        guard let format = UInt8(exactly: row.int64(12)).flatMap(Event.Format.init(rawValue:)), let keyID = UInt32(exactly: row.int64(14))
        else {
            throw DecodingError("an envelope this server cannot read at server sequence \(row.int64(0))", offset: 0)
        }
        let event = Event(
            id: try uuid(1), library: row.isNull(13) ? nil : try uuid(13), device: DeviceID(row.text(2)), deviceSequence: row.int64(3),
            timestamp: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(4))), changeBlock: try uuid(5), object: try uuid(6),
            type: row.text(7), schemaVersion: Int(row.int64(8)),
            seal: keyID == 0 ? nil : Event.Seal(keyID: keyID, nonce: row.isNull(15) ? [] : row.blob(15)), payload: row.blob(9),
            format: format)
        return ServerEvent(
            event: event, serverSequence: row.int64(0), chainHash: row.blob(10), contentHash: row.isNull(11) ? nil : row.blob(11))
    }

    public func events(library: Int64, after since: Int64, limit: Int) throws -> ServerPage {
        try read { db in
            var events = try db.rows(
                """
                SELECT \(Self.eventColumns) FROM server_events e JOIN libraries l ON l.library_id = e.library_id
                WHERE e.library_id = ? AND e.server_seq > ? ORDER BY e.server_seq LIMIT ?
                """, [library, since, Int64(limit + 1)], Self.decodeEvent)
            let hasMore = events.count > limit
            if hasMore { events.removeLast() }
            return ServerPage(events: events, hasMore: hasMore)
        }
    }

    public func recordPull(library: Int64, device: DeviceID, since: Int64, at milliseconds: UInt64) throws {
        let recorded = try read { db in
            try db.firstRow(
                "SELECT last_pulled_seq FROM devices WHERE library_id = ? AND device_id = ?", [library, device.rawValue]
            ) { $0.int64(0) }
        }
        guard recorded != since else { return }
        try writer.write { db in
            try db.execute(
                """
                INSERT INTO devices (library_id, device_id, registered_at, last_pulled_seq) VALUES (?, ?, ?, ?)
                ON CONFLICT (library_id, device_id) DO UPDATE SET last_pulled_seq = excluded.last_pulled_seq
                """, [library, device.rawValue, Int64(milliseconds), since])
        }
    }

    public func chainSummary(libraryID: Int64) throws -> ChainSummary {
        try read { db in
            let row = try db.firstRow("SELECT last_seq, last_hash FROM libraries WHERE library_id = ?", [libraryID]) {
                ($0.int64(0), $0.blob(1))
            }
            guard let row else { throw ServerStoreError("library \(libraryID) no longer exists") }
            return ChainSummary(count: row.0, headHash: row.1, lastServerSequence: row.0)
        }
    }

    public func compactionWatermark(libraryID: Int64) throws -> CompactionWatermark {
        // One statement, so the head and the devices' positions come from one snapshot. Devices
        // count when they can still pull: a token that is not revoked and whose scope allows it.
        let row = try read { db in
            try db.firstRow(
                """
                WITH counted AS (
                    SELECT last_pulled_seq FROM devices
                    WHERE library_id = ?1 AND device_id IN (
                        SELECT device_id FROM tokens
                        WHERE library_id = ?1 AND revoked_at IS NULL AND scope IN ('readWrite', 'readOnly')))
                SELECT last_seq, (SELECT count(*) FROM counted), (SELECT min(last_pulled_seq) FROM counted)
                FROM libraries WHERE library_id = ?1
                """, [libraryID]
            ) { ($0.int64(0), $0.int64(1), $0.optionalInt64(2)) }
        }
        guard case let (last, count, lowest)? = row else { throw ServerStoreError("library \(libraryID) no longer exists") }
        return CompactionWatermark(watermark: min(lowest ?? last, last), lastServerSequence: last, deviceCount: Int(count))
    }

    // MARK: Blobs

    public func blobSize(libraryID: Int64, hash: [UInt8]) throws -> Int64? {
        try read { db in
            try db.firstRow("SELECT size FROM blobs WHERE library_id = ? AND sha256 = ?", [libraryID, hash]) { $0.int64(0) }
        }
    }

    /// The blob's lock is the store's write transaction (one writer at a time), so `stored` runs
    /// inside it: a file's existence, or a `HEAD` of an S3 object.
    public func recordBlob(libraryID: Int64, hash: [UInt8], size: Int64, at milliseconds: UInt64, ifStored stored: () throws -> Bool)
        throws -> Bool?
    {
        try writer.write { db in
            guard try stored() else { return nil }
            try db.execute(
                "INSERT INTO blobs (library_id, sha256, size, stored_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [libraryID, hash, size, Int64(milliseconds)])
            return db.changes == 1
        }
    }

    public func missingBlobs(libraryID: Int64, hashes: [[UInt8]]) throws -> [[UInt8]] {
        try read { db in
            try hashes.filter { hash in
                try db.firstRow("SELECT 1 FROM blobs WHERE library_id = ? AND sha256 = ?", [libraryID, hash]) { _ in true } == nil
            }
        }
    }

    // MARK: Snapshots

    public func recordSnapshot(_ record: SnapshotRecord, libraryID: Int64, keeping: Int) throws -> SnapshotRecording {
        try writer.write { db in
            let floor = try db.firstRow("SELECT snapshot_floor FROM libraries WHERE library_id = ?", [libraryID]) { $0.int64(0) } ?? 0
            guard record.position >= floor else { return .precedesPurge(at: floor) }
            try db.execute(
                """
                INSERT INTO snapshots (library_id, position, sha256, chain_hash, size, device_id, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """,
                [libraryID, record.position, record.hash, record.chainHash, record.size, record.device, Int64(clamping: record.recordedAt)])
            let kept =
                try db.firstRow(
                    """
                    SELECT position, chain_hash, sha256, size, device_id, recorded_at FROM snapshots
                    WHERE library_id = ? AND position = ? AND sha256 = ?
                    """, [libraryID, record.position, record.hash], Self.snapshot) ?? record
            let retired = try db.rows(
                """
                DELETE FROM snapshots WHERE library_id = ?1 AND (position, sha256) NOT IN (
                    SELECT position, sha256 FROM snapshots WHERE library_id = ?1
                    ORDER BY position DESC, recorded_at DESC, sha256 LIMIT ?2)
                RETURNING sha256
                """, [libraryID, Int64(max(1, keeping))]
            ) { $0.blob(0) }
            try Self.retireBlobs(retired, libraryID: libraryID, at: Int64(clamping: record.recordedAt), in: db)
            return .recorded(kept)
        }
    }

    /// Takes the blobs of retired snapshots out of the library, unless a snapshot it keeps names
    /// them, and queues them for deletion from the blob store.
    fileprivate static func retireBlobs(_ hashes: [[UInt8]], libraryID: Int64, at milliseconds: Int64, in db: Database) throws {
        for hash in Set(hashes) {
            guard try db.firstRow("SELECT 1 FROM snapshots WHERE library_id = ? AND sha256 = ?", [libraryID, hash], { _ in true }) == nil
            else { continue }
            try db.execute("DELETE FROM blobs WHERE library_id = ? AND sha256 = ?", [libraryID, hash])
            try db.execute(
                "INSERT INTO retired_blobs (sha256, retired_at) VALUES (?, ?) ON CONFLICT DO NOTHING", [hash, milliseconds])
        }
    }

    public func snapshots(libraryID: Int64) throws -> [SnapshotRecord] {
        try read { db in
            try db.rows(
                """
                SELECT position, chain_hash, sha256, size, device_id, recorded_at FROM snapshots
                WHERE library_id = ? ORDER BY position DESC, recorded_at DESC, sha256
                """, [libraryID], Self.snapshot)
        }
    }

    public func retiredBlobs(limit: Int) throws -> [[UInt8]] {
        try writer.write { db in
            try db.execute("DELETE FROM retired_blobs WHERE sha256 IN (SELECT sha256 FROM blobs)")
            return try db.rows("SELECT sha256 FROM retired_blobs ORDER BY retired_at, sha256 LIMIT ?", [Int64(max(0, limit))]) {
                $0.blob(0)
            }
        }
    }

    /// Deletes the blob's bytes inside the store's write transaction (the blob's lock; see the
    /// protocol): a deletion of retired blobs, which is rare, holds the writer for one `remove`.
    public func deleteRetiredBlob(_ hash: [UInt8], removing remove: () throws -> Void) throws -> Bool {
        try writer.write { db in
            guard try db.firstRow("SELECT 1 FROM retired_blobs WHERE sha256 = ?", [hash], { _ in true }) != nil else { return false }
            let held = try db.firstRow("SELECT 1 FROM blobs WHERE sha256 = ?", [hash]) { _ in true } != nil
            if !held { try remove() }
            try db.execute("DELETE FROM retired_blobs WHERE sha256 = ?", [hash])
            return !held
        }
    }

    // MARK: Blob garbage collection

    public func recordBlobReferences(libraryID: Int64, _ references: [BlobReference], at milliseconds: UInt64) throws {
        guard !references.isEmpty else { return }
        try writer.write { db in
            for reference in references {
                try db.execute(
                    """
                    INSERT INTO blob_references (library_id, sha256, object_id, recorded_at) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT DO UPDATE SET recorded_at = max(recorded_at, excluded.recorded_at)
                    """, [libraryID, reference.hash, reference.object.bytes, Int64(clamping: milliseconds)])
            }
        }
    }

    /// The blobs of a library that garbage collection takes out (see
    /// ``ServerStore/collectBlobs(library:storedBefore:dryRun:)``): ?1 the library, ?2 the cutoff.
    /// The write transaction holds the database: no row lock.
    static let collectableBlobsSQL = BlobCollection.collectableBlobsSQL(library: "?1", cutoff: "?2")

    public func collectBlobs(library: String?, storedBefore cutoff: UInt64, dryRun: Bool) throws -> [CollectedBlob] {
        try writer.write { db in
            let libraries: [(id: Int64, name: String)]
            if let library {
                libraries = [(try existingLibraryID(db, library), library)]
            } else {
                libraries = try db.rows("SELECT library_id, name FROM libraries ORDER BY name") { ($0.int64(0), $0.text(1)) }
            }
            var collected: [CollectedBlob] = []
            let retiredAt = Int64(clamping: cutoff)
            for (id, name) in libraries {
                let blobs = try db.rows(Self.collectableBlobsSQL, [id, Int64(clamping: cutoff)]) {
                    CollectedBlob(library: name, hash: $0.blob(0), size: $0.int64(1))
                }
                collected += blobs
                guard !dryRun else { continue }
                for blob in blobs {
                    try db.execute("DELETE FROM blobs WHERE library_id = ? AND sha256 = ?", [id, blob.hash])
                    try db.execute("DELETE FROM blob_references WHERE library_id = ? AND sha256 = ?", [id, blob.hash])
                    try db.execute(
                        "INSERT INTO retired_blobs (sha256, retired_at) VALUES (?, ?) ON CONFLICT DO NOTHING", [blob.hash, retiredAt])
                }
            }
            return collected
        }
    }

    public func latestSnapshot(libraryID: Int64) throws -> SnapshotRecord? {
        try read { db in
            try db.firstRow(
                """
                SELECT position, chain_hash, sha256, size, device_id, recorded_at FROM snapshots
                WHERE library_id = ? ORDER BY position DESC, recorded_at DESC, sha256 LIMIT 1
                """, [libraryID], Self.snapshot)
        }
    }

    private static func snapshot(_ row: Statement) -> SnapshotRecord {
        SnapshotRecord(
            position: row.int64(0), chainHash: row.blob(1), hash: row.blob(2), size: row.int64(3), device: row.text(4),
            recordedAt: UInt64(clamping: row.int64(5)))
    }

    // MARK: Key store

    public func keyEntries(libraryID: Int64, after: Int64) throws -> (entries: [KeyEntry], last: Int64) {
        try read { db in
            let last =
                try db.firstRow("SELECT coalesce(max(seq), 0) FROM key_entries WHERE library_id = ?", [libraryID]) { $0.int64(0) } ?? 0
            // Everything: one pass over the library's entries, already in name order. What changed
            // since a position: through the index by position (a device's every sync asks for
            // the few entries since its last, which must not cost a pass over a large library's
            // keys), then sorted by name.
            let entries = try db.rows(
                after == 0
                    ? "SELECT name, value FROM key_entries WHERE library_id = ? AND seq > ? AND seq <= ? ORDER BY name"
                    : "SELECT name, value FROM key_entries INDEXED BY key_entries_by_seq WHERE library_id = ? AND seq > ? AND seq <= ? ORDER BY name",
                [libraryID, after, last]
            ) {
                KeyEntry(name: $0.text(0), value: $0.blob(1))
            }
            return (entries, last)
        }
    }

    public func keyEntry(libraryID: Int64, name: String) throws -> [UInt8]? {
        try read { db in
            try db.firstRow("SELECT value FROM key_entries WHERE library_id = ? AND name = ?", [libraryID, name]) { $0.blob(0) }
        }
    }

    public func applyKeyChangesReportingPositions(libraryID: Int64, _ changes: [KeyChange], by device: DeviceID, at milliseconds: UInt64)
        throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64)
    {
        try writer.write { db in
            try Self.applyKeyChanges(changes, libraryID: libraryID, by: device, at: Int64(milliseconds), in: db)
        }
    }

    /// ``applyKeyChangesReportingPositions(libraryID:_:by:at:)`` in the writer's open transaction.
    fileprivate static func applyKeyChanges(
        _ changes: [KeyChange], libraryID: Int64, by device: DeviceID, at milliseconds: Int64, in db: Database
    )
        throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64)
    {
        // Deleted and replaced entries (destroyed keys) are overwritten in the file, not only
        // unlinked; only here: the connection's other writes (pushes) need not pay for it.
        try db.execute("PRAGMA secure_delete = ON")
        defer { try? db.execute("PRAGMA secure_delete = OFF") }
        let from =
            try db.firstRow("SELECT coalesce(max(seq), 0) FROM key_entries WHERE library_id = ?", [libraryID]) { $0.int64(0) } ?? 0
        var seq = from
        var statuses: [KeyChangeStatus] = []
        statuses.reserveCapacity(changes.count)
        // Consecutive writes are stored with few statements (a large library's asset keys
        // arrive by the thousand); a deletion or a create-only write first stores those
        // before it, so the changes still take effect in order.
        var writes: [(name: String, value: [UInt8], seq: Int64)] = []
        func storeWrites() throws {
            guard !writes.isEmpty else { return }
            try Self.keyEntryUpsert.run(count: writes.count, in: db) { row, values in
                let write = writes[row]
                values.append(libraryID)
                values.append(write.name)
                values.append(blob: write.value)
                values.append(device.rawValue)
                values.append(milliseconds)
                values.append(write.seq)
            }
            writes.removeAll(keepingCapacity: true)
        }
        for change in changes {
            guard let value = change.value else {
                try storeWrites()
                try db.execute("DELETE FROM key_entries WHERE library_id = ? AND name = ?", [libraryID, change.name])
                statuses.append(.deleted)
                continue
            }
            if change.createOnly {
                try storeWrites()
                if let held = try db.firstRow(
                    "SELECT value FROM key_entries WHERE library_id = ? AND name = ?", [libraryID, change.name], { $0.blob(0) })
                {
                    statuses.append(held == value ? .stored : .conflict)
                    continue
                }
            }
            seq += 1
            writes.append((change.name, value, seq))
            statuses.append(.stored)
        }
        try storeWrites()
        return (statuses, from, seq)
    }

    /// Writes key store entries (a later write of a name replaces the earlier one, in the same
    /// statement too).
    private static let keyEntryUpsert = BatchInsert(
        "INSERT INTO key_entries (library_id, name, value, written_by, written_at, seq)", columns: 6,
        tail: """
            ON CONFLICT (library_id, name) DO UPDATE SET value = excluded.value, written_by = excluded.written_by,
                written_at = excluded.written_at, seq = excluded.seq
            """)
}
