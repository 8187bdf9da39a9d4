import Foundation
import LedgerCore
import LedgerStore
import Synchronization
import SyncProtocol

/// The embedded server store: one SQLite file (WAL) with the `Server` migrations, one writer
/// connection and a few read-only connections so pulls do not wait for pushes.
public final class SQLiteServerStore: ServerStore {
    private let writer: DatabaseQueue
    private let readers: [DatabaseQueue]
    private let nextReader = Atomic<Int>(0)
    /// The database file.
    public let path: String

    /// Opens (creating and migrating when needed) the server database at `path`.
    ///
    /// - Parameter readerCount: read-only connections for pulls and lookups.
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

    public func createLibrary(named name: String, at milliseconds: UInt64) throws {
        if let problem = LibraryName.problem(with: name) { throw ServerStoreError("invalid library name '\(name)': \(problem)") }
        try writer.write { db in
            if try libraryID(db, name) != nil {
                throw ServerStoreError("library '\(name)' already exists; choose another name")
            }
            try db.execute("INSERT INTO libraries (name, created_at) VALUES (?, ?)", [name, Int64(milliseconds)])
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
                SELECT t.token_hash, t.library_id, l.name, t.device_id, t.scope FROM tokens t
                JOIN libraries l ON l.library_id = t.library_id
                WHERE t.token_hash = ? AND t.revoked_at IS NULL
                """, [tokenHash]
            ) { row -> Credential? in
                guard constantTimeEquals(row.blob(0), tokenHash), let scope = TokenScope(rawValue: row.text(4)) else { return nil }
                return Credential(libraryID: row.int64(1), library: row.text(2), device: DeviceID(row.text(3)), scope: scope)
            } ?? nil
        }
    }

    // MARK: Push

    public func push(_ candidates: [PushCandidate], for credential: Credential, receivedAt milliseconds: UInt64) throws -> PushResponse {
        try writer.write { db in
            var batch = try PushBatch(db: db, credential: credential, receivedAt: Int64(milliseconds))
            let results = try candidates.map { try batch.apply($0) }
            try batch.save()
            return PushResponse(results: results, lastDeviceSequence: batch.lastDeviceSequence)
        }
    }

    /// The state of one push transaction.
    private struct PushBatch: ~Copyable {
        let db: Database
        let credential: Credential
        let receivedAt: Int64
        var lastServerSequence: Int64
        var lastDeviceSequence: Int64
        var chain: HashChain
        var gapped = false
        let insert: Statement

        init(db: Database, credential: Credential, receivedAt: Int64) throws {
            self.db = db
            self.credential = credential
            self.receivedAt = receivedAt
            let library = try db.firstRow("SELECT last_seq, last_hash FROM libraries WHERE library_id = ?", [credential.libraryID]) {
                ($0.int64(0), $0.blob(1))
            }
            guard let library else { throw ServerStoreError("library \(credential.library) no longer exists") }
            try db.execute(
                "INSERT INTO devices (library_id, device_id, registered_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [credential.libraryID, credential.device.rawValue, receivedAt])
            let lastDeviceSequence = try db.firstRow(
                "SELECT last_device_seq FROM devices WHERE library_id = ? AND device_id = ?",
                [credential.libraryID, credential.device.rawValue]
            ) { $0.int64(0) } ?? 0
            insert = try db.cachedStatement(
                """
                INSERT INTO server_events (library_id, server_seq, event_id, device_id, device_seq, hlc, change_block, object_id,
                                           type, schema_version, payload, chain_hash, received_at, content_hash)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """)
            self.lastDeviceSequence = lastDeviceSequence
            lastServerSequence = library.0
            chain = HashChain(head: library.1)
        }

        mutating func apply(_ candidate: PushCandidate) throws -> PushResult {
            let id = candidate.id
            if gapped { return PushResult(id: id, status: .gap(expectedDeviceSequence: lastDeviceSequence + 1)) }
            let sequence = candidate.deviceSequence
            if sequence > lastDeviceSequence + 1 {
                gapped = true
                return PushResult(id: id, status: .gap(expectedDeviceSequence: lastDeviceSequence + 1))
            }
            if sequence <= lastDeviceSequence {
                if let known = try knownOutcome(id) { return PushResult(id: id, status: known) }
                return PushResult(id: id, status: try reject(id, sequence, "device sequence \(sequence) already used (last is \(lastDeviceSequence))"))
            }
            // The next sequence: a stored duplicate shows up as a conflict on insert, so only an
            // earlier rejection needs a lookup here.
            if let reason = try rejectionReason(id) { return PushResult(id: id, status: .rejected(reason: reason)) }
            switch candidate {
            case .reject(_, _, let reason):
                lastDeviceSequence = sequence
                return PushResult(id: id, status: try reject(id, sequence, reason))
            case .accept(let event, let contentHash):
                let hash = chain.hash(linking: event)
                try bind(event, serverSequence: lastServerSequence + 1, chainHash: hash, contentHash: contentHash)
                defer { insert.reset() }
                try insert.step()
                guard db.changes == 1 else {
                    // Stored meanwhile under another sequence: report it as the duplicate it is.
                    return PushResult(id: id, status: try knownOutcome(id) ?? .rejected(reason: "conflicting event identifier"))
                }
                chain.advance(to: hash)
                lastServerSequence += 1
                lastDeviceSequence = sequence
                return PushResult(id: id, status: .stored(serverSequence: lastServerSequence))
            }
        }

        /// The outcome of an earlier push of `id`: stored (duplicate) or rejected.
        func knownOutcome(_ id: UUID) throws -> PushResult.Status? {
            let stored = try withUnsafeBytes(of: id.uuid) { key -> Int64? in
                let statement = try db.cachedStatement("SELECT server_seq FROM server_events WHERE library_id = ? AND event_id = ?")
                defer { statement.reset() }
                try statement.bind(credential.libraryID, at: 1)
                try statement.bind(bytes: key, at: 2)
                return try statement.step() ? statement.int64(0) : nil
            }
            if let stored { return .duplicate(serverSequence: stored) }
            return try rejectionReason(id).map { .rejected(reason: $0) }
        }

        /// The reason given when `id` was rejected before, or nil.
        func rejectionReason(_ id: UUID) throws -> String? {
            try withUnsafeBytes(of: id.uuid) { key in
                let statement = try db.cachedStatement("SELECT reason FROM rejected_events WHERE library_id = ? AND event_id = ?")
                defer { statement.reset() }
                try statement.bind(credential.libraryID, at: 1)
                try statement.bind(bytes: key, at: 2)
                return try statement.step() ? statement.text(0) : nil
            }
        }

        func reject(_ id: UUID, _ sequence: Int64, _ reason: String) throws -> PushResult.Status {
            try db.execute(
                """
                INSERT INTO rejected_events (library_id, event_id, device_id, device_seq, reason, received_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, [credential.libraryID, id.bytes, credential.device.rawValue, sequence, reason, receivedAt])
            return .rejected(reason: reason)
        }

        func bind(_ event: Event, serverSequence: Int64, chainHash: [UInt8], contentHash: [UInt8]?) throws {
            try insert.bind(credential.libraryID, at: 1)
            try insert.bind(serverSequence, at: 2)
            try withUnsafeBytes(of: event.id.uuid) { try insert.bind(bytes: $0, at: 3) }
            try insert.bind(event.device.rawValue, at: 4)
            try insert.bind(event.deviceSequence, at: 5)
            try insert.bind(Int64(bitPattern: event.timestamp.rawValue), at: 6)
            try withUnsafeBytes(of: event.changeBlock.uuid) { try insert.bind(bytes: $0, at: 7) }
            try withUnsafeBytes(of: event.object.uuid) { try insert.bind(bytes: $0, at: 8) }
            try insert.bind(event.type, at: 9)
            try insert.bind(Int64(event.schemaVersion), at: 10)
            try insert.bind(event.payload, at: 11)
            try insert.bind(chainHash, at: 12)
            try insert.bind(receivedAt, at: 13)
            if let contentHash { try insert.bind(contentHash, at: 14) }
        }

        func save() throws {
            try db.execute(
                "UPDATE libraries SET last_seq = ?, last_hash = ? WHERE library_id = ?",
                [lastServerSequence, chain.head, credential.libraryID])
            try db.execute(
                "UPDATE devices SET last_device_seq = ?, last_seen_at = ? WHERE library_id = ? AND device_id = ?",
                [lastDeviceSequence, receivedAt, credential.libraryID, credential.device.rawValue])
        }
    }

    // MARK: Pull and chain

    private static let eventColumns =
        "server_seq, event_id, device_id, device_seq, hlc, change_block, object_id, type, schema_version, payload, chain_hash, content_hash"

    private static func decodeEvent(_ row: Statement) throws -> ServerEvent {
        func uuid(_ column: Int32) throws -> UUID {
            guard let value = row.withBlob(column, { UUID(bytes: $0) }) else {
                throw DecodingError("a 16-byte identifier in column \(column) of server_events", offset: 0)
            }
            return value
        }
        let event = Event(
            id: try uuid(1), device: DeviceID(row.text(2)), deviceSequence: row.int64(3),
            timestamp: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(4))), changeBlock: try uuid(5), object: try uuid(6),
            type: row.text(7), schemaVersion: Int(row.int64(8)), payload: row.blob(9))
        return ServerEvent(
            event: event, serverSequence: row.int64(0), chainHash: row.blob(10), contentHash: row.isNull(11) ? nil : row.blob(11))
    }

    private func page(_ db: Database, libraryID: Int64, after since: Int64, limit: Int) throws -> ServerPage {
        var events = try db.rows(
            "SELECT \(Self.eventColumns) FROM server_events WHERE library_id = ? AND server_seq > ? ORDER BY server_seq LIMIT ?",
            [libraryID, since, Int64(limit + 1)], Self.decodeEvent)
        let hasMore = events.count > limit
        if hasMore { events.removeLast() }
        return ServerPage(events: events, hasMore: hasMore)
    }

    public func pull(for credential: Credential, since: Int64, limit: Int) throws -> ServerPage {
        let (page, watermark) = try read { db in
            let watermark = try db.firstRow(
                "SELECT last_pulled_seq FROM devices WHERE library_id = ? AND device_id = ?",
                [credential.libraryID, credential.device.rawValue]) { $0.int64(0) }
            return (try self.page(db, libraryID: credential.libraryID, after: since, limit: limit), watermark)
        }
        if watermark != since {
            try writer.write { db in
                try db.execute(
                    """
                    INSERT INTO devices (library_id, device_id, registered_at, last_pulled_seq) VALUES (?, ?, ?, ?)
                    ON CONFLICT (library_id, device_id) DO UPDATE SET last_pulled_seq = excluded.last_pulled_seq
                    """, [credential.libraryID, credential.device.rawValue, Int64(WallClock.milliseconds()), since])
            }
        }
        return page
    }

    public func chainSummary(libraryID: Int64) throws -> ChainSummary {
        try read { db in
            let row = try db.firstRow("SELECT last_seq, last_hash FROM libraries WHERE library_id = ?", [libraryID]) { ($0.int64(0), $0.blob(1)) }
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

    public func verifyChain(libraryID: Int64) throws -> ChainVerification {
        var chain = HashChain()
        var cursor: Int64 = 0
        while true {
            let page = try read { db in try self.page(db, libraryID: libraryID, after: cursor, limit: 1000) }
            for stored in page.events {
                let expected = chain.link(stored.event)
                guard stored.serverSequence == cursor + 1, constantTimeEquals(expected, stored.chainHash) else {
                    return .broken(serverSequence: stored.serverSequence, eventID: stored.event.id)
                }
                cursor = stored.serverSequence
            }
            if !page.hasMore { break }
        }
        let summary = try chainSummary(libraryID: libraryID)
        guard summary.lastServerSequence == cursor, constantTimeEquals(summary.headHash, chain.head) else {
            return .broken(serverSequence: summary.lastServerSequence, eventID: UUID(bytes: [UInt8](repeating: 0, count: 16))!)
        }
        return .intact(count: cursor)
    }

    // MARK: Blobs

    public func blobSize(libraryID: Int64, hash: [UInt8]) throws -> Int64? {
        try read { db in
            try db.firstRow("SELECT size FROM blobs WHERE library_id = ? AND sha256 = ?", [libraryID, hash]) { $0.int64(0) }
        }
    }

    public func recordBlob(libraryID: Int64, hash: [UInt8], size: Int64, at milliseconds: UInt64) throws -> Bool {
        try writer.write { db in
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
}
