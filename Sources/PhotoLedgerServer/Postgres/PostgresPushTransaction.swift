import Foundation
import LedgerCore
import SyncProtocol

/// One push on one connection, inside its transaction, with the library's head locked.
///
/// Round trips are what a push costs on a database across a socket, and on a busy machine each
/// one also waits for the server thread and the backend to be scheduled; the library's lock is
/// held across those after the first. So a push makes two: the transaction opens in one
/// pipeline (`BEGIN`, the device's row, the library's locks, the head, and what the rules will
/// ask about the push's identifiers and objects), and ends in another (its events, its
/// rejections, the new head and the device's position, `COMMIT`): ``commit()``. Lookups answer
/// from what it read and what it holds, exactly as if every write had gone to the database at
/// once: the head lock keeps every other push of the library out meanwhile.
///
/// A transaction that checks new events on write (``checksNewEventsOnWrite``) reads ahead only
/// the rejections of the push's identifiers (and the stored events of identifiers at sequences
/// the device used already): the unique index of identifiers and the objects' claims check the
/// rest as the events are written, and a failed check rolls the push back
/// (``DeferredCheckFailed``).
final class PostgresPushTransaction: PushTransaction {
    private let connection: PostgresConnection
    private let library: Int64
    private let device: DeviceID
    private let receivedAt: Int64
    let head: LibraryHead
    let lastDeviceSequence: Int64
    let checksNewEventsOnWrite: Bool

    /// What the database holds, for identifiers read already (nil: not stored).
    private var storedEvents: [UUID: (serverSequence: Int64, contentHash: [UInt8]?)?] = [:]
    /// Rejections in the database, for identifiers read already (nil: never rejected).
    private var storedRejections: [UUID: String?] = [:]
    /// The kind of the first stored event about an object, for objects read already.
    private var storedObjects: [UUID: ObjectPresence] = [:]

    private struct PendingEvent {
        let event: Event
        let serverSequence: Int64
        let chainHash: [UInt8]
        let contentHash: [UInt8]?
    }
    private var pendingEvents: [PendingEvent] = []
    private var pendingByID: [UUID: Int] = [:]
    private var pendingObjects: [UUID: ObjectPresence] = [:]
    /// The claims the pending events make: the first of them about each object, with whether the
    /// object must be new (checked on write).
    private var pendingClaims: [(object: UUID, serverSequence: Int64, mustBeNew: Bool)] = []
    private var pendingRejections: [(id: UUID, deviceSequence: Int64, reason: String)] = []
    private var pendingRejectionByID: [UUID: String] = [:]
    /// The head and device position ``finish(head:lastDeviceSequence:)`` saves at commit.
    private var finished: (head: LibraryHead, lastDeviceSequence: Int64)?

    /// The first key of the push locks (`pg_advisory_xact_lock(space, library)`); the migrator's
    /// lock uses the one-key form, so the two never meet.
    static let advisoryLockSpace: Int32 = 0x504C_5055  // "PLPU"

    /// Begins the push's transaction on `connection` (which must be outside any transaction)
    /// and reads ahead what the rules will ask about `candidates`, in one round trip: everything,
    /// or, when `checksNewEventsOnWrite`, only the rejections (and one more round trip for the
    /// identifiers of a push that repeats sequences the device used already).
    init(
        connection: PostgresConnection, library: Int64, device: DeviceID, at receivedAt: Int64, readingAheadFor candidates: [PushCandidate],
        checksNewEventsOnWrite: Bool
    )
        throws
    {
        self.connection = connection
        self.library = library
        self.device = device
        self.receivedAt = receivedAt
        self.checksNewEventsOnWrite = checksNewEventsOnWrite
        // Pushes to the library queue first on a transaction-level advisory lock of the library:
        // PostgreSQL grants it to one waiter at a time, in order, where waiters on a row lock
        // would all wake at every commit and race for the row again. The row lock that follows
        // is what keeps the head consistent (FOR NO KEY UPDATE: inserts that only reference the
        // library, blobs and devices of a pull, do not wait for the push).
        //
        // The device's row comes first, before the library's lock: its upsert locks the row
        // until the transaction ends, so another push of the same device (a retry through
        // another server) waits there and then reads the position this one leaves. Every push
        // takes the device row, then the library's locks, in that order; pulls take neither.
        //
        // The statements after the locks run once the locks are granted, each with a snapshot
        // of its own, so they see everything the previous holder committed.
        let ids = Array(Set(candidates.map(\.id)))
        let objects = checksNewEventsOnWrite ? [] : Self.objectsAsked(by: candidates)
        var statements =
            Self.opening(library: library, device: device, at: receivedAt) + [
                .init("SELECT last_seq, last_hash FROM libraries WHERE library_id = $1 FOR NO KEY UPDATE", [.int64(library)])
            ]
        if !ids.isEmpty {
            statements.append(
                checksNewEventsOnWrite ? Self.rejectionLookup(ids, library: library) : Self.identifierLookup(ids, library: library))
        }
        if !objects.isEmpty { statements.append(Self.objectLookup(objects, library: library)) }
        let results = try connection.pipeline(statements)
        lastDeviceSequence = results[1].count > 0 ? results[1].int64(0, 0) : 0
        guard results[3].count > 0 else { throw ServerStoreError("library \(library) no longer exists") }
        head = LibraryHead(sequence: results[3].int64(0, 0), chainHash: results[3].bytes(0, 1))
        var next = 4
        if !ids.isEmpty {
            if checksNewEventsOnWrite { absorbRejections(ids, results[next]) } else { absorbIdentifiers(ids, results[next]) }
            next += 1
        }
        if !objects.isEmpty { absorbObjects(results[next]) }
        if checksNewEventsOnWrite {
            // Events at sequences the device used already are answered from the log: a retry.
            let lastDeviceSequence = lastDeviceSequence
            try readIdentifiers(
                Array(
                    Set(
                        candidates.lazy.filter {
                            if case .refuse = $0 { return false }
                            return $0.deviceSequence <= lastDeviceSequence
                        }.map(\.id))))
        }
    }

    /// `BEGIN`, the device's row (locked; its last sequence returned), then the library's lock.
    static func opening(library: Int64, device: DeviceID, at receivedAt: Int64) -> [PostgresConnection.PipelinedStatement] {
        [
            .command("BEGIN"),
            .init(
                """
                INSERT INTO devices (library_id, device_id, registered_at) VALUES ($1, $2, $3)
                ON CONFLICT (library_id, device_id) DO UPDATE SET last_seen_at = devices.last_seen_at
                RETURNING last_device_seq
                """, [.int64(library), .text(device.rawValue), .int64(receivedAt)]),
            .init("SELECT pg_advisory_xact_lock($1, $2)", [.int32(advisoryLockSpace), .int32(Int32(truncatingIfNeeded: library))]),
        ]
    }

    // MARK: Reading ahead

    func prefetch(for candidates: [PushCandidate]) throws {
        let ids = Array(Set(candidates.map(\.id)).filter { storedEvents[$0] == nil || storedRejections[$0] == nil })
        try readIdentifiers(ids)
        try readObjects(Self.objectsAsked(by: candidates).filter { storedObjects[$0] == nil })
    }

    /// The objects the rules ask about for `candidates`: those of creations (and of every event
    /// of an addOnly token, which may push creations only: those ask one at a time).
    private static func objectsAsked(by candidates: [PushCandidate]) -> [UUID] {
        var objects: Set<UUID> = []
        for case .accept(let event, _) in candidates where EventType(rawValue: event.type)?.isCreation == true {
            objects.insert(event.object)
        }
        return Array(objects)
    }

    private func readIdentifiers(_ ids: [UUID]) throws {
        guard !ids.isEmpty else { return }
        absorbIdentifiers(ids, try connection.pipeline([Self.identifierLookup(ids, library: library)])[0])
    }

    /// The lookup of stored events and rejections by identifier.
    private static func identifierLookup(_ ids: [UUID], library: Int64) -> PostgresConnection.PipelinedStatement {
        // One unique-index probe per identifier, whatever the statistics say. The form
        // `event_id = ANY($2)` let the planner, without statistics (a log that grew since its
        // last ANALYZE, or that was never analyzed), take `library_id = $1` for 0.5 % of the log
        // and read the library's whole log with the identifiers as a filter: a push cost time
        // proportional to the log. Planned at each execution: a generic plan made while the
        // log is empty picks either index of `library_id` (their costs tie there) and keeps it.
        .init(
            """
            SELECT i.id, e.server_seq, e.content_hash, r.reason FROM unnest($2::bytea[]) AS i (id)
            LEFT JOIN LATERAL (SELECT server_seq, content_hash FROM server_events
                               WHERE library_id = $1 AND event_id = i.id LIMIT 1) e ON true
            LEFT JOIN LATERAL (SELECT reason FROM rejected_events WHERE library_id = $1 AND event_id = i.id LIMIT 1) r ON true
            """, [.int64(library), .array(element: .bytea, ids.map(PostgresValue.uuid))], planned: .eachTime)
    }

    private func absorbIdentifiers(_ ids: [UUID], _ result: PostgresResult) {
        for id in ids {
            storedEvents[id] = .some(nil)
            storedRejections[id] = .some(nil)
        }
        for row in 0..<result.count {
            guard let id = result.uuid(row, 0) else { continue }
            if let sequence = result.optionalInt64(row, 1) { storedEvents[id] = .some((sequence, result.optionalBytes(row, 2))) }
            if let reason = result.optionalText(row, 3) { storedRejections[id] = .some(reason) }
        }
    }

    /// The lookup of rejections by identifier.
    private static func rejectionLookup(_ ids: [UUID], library: Int64) -> PostgresConnection.PipelinedStatement {
        .init(
            "SELECT event_id, reason FROM rejected_events WHERE library_id = $1 AND event_id = ANY($2::bytea[])",
            [.int64(library), .array(element: .bytea, ids.map(PostgresValue.uuid))], planned: .eachTime)
    }

    private func absorbRejections(_ ids: [UUID], _ result: PostgresResult) {
        for id in ids { storedRejections[id] = .some(nil) }
        for row in 0..<result.count {
            guard let id = result.uuid(row, 0) else { continue }
            storedRejections[id] = .some(result.text(row, 1))
        }
    }

    private func readObjects(_ objects: [UUID]) throws {
        guard !objects.isEmpty else { return }
        absorbObjects(try connection.pipeline([Self.objectLookup(objects, library: library)])[0])
    }

    /// The lookup of the first stored event's type of each object, by its claim.
    private static func objectLookup(_ objects: [UUID], library: Int64) -> PostgresConnection.PipelinedStatement {
        .init(
            """
            SELECT o.id, e.type FROM unnest($2::bytea[]) AS o (id)
            LEFT JOIN server_objects c ON c.library_id = $1 AND c.object_id = o.id
            LEFT JOIN server_events e ON e.library_id = $1 AND e.server_seq = c.first_seq
            """, [.int64(library), .array(element: .bytea, objects.map(PostgresValue.uuid))], planned: .eachTime)
    }

    private func absorbObjects(_ result: PostgresResult) {
        for row in 0..<result.count {
            guard let object = result.uuid(row, 0) else { continue }
            storedObjects[object] = result.optionalText(row, 1).map { .held(EventType(rawValue: $0)?.objectKind) } ?? .absent
        }
    }

    // MARK: Lookups

    func storedEvent(_ id: UUID) throws -> (serverSequence: Int64, contentHash: [UInt8]?)? {
        if let index = pendingByID[id] { return (pendingEvents[index].serverSequence, pendingEvents[index].contentHash) }
        if storedEvents[id] == nil { try readIdentifiers([id]) }
        return storedEvents[id] ?? nil
    }

    func rejectionReason(ofEvent id: UUID) throws -> String? {
        if let reason = pendingRejectionByID[id] { return reason }
        if storedRejections[id] == nil { try readIdentifiers([id]) }
        return storedRejections[id] ?? nil
    }

    func presence(ofObject object: UUID) throws -> ObjectPresence {
        if storedObjects[object] == nil { try readObjects([object]) }
        if case .held = storedObjects[object] { return storedObjects[object]! }
        return pendingObjects[object] ?? .absent
    }

    // MARK: Writes, kept until the end

    func insert(_ event: Event, serverSequence: Int64, chainHash: [UInt8], contentHash: [UInt8]?, requiringNewObject: Bool) throws -> Bool {
        if checksNewEventsOnWrite {
            // An identifier twice in the push, or an event that must be first about its object
            // after another about it: the checks the lookups would have made.
            guard pendingByID[event.id] == nil, !(requiringNewObject && pendingObjects[event.object] != nil) else {
                throw DeferredCheckFailed()
            }
        } else {
            guard try storedEvent(event.id) == nil else { return false }
        }
        pendingByID[event.id] = pendingEvents.count
        pendingEvents.append(PendingEvent(event: event, serverSequence: serverSequence, chainHash: chainHash, contentHash: contentHash))
        if pendingObjects[event.object] == nil {
            pendingObjects[event.object] = .held(EventType(rawValue: event.type)?.objectKind)
            pendingClaims.append((event.object, serverSequence, requiringNewObject))
        }
        return true
    }

    func recordRejection(ofEvent id: UUID, deviceSequence: Int64, reason: String) throws {
        guard try rejectionReason(ofEvent: id) == nil else { return }
        pendingRejectionByID[id] = reason
        pendingRejections.append((id, deviceSequence, reason))
    }

    func retireSnapshots(before position: Int64) throws {
        _ = try connection.query(
            "UPDATE libraries SET snapshot_floor = greatest(snapshot_floor, $1) WHERE library_id = $2", [.int64(position), .int64(library)])
        let retired = try connection.query(
            "DELETE FROM snapshots WHERE library_id = $1 AND position < $2 RETURNING sha256", [.int64(library), .int64(position)])
        try PostgresServerStore.retireBlobs(
            (0..<retired.count).map { retired.bytes($0, 0) }, libraryID: library, at: receivedAt, on: connection)
    }

    func finish(head: LibraryHead, lastDeviceSequence: Int64) throws {
        finished = (head, lastDeviceSequence)
    }

    // MARK: Key store, at once

    func keyEntry(named name: String) throws -> [UInt8]? {
        let result = try connection.query(
            "SELECT value FROM key_entries WHERE library_id = $1 AND name = $2", [.int64(library), .text(name)])
        return result.count > 0 ? result.bytes(0, 0) : nil
    }

    /// Applies the changes now, in the open transaction: the library's row, locked since it
    /// began, keeps the other writers of its key store out (they lock it `FOR UPDATE`).
    func applyKeyChanges(_ changes: [KeyChange]) throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64) {
        try PostgresServerStore.applyKeyChanges(changes, libraryID: library, by: device, at: receivedAt, on: connection)
    }

    /// Stores what the push kept (its events, its rejections, and the head and device position
    /// of ``finish(head:lastDeviceSequence:)``) and commits, in one round trip. When events
    /// were stored, the commit also notifies every listening server process (and never if the
    /// transaction rolls back): their waiting pulls of this library wake up.
    func commit() throws {
        var statements = pendingWrites()
        if let finished {
            // Data-modifying CTEs run once whether or not the query reads them.
            statements.append(
                .init(
                    """
                    WITH head AS (UPDATE libraries SET last_seq = $1, last_hash = $2 WHERE library_id = $3 RETURNING 1),
                    position AS (UPDATE devices SET last_device_seq = $4, last_seen_at = $5 WHERE library_id = $3 AND device_id = $6 RETURNING 1)
                    SELECT pg_notify($7, $8) FROM head WHERE $9
                    """,
                    [
                        .int64(finished.head.sequence), .bytes(finished.head.chainHash), .int64(library),
                        .int64(finished.lastDeviceSequence),
                        .int64(receivedAt), .text(device.rawValue), .text(PostgresCommitListener.channel),
                        .text("\(library) \(finished.head.sequence)"), .bool(finished.head.sequence > head.sequence),
                    ]))
        }
        statements.append(.command("COMMIT"))
        let results: [PostgresResult]
        do {
            results = try connection.pipeline(statements)
        } catch let error as PostgresError where checksNewEventsOnWrite && error.sqlState == Self.uniqueViolation {
            // A stored identifier, or a claim on an object the log holds.
            throw DeferredCheckFailed()
        }
        try PostgresServerStore.checkCommitted(results, connection)
        pendingEvents.removeAll()
        pendingByID.removeAll()
        pendingClaims.removeAll()
        pendingRejections.removeAll()
        pendingRejectionByID.removeAll()
    }

    /// SQLSTATE `unique_violation`.
    static let uniqueViolation = "23505"

    /// The statements that store the events, their objects' claims and the rejections kept so
    /// far. Claims on objects that must be new come first and fail the transaction when one is
    /// held; the others are made where no claim is.
    private func pendingWrites() -> [PostgresConnection.PipelinedStatement] {
        var statements: [PostgresConnection.PipelinedStatement] = []
        func claims(_ claims: [(object: UUID, serverSequence: Int64, mustBeNew: Bool)], _ tail: String) {
            guard !claims.isEmpty else { return }
            statements.append(
                .init(
                    """
                    INSERT INTO server_objects (library_id, object_id, first_seq)
                    SELECT $1, c.* FROM unnest($2::bytea[], $3::int8[]) AS c (object_id, first_seq)
                    """ + tail,
                    [
                        .int64(library), .array(element: .bytea, claims.map { .uuid($0.object) }),
                        .array(element: .int8, claims.map { .int64($0.serverSequence) }),
                    ]))
        }
        claims(pendingClaims.filter(\.mustBeNew), "")
        if !pendingEvents.isEmpty {
            let events = pendingEvents
            func column(_ type: PostgresType, _ value: (PendingEvent) -> PostgresValue) -> PostgresValue {
                .array(element: type, events.map(value))
            }
            statements.append(
                .init(
                    """
                    INSERT INTO server_events (library_id, received_at, server_seq, event_id, device_id, device_seq, hlc, change_block, object_id,
                                               type, schema_version, payload, chain_hash, content_hash, format, bound, key_id, nonce)
                    SELECT $1, $2, e.* FROM unnest($3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
                        AS e (server_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version, payload,
                              chain_hash, content_hash, format, bound, key_id, nonce)
                    """,
                    [
                        .int64(library), .int64(receivedAt),
                        column(.int8) { .int64($0.serverSequence) },
                        column(.bytea) { .uuid($0.event.id) },
                        column(.text) { .text($0.event.device.rawValue) },
                        column(.int8) { .int64($0.event.deviceSequence) },
                        column(.int8) { .int64(Int64(bitPattern: $0.event.timestamp.rawValue)) },
                        column(.bytea) { .uuid($0.event.changeBlock) },
                        column(.bytea) { .uuid($0.event.object) },
                        column(.text) { .text($0.event.type) },
                        column(.int8) { .int64(Int64($0.event.schemaVersion)) },
                        column(.bytea) { .bytes($0.event.payload) },
                        column(.bytea) { .bytes($0.chainHash) },
                        column(.bytea) { .optionalBytes($0.contentHash) },
                        column(.int8) { .int64(Int64($0.event.format.rawValue)) },
                        column(.bool) { .bool($0.event.library != nil) },
                        column(.int8) { .int64(Int64($0.event.seal?.keyID ?? 0)) },
                        column(.bytea) { .optionalBytes($0.event.seal?.nonce) },
                    ]))
        }
        claims(pendingClaims.filter { !$0.mustBeNew }, "\nON CONFLICT DO NOTHING")
        if !pendingRejections.isEmpty {
            let rejections = pendingRejections
            statements.append(
                .init(
                    """
                    INSERT INTO rejected_events (library_id, device_id, received_at, event_id, device_seq, reason)
                    SELECT $1, $2, $3, r.* FROM unnest($4, $5, $6) AS r (event_id, device_seq, reason)
                    ON CONFLICT DO NOTHING
                    """,
                    [
                        .int64(library), .text(device.rawValue), .int64(receivedAt),
                        .array(element: .bytea, rejections.map { .uuid($0.id) }),
                        .array(element: .int8, rejections.map { .int64($0.deviceSequence) }),
                        .array(element: .text, rejections.map { .text($0.reason) }),
                    ]))
        }
        return statements
    }
}
