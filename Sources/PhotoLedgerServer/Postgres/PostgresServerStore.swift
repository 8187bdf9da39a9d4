import CPostgres
import Foundation
import LedgerCore
import LedgerStore
import SyncProtocol

/// The server store on PostgreSQL, for several stateless server processes sharing one
/// database: the same tables and rules as ``SQLiteServerStore``, the `Postgres` migrations, a
/// bounded pool of connections, prepared statements with bound parameters, binary data as
/// `bytea`.
///
/// A push locks its library's head row (`SELECT … FOR NO KEY UPDATE`) for the length of its
/// transaction, so pushes to one library through any number of servers take server sequences
/// one after the other: no gap, no duplicate, one chain. Pushes to different libraries do not
/// wait for each other.
///
/// ```swift
/// let store = try PostgresServerStore(url: "postgresql://photoledger@db.internal/photoledger")
/// ```
public final class PostgresServerStore: ServerStore {
    /// The oldest PostgreSQL this store runs on: 15, the oldest release its project still
    /// supports, and the one the store is tested on.
    public static let minimumServerVersion = 150000

    /// Connection and durability settings.
    public struct Options: Sendable {
        /// The most connections this process opens (default 8: a few more than the server's threads).
        public var maximumConnections = 8
        /// How long a request waits for a free connection before it fails.
        public var acquireTimeout: Duration = .seconds(10)
        /// How long opening a connection may take, in seconds.
        public var connectTimeoutSeconds = 5
        /// The longest one statement may run (`statement_timeout`), waiting for a lock included.
        public var statementTimeout: Duration = .seconds(30)
        /// `synchronous_commit` for the store's sessions. The default, `off`, gives what the
        /// embedded store's SQLite WAL with `synchronous=NORMAL` gives: a commit never corrupts
        /// the database and survives the server process, while a crash of the machine may lose
        /// the last fraction of a second of commits. `on` waits for the WAL flush at every commit.
        public var synchronousCommit = "off"

        /// The defaults.
        public init() {}
    }

    /// The database, as `postgresql://user@host:port/name` (without its password).
    public let database: String
    let pool: PostgresPool
    private let identifiers = UUIDv7Generator(clock: { WallClock.milliseconds() }, random: SystemRandomNumberGenerator())

    /// Connects to the database at `url` (`postgresql://user:password@host:port/name`, or any
    /// libpq connection string), checks the server's version and applies pending migrations.
    ///
    /// - Throws: ``PostgresError`` when PostgreSQL is unreachable or too old;
    ///   `MigrationError` (LedgerStore) when the schema is newer than this build or was edited.
    public init(url: String, options: Options = Options()) throws {
        database = try Self.describe(url)
        let milliseconds =
            Int(options.statementTimeout.components.seconds) * 1000
            + Int(options.statementTimeout.components.attoseconds / 1_000_000_000_000_000)
        pool = PostgresPool(
            settings: .init(
                conninfo: url, database: database, maximumConnections: options.maximumConnections, acquireTimeout: options.acquireTimeout,
                connectTimeoutSeconds: options.connectTimeoutSeconds,
                sessionSettings: [
                    ("statement_timeout", "\(milliseconds)"), ("synchronous_commit", options.synchronousCommit),
                    ("idle_in_transaction_session_timeout", "\(max(milliseconds, 1000) * 2)"),
                    // No NOTICE lines on standard error (`CREATE TABLE IF NOT EXISTS` of the migrator).
                    ("client_min_messages", "warning"),
                ]))
        try pool.withConnection { connection in
            let version = connection.serverVersion
            guard version >= Self.minimumServerVersion else {
                throw PostgresError(
                    .unsupportedVersion,
                    "the server runs PostgreSQL \(version / 10000).\(version % 10000), older than \(Self.minimumServerVersion / 10000), "
                        + "the oldest this store supports; upgrade PostgreSQL",
                    database: database)
            }
            try Migrator.postgresServer().migrate(connection)
        }
    }

    /// `postgresql://user@host:port/name` for a libpq URL or connection string: what messages
    /// show, never the password.
    static func describe(_ url: String) throws -> String {
        var problem: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &problem) else {
            let reason = problem.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "out of memory"
            PQfreemem(problem)
            throw PostgresError(
                .invalidURL, "the database URL is not a PostgreSQL URL (\(reason)); use postgresql://USER@HOST:PORT/NAME",
                database: "(invalid URL)")
        }
        defer { PQconninfoFree(options) }
        var fields: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { fields[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        let user = fields["user"].map { "\($0)@" } ?? ""
        let port = fields["port"].map { ":\($0)" } ?? ""
        return "postgresql://\(user)\(fields["host"] ?? fields["hostaddr"] ?? "localhost")\(port)/\(fields["dbname"] ?? "")"
    }

    /// Listens for the commits of every server process on this database (`LISTEN`/`NOTIFY`)
    /// on a connection of its own, outside the pool.
    public func watchCommits(_ handler: @escaping @Sendable (StoreCommit?) -> Void) throws -> (any CommitWatch)? {
        let settings = pool.settings
        return PostgresCommitListener(
            connect: {
                try PostgresConnection(
                    conninfo: settings.conninfo, database: settings.database, connectTimeoutSeconds: settings.connectTimeoutSeconds,
                    settings: [("client_min_messages", "warning")])
            }, handler: handler)
    }

    private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try pool.withConnection(body)
    }

    private func inTransaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try pool.withConnection { connection in try connection.inTransaction { try body(connection) } }
    }

    // MARK: Administration

    public func createLibrary(named name: String, uuid: UUID?, at milliseconds: UInt64) throws {
        if let problem = LibraryName.problem(with: name) { throw ServerStoreError("invalid library name '\(name)': \(problem)") }
        let identifier = uuid ?? identifiers.next()
        let taken = ServerStoreError("library '\(name)' already exists; choose another name")
        do {
            try inTransaction { connection in
                if try libraryID(connection, name) != nil { throw taken }
                let other = try connection.query("SELECT name FROM libraries WHERE library_uuid = $1", [.uuid(identifier)])
                if other.count > 0 {
                    throw ServerStoreError(
                        "library '\(other.text(0, 0))' has the identifier \(identifier.uuidString) already; a library identifier names one library"
                    )
                }
                _ = try connection.query(
                    "INSERT INTO libraries (name, created_at, library_uuid) VALUES ($1, $2, $3)",
                    [.text(name), .int64(Int64(milliseconds)), .uuid(identifier)])
            }
        } catch let error as PostgresError where error.sqlState == "23505" {
            // Created by another server between the check and the insert.
            throw taken
        }
    }

    public func libraryNames() throws -> [String] {
        try withConnection { connection in
            let result = try connection.query("SELECT name FROM libraries ORDER BY name COLLATE \"C\"", [])
            return (0..<result.count).map { result.text($0, 0) }
        }
    }

    private func libraryID(_ connection: PostgresConnection, _ name: String) throws -> Int64? {
        let result = try connection.query("SELECT library_id FROM libraries WHERE name = $1", [.text(name)])
        return result.count > 0 ? result.int64(0, 0) : nil
    }

    private func existingLibraryID(_ connection: PostgresConnection, _ name: String) throws -> Int64 {
        guard let id = try libraryID(connection, name) else {
            throw ServerStoreError("no library named '\(name)'; create it with `photoledger-server admin create-library \(name)`")
        }
        return id
    }

    public func registerToken(hash: [UInt8], library: String, device: DeviceID, scope: TokenScope, at milliseconds: UInt64) throws {
        if let problem = DeviceID.problem(with: device.rawValue) { throw ServerStoreError("invalid device name '\(device)': \(problem)") }
        try inTransaction { connection in
            let id = try existingLibraryID(connection, library)
            _ = try connection.query(
                "INSERT INTO devices (library_id, device_id, registered_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                [.int64(id), .text(device.rawValue), .int64(Int64(milliseconds))])
            _ = try connection.query(
                "INSERT INTO tokens (library_id, device_id, scope, token_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
                [.int64(id), .text(device.rawValue), .text(scope.rawValue), .bytes(hash), .int64(Int64(milliseconds))])
        }
    }

    public func revokeTokens(library: String, device: DeviceID, at milliseconds: UInt64) throws -> Int {
        try inTransaction { connection in
            let id = try existingLibraryID(connection, library)
            let known = try connection.query(
                "SELECT 1 FROM devices WHERE library_id = $1 AND device_id = $2", [.int64(id), .text(device.rawValue)])
            guard known.count > 0 else {
                throw ServerStoreError("no device named '\(device)' in library '\(library)'; see `photoledger-server admin list-devices`")
            }
            return try connection.query(
                "UPDATE tokens SET revoked_at = $1 WHERE library_id = $2 AND device_id = $3 AND revoked_at IS NULL",
                [.int64(Int64(milliseconds)), .int64(id), .text(device.rawValue)]
            ).changes
        }
    }

    public func devices(library: String) throws -> [DeviceRecord] {
        try withConnection { connection in
            let id = try existingLibraryID(connection, library)
            let result = try connection.query(
                """
                SELECT d.device_id, d.last_device_seq, d.last_pulled_seq,
                       (SELECT scope FROM tokens t WHERE t.library_id = d.library_id AND t.device_id = d.device_id
                        ORDER BY t.revoked_at IS NULL DESC, t.token_id DESC LIMIT 1),
                       NOT EXISTS (SELECT 1 FROM tokens t WHERE t.library_id = d.library_id AND t.device_id = d.device_id
                                   AND t.revoked_at IS NULL)
                FROM devices d WHERE d.library_id = $1 ORDER BY d.device_id COLLATE "C"
                """, [.int64(id)])
            return (0..<result.count).map { row in
                DeviceRecord(
                    device: DeviceID(result.text(row, 0)), scope: result.optionalText(row, 3).flatMap(TokenScope.init(rawValue:)),
                    lastDeviceSequence: result.int64(row, 1), lastPulledSequence: result.int64(row, 2), revoked: result.bool(row, 4))
            }
        }
    }

    // MARK: Authentication

    public func authenticate(tokenHash: [UInt8]) throws -> Credential? {
        try withConnection { connection in
            let result = try connection.query(
                """
                SELECT t.token_hash, t.library_id, l.name, t.device_id, t.scope, l.library_uuid FROM tokens t
                JOIN libraries l ON l.library_id = t.library_id
                WHERE t.token_hash = $1 AND t.revoked_at IS NULL
                """, [.bytes(tokenHash)])
            guard result.count > 0, constantTimeEquals(result.bytes(0, 0), tokenHash), let scope = TokenScope(rawValue: result.text(0, 4)),
                let uuid = result.uuid(0, 5)
            else { return nil }
            return Credential(
                libraryID: result.int64(0, 1), library: result.text(0, 2), libraryUUID: uuid, device: DeviceID(result.text(0, 3)),
                scope: scope)
        }
    }

    // MARK: Push

    public func withPushTransaction<T>(
        library: Int64, device: DeviceID, at milliseconds: UInt64, _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        try withConnection { connection in
            try push(
                on: connection, library: library, device: device, at: milliseconds, readingAheadFor: [], checksNewEventsOnWrite: false, body
            )
        }
    }

    /// Opens the transaction and reads ahead for `candidates` in one round trip, and stores the
    /// push and commits in another (see `PostgresPushTransaction`). The push first runs with its
    /// new events checked as they are written (the unique index of identifiers, the objects'
    /// claims); one that meets a stored identifier or a held object there (a retry, a hostile
    /// device, an asset created again) runs again with every lookup, and is answered as that run
    /// decides.
    public func withPushTransaction<T>(
        library: Int64, device: DeviceID, at milliseconds: UInt64, readingAheadFor candidates: [PushCandidate],
        _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        try withConnection { connection in
            try push(on: connection, library: library, device: device, at: milliseconds, readingAheadFor: candidates, body)
        }
    }

    /// A push whose every event the rules would store (`PushRules.appendedEvents(_:scope:)`)
    /// is stored in one round trip when the log agrees (see `PostgresAppend`); any other push,
    /// or one the log does not agree to, runs with the rules on
    /// ``withPushTransaction(library:device:at:readingAheadFor:_:)``.
    public func push(_ candidates: [PushCandidate], for credential: Credential, receivedAt milliseconds: UInt64, rules: PushRules)
        throws -> PushResponse
    {
        try withConnection { connection in
            let (library, device) = (credential.libraryID, credential.device)
            var checkingOnWriteFirst = true
            if let events = rules.appendedEvents(candidates, scope: credential.scope) {
                do {
                    if let response = try PostgresAppend.append(
                        events, rules: rules, on: connection, library: library, device: device, at: Int64(milliseconds))
                    {
                        return response
                    }
                } catch is DeferredCheckFailed {
                    // A stored identifier or a held object: the checks on write would meet it again.
                    checkingOnWriteFirst = false
                }
            }
            return try push(
                on: connection, library: library, device: device, at: milliseconds, readingAheadFor: candidates,
                checkingOnWriteFirst: checkingOnWriteFirst
            ) { try rules.apply(candidates, for: credential, in: $0) }
        }
    }

    /// A push on `connection`: checked on write first, then, when a check fails there, with every
    /// lookup.
    private func push<T>(
        on connection: PostgresConnection, library: Int64, device: DeviceID, at milliseconds: UInt64,
        readingAheadFor candidates: [PushCandidate], checkingOnWriteFirst: Bool = true, _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        if checkingOnWriteFirst {
            do {
                return try push(
                    on: connection, library: library, device: device, at: milliseconds, readingAheadFor: candidates,
                    checksNewEventsOnWrite: true, body)
            } catch is DeferredCheckFailed {}
        }
        return try push(
            on: connection, library: library, device: device, at: milliseconds, readingAheadFor: candidates, checksNewEventsOnWrite: false,
            body)
    }

    /// One run of a push on `connection`: rolled back when it throws.
    private func push<T>(
        on connection: PostgresConnection, library: Int64, device: DeviceID, at milliseconds: UInt64,
        readingAheadFor candidates: [PushCandidate], checksNewEventsOnWrite: Bool, _ body: (any PushTransaction) throws -> T
    ) throws -> T {
        do {
            let transaction = try PostgresPushTransaction(
                connection: connection, library: library, device: device, at: Int64(milliseconds), readingAheadFor: candidates,
                checksNewEventsOnWrite: checksNewEventsOnWrite)
            let value = try body(transaction)
            try transaction.commit()
            return value
        } catch {
            connection.rollBackOpenTransaction()
            throw error
        }
    }

    // MARK: Pull and chain

    public func events(library: Int64, after since: Int64, limit: Int) throws -> ServerPage {
        try withConnection { connection in
            // Server sequences have no gap: the page and the event after it are the sequences up
            // to since + limit + 1. The range says so to the planner, which, with statistics from
            // before the log grew, read the library's whole log from `since` and sorted it
            // (100,000 events, 40 MB on disk) for a page of 5,000.
            let result = try connection.query(
                """
                SELECT e.server_seq, e.event_id, e.device_id, e.device_seq, e.hlc, e.change_block, e.object_id, e.type, e.schema_version,
                       e.payload, e.chain_hash, e.content_hash, e.format, CASE WHEN e.bound THEN l.library_uuid END, e.key_id, e.nonce
                FROM server_events e JOIN libraries l ON l.library_id = e.library_id
                WHERE e.library_id = $1 AND e.server_seq > $2 AND e.server_seq <= $4 ORDER BY e.server_seq LIMIT $3
                """,
                [
                    .int64(library), .int64(since), .int64(Int64(limit) + 1),
                    .int64(since.addingReportingOverflow(Int64(limit) + 1).overflow ? .max : since + Int64(limit) + 1),
                ])
            let hasMore = result.count > limit
            let events = try (0..<min(result.count, limit)).map { try Self.decodeEvent(result, $0, database: database) }
            return ServerPage(events: events, hasMore: hasMore)
        }
    }

    private static func decodeEvent(_ result: PostgresResult, _ row: Int, database: String) throws -> ServerEvent {
        let sequence = result.int64(row, 0)
        func uuid(_ column: Int) throws -> UUID {
            guard let value = result.uuid(row, column) else {
                throw PostgresError(
                    .unexpectedResult, "column \(column) of the event at server sequence \(sequence) is not a 16-byte identifier",
                    database: database)
            }
            return value
        }
        guard let format = UInt8(exactly: result.int64(row, 12)).flatMap(Event.Format.init(rawValue:)),
            let keyID = UInt32(exactly: result.int64(row, 14))
        else {
            throw PostgresError(
                .unexpectedResult, "the envelope at server sequence \(sequence) is one this server cannot read", database: database)
        }
        let event = Event(
            id: try uuid(1), library: result.isNull(row, 13) ? nil : try uuid(13), device: DeviceID(result.text(row, 2)),
            deviceSequence: result.int64(row, 3), timestamp: HLCTimestamp(rawValue: UInt64(bitPattern: result.int64(row, 4))),
            changeBlock: try uuid(5), object: try uuid(6), type: result.text(row, 7), schemaVersion: Int(result.int64(row, 8)),
            seal: keyID == 0 ? nil : Event.Seal(keyID: keyID, nonce: result.optionalBytes(row, 15) ?? []), payload: result.bytes(row, 9),
            format: format)
        return ServerEvent(
            event: event, serverSequence: sequence, chainHash: result.bytes(row, 10), contentHash: result.optionalBytes(row, 11))
    }

    public func recordPull(library: Int64, device: DeviceID, since: Int64, at milliseconds: UInt64) throws {
        try withConnection { connection in
            _ = try connection.query(
                """
                INSERT INTO devices (library_id, device_id, registered_at, last_pulled_seq) VALUES ($1, $2, $3, $4)
                ON CONFLICT (library_id, device_id) DO UPDATE SET last_pulled_seq = excluded.last_pulled_seq
                WHERE devices.last_pulled_seq <> excluded.last_pulled_seq
                """, [.int64(library), .text(device.rawValue), .int64(Int64(milliseconds)), .int64(since)])
        }
    }

    public func chainSummary(libraryID: Int64) throws -> ChainSummary {
        try withConnection { connection in
            let result = try connection.query("SELECT last_seq, last_hash FROM libraries WHERE library_id = $1", [.int64(libraryID)])
            guard result.count > 0 else { throw ServerStoreError("library \(libraryID) no longer exists") }
            return ChainSummary(count: result.int64(0, 0), headHash: result.bytes(0, 1), lastServerSequence: result.int64(0, 0))
        }
    }

    public func compactionWatermark(libraryID: Int64) throws -> CompactionWatermark {
        // One statement, so the head and the devices' positions come from one snapshot.
        let row = try withConnection { connection -> (Int64, Int64, Int64?)? in
            let result = try connection.query(
                """
                WITH counted AS (
                    SELECT last_pulled_seq FROM devices
                    WHERE library_id = $1 AND device_id IN (
                        SELECT device_id FROM tokens
                        WHERE library_id = $1 AND revoked_at IS NULL AND scope IN ('readWrite', 'readOnly')))
                SELECT last_seq, (SELECT count(*) FROM counted), (SELECT min(last_pulled_seq) FROM counted)
                FROM libraries WHERE library_id = $1
                """, [.int64(libraryID)])
            return result.count > 0 ? (result.int64(0, 0), result.int64(0, 1), result.optionalInt64(0, 2)) : nil
        }
        guard case let (last, count, lowest)? = row else { throw ServerStoreError("library \(libraryID) no longer exists") }
        return CompactionWatermark(watermark: min(lowest ?? last, last), lastServerSequence: last, deviceCount: Int(count))
    }

    // MARK: Blobs

    public func blobSize(libraryID: Int64, hash: [UInt8]) throws -> Int64? {
        try withConnection { connection in
            let result = try connection.query(
                "SELECT size FROM blobs WHERE library_id = $1 AND sha256 = $2", [.int64(libraryID), .bytes(hash)])
            return result.count > 0 ? result.int64(0, 0) : nil
        }
    }

    /// The blob's lock is a transaction-level advisory lock of its hash
    /// (`blobLock(_:)`), which ``deleteRetiredBlob(_:removing:)`` holds while it deletes: two
    /// round trips and `stored` between them.
    public func recordBlob(libraryID: Int64, hash: [UInt8], size: Int64, at milliseconds: UInt64, ifStored stored: () throws -> Bool)
        throws -> Bool?
    {
        try withConnection { connection in
            do {
                _ = try connection.pipeline([.command("BEGIN"), Self.blobLock(hash)])
                guard try stored() else {
                    connection.rollBackOpenTransaction()
                    return nil
                }
                let results = try connection.pipeline([
                    .init(
                        "INSERT INTO blobs (library_id, sha256, size, stored_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                        [.int64(libraryID), .bytes(hash), .int64(size), .int64(Int64(milliseconds))]),
                    .command("COMMIT"),
                ])
                try Self.checkCommitted(results, connection)
                return results[0].changes == 1
            } catch {
                connection.rollBackOpenTransaction()
                throw error
            }
        }
    }

    /// The first key of the blob locks (`pg_advisory_xact_lock(space, first 4 bytes of the hash)`):
    /// two hashes that share the key only wait for each other.
    static let blobLockSpace: Int32 = 0x504C_424C  // "PLBL"

    /// Takes the lock of the blob `hash` until the transaction ends.
    static func blobLock(_ hash: [UInt8]) -> PostgresConnection.PipelinedStatement {
        let key = hash.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return .init("SELECT pg_advisory_xact_lock($1, $2)", [.int32(blobLockSpace), .int32(Int32(bitPattern: key))])
    }

    /// Throws unless the last result is the `COMMIT` of a transaction that committed.
    static func checkCommitted(_ results: [PostgresResult], _ connection: PostgresConnection) throws {
        // COMMIT of a transaction that failed inside answers ROLLBACK instead of an error.
        let tag = results.last?.commandStatus ?? ""
        guard tag == "COMMIT" else {
            throw PostgresError(
                .statementFailed, "the transaction was rolled back by the server instead of committed ('\(tag)')",
                database: connection.database)
        }
    }

    public func missingBlobs(libraryID: Int64, hashes: [[UInt8]]) throws -> [[UInt8]] {
        let held = try withConnection { connection -> Set<[UInt8]> in
            let result = try connection.query(
                "SELECT sha256 FROM blobs WHERE library_id = $1 AND sha256 = ANY($2)",
                [.int64(libraryID), .array(element: .bytea, hashes.map(PostgresValue.bytes))])
            return Set((0..<result.count).map { result.bytes($0, 0) })
        }
        return hashes.filter { !held.contains($0) }
    }

    // MARK: Key store

    public func keyEntries(libraryID: Int64, after: Int64) throws -> (entries: [KeyEntry], last: Int64) {
        try withConnection { connection in
            try connection.inTransaction {
                // One snapshot for the position and the entries.
                _ = try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                let head = try connection.query("SELECT coalesce(max(seq), 0) FROM key_entries WHERE library_id = $1", [.int64(libraryID)])
                let last = head.int64(0, 0)
                let result = try connection.query(
                    "SELECT name, value FROM key_entries WHERE library_id = $1 AND seq > $2 AND seq <= $3 ORDER BY name",
                    [.int64(libraryID), .int64(after), .int64(last)])
                return ((0..<result.count).map { KeyEntry(name: result.text($0, 0), value: result.bytes($0, 1)) }, last)
            }
        }
    }

    // MARK: Snapshots

    public func recordSnapshot(_ record: SnapshotRecord, libraryID: Int64, keeping: Int) throws -> SnapshotRecording {
        try inTransaction { connection in
            // The library's row: a push storing a purge holds it until it commits, so the floor
            // read here is the one of every purge committed before the snapshot is recorded.
            let row = try connection.query(
                "SELECT snapshot_floor FROM libraries WHERE library_id = $1 FOR NO KEY UPDATE", [.int64(libraryID)])
            guard row.count > 0 else { throw ServerStoreError("library \(libraryID) no longer exists") }
            let floor = row.int64(0, 0)
            guard record.position >= floor else { return .precedesPurge(at: floor) }
            _ = try connection.query(
                """
                INSERT INTO snapshots (library_id, position, sha256, chain_hash, size, device_id, recorded_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING
                """,
                [
                    .int64(libraryID), .int64(record.position), .bytes(record.hash), .bytes(record.chainHash), .int64(record.size),
                    .text(record.device), .int64(Int64(clamping: record.recordedAt)),
                ])
            let result = try connection.query(
                """
                SELECT position, chain_hash, sha256, size, device_id, recorded_at FROM snapshots
                WHERE library_id = $1 AND position = $2 AND sha256 = $3
                """, [.int64(libraryID), .int64(record.position), .bytes(record.hash)])
            let kept = result.count > 0 ? Self.snapshot(result) : record
            let retired = try connection.query(
                """
                DELETE FROM snapshots WHERE library_id = $1 AND (position, sha256) NOT IN (
                    SELECT position, sha256 FROM snapshots WHERE library_id = $1
                    ORDER BY position DESC, recorded_at DESC, sha256 LIMIT $2)
                RETURNING sha256
                """, [.int64(libraryID), .int64(Int64(max(1, keeping)))])
            try Self.retireBlobs(
                (0..<retired.count).map { retired.bytes($0, 0) }, libraryID: libraryID, at: Int64(clamping: record.recordedAt),
                on: connection)
            return .recorded(kept)
        }
    }

    /// Takes the blobs of retired snapshots out of the library, unless a snapshot it keeps names
    /// them, and queues them for deletion from the blob store.
    static func retireBlobs(_ hashes: [[UInt8]], libraryID: Int64, at milliseconds: Int64, on connection: PostgresConnection) throws {
        let unique = Array(Set(hashes))
        guard !unique.isEmpty else { return }
        _ = try connection.query(
            """
            WITH unheld AS (
                DELETE FROM blobs b WHERE b.library_id = $1 AND b.sha256 = ANY($2)
                AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.library_id = $1 AND s.sha256 = b.sha256)
                RETURNING b.sha256)
            INSERT INTO retired_blobs (sha256, retired_at) SELECT sha256, $3 FROM unheld ON CONFLICT DO NOTHING
            """, [.int64(libraryID), .array(element: .bytea, unique.map(PostgresValue.bytes)), .int64(milliseconds)])
    }

    public func snapshots(libraryID: Int64) throws -> [SnapshotRecord] {
        try withConnection { connection in
            let result = try connection.query(
                """
                SELECT position, chain_hash, sha256, size, device_id, recorded_at FROM snapshots
                WHERE library_id = $1 ORDER BY position DESC, recorded_at DESC, sha256
                """, [.int64(libraryID)])
            return (0..<result.count).map { Self.snapshot(result, row: $0) }
        }
    }

    public func retiredBlobs(limit: Int) throws -> [[UInt8]] {
        try withConnection { connection in
            _ = try connection.query("DELETE FROM retired_blobs r WHERE EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = r.sha256)", [])
            let result = try connection.query(
                "SELECT sha256 FROM retired_blobs ORDER BY retired_at, sha256 LIMIT $1", [.int64(Int64(max(0, limit)))])
            return (0..<result.count).map { result.bytes($0, 0) }
        }
    }

    /// Holds the blob's lock (see ``recordBlob(libraryID:hash:size:at:ifStored:)``) and a
    /// connection while `remove` runs.
    public func deleteRetiredBlob(_ hash: [UInt8], removing remove: () throws -> Void) throws -> Bool {
        try withConnection { connection in
            do {
                let state = try connection.pipeline([
                    .command("BEGIN"), Self.blobLock(hash),
                    .init(
                        """
                        SELECT EXISTS (SELECT 1 FROM retired_blobs WHERE sha256 = $1), EXISTS (SELECT 1 FROM blobs WHERE sha256 = $1)
                        """, [.bytes(hash)]),
                ])[2]
                let queued = state.bool(0, 0), held = state.bool(0, 1)
                if queued && !held { try remove() }
                try Self.checkCommitted(
                    try connection.pipeline([.init("DELETE FROM retired_blobs WHERE sha256 = $1", [.bytes(hash)]), .command("COMMIT")]),
                    connection)
                return queued && !held
            } catch {
                connection.rollBackOpenTransaction()
                throw error
            }
        }
    }

    // MARK: Blob garbage collection

    /// Records the references in one statement, each once: `ON CONFLICT DO UPDATE` refuses a
    /// statement that names one row twice, as a declaration that repeats a reference would.
    public func recordBlobReferences(libraryID: Int64, _ references: [BlobReference], at milliseconds: UInt64) throws {
        var seen = Set<BlobReference>()
        let references = references.filter { seen.insert($0).inserted }
        guard !references.isEmpty else { return }
        try withConnection { connection in
            _ = try connection.query(
                """
                INSERT INTO blob_references (library_id, sha256, object_id, recorded_at)
                SELECT $1, r.sha256, r.object_id, $4 FROM unnest($2::bytea[], $3::bytea[]) AS r (sha256, object_id)
                ON CONFLICT (library_id, sha256, object_id) DO UPDATE
                SET recorded_at = greatest(blob_references.recorded_at, excluded.recorded_at)
                """,
                [
                    .int64(libraryID), .array(element: .bytea, references.map { .bytes($0.hash) }),
                    .array(element: .bytea, references.map { .bytes($0.object.bytes) }), .int64(Int64(clamping: milliseconds)),
                ])
        }
    }

    /// The blobs of a library that garbage collection takes out (see
    /// ``ServerStore/collectBlobs(library:storedBefore:dryRun:)``): $1 the library, $2 the cutoff.
    /// Their rows stay locked until the collection commits: a collection running at the same time
    /// waits for them, then finds them gone.
    static let collectableBlobsSQL = BlobCollection.collectableBlobsSQL(
        library: "$1", cutoff: "$2", locking: "FOR UPDATE OF b")

    public func collectBlobs(library: String?, storedBefore cutoff: UInt64, dryRun: Bool) throws -> [CollectedBlob] {
        try inTransaction { connection in
            // No reference is declared while the marks are read: one declared meanwhile could
            // name a blob the collection takes out after its client was told the library holds it.
            _ = try connection.query("LOCK TABLE blob_references IN SHARE ROW EXCLUSIVE MODE", [])
            var libraries: [(id: Int64, name: String)] = []
            if let library {
                libraries = [(try existingLibraryID(connection, library), library)]
            } else {
                let rows = try connection.query("SELECT library_id, name FROM libraries ORDER BY name COLLATE \"C\"", [])
                libraries = (0..<rows.count).map { (rows.int64($0, 0), rows.text($0, 1)) }
            }
            var collected: [CollectedBlob] = []
            for (id, name) in libraries {
                let rows = try connection.query(Self.collectableBlobsSQL, [.int64(id), .int64(Int64(clamping: cutoff))])
                let blobs = (0..<rows.count).map { CollectedBlob(library: name, hash: rows.bytes($0, 0), size: rows.int64($0, 1)) }
                collected += blobs
                guard !dryRun, !blobs.isEmpty else { continue }
                let hashes = PostgresValue.array(element: .bytea, blobs.map { .bytes($0.hash) })
                _ = try connection.query("DELETE FROM blobs WHERE library_id = $1 AND sha256 = ANY($2)", [.int64(id), hashes])
                _ = try connection.query("DELETE FROM blob_references WHERE library_id = $1 AND sha256 = ANY($2)", [.int64(id), hashes])
                _ = try connection.query(
                    "INSERT INTO retired_blobs (sha256, retired_at) SELECT unnest($1::bytea[]), $2 ON CONFLICT DO NOTHING",
                    [hashes, .int64(Int64(clamping: cutoff))])
            }
            return collected
        }
    }

    public func latestSnapshot(libraryID: Int64) throws -> SnapshotRecord? {
        try withConnection { connection in
            let result = try connection.query(
                """
                SELECT position, chain_hash, sha256, size, device_id, recorded_at FROM snapshots
                WHERE library_id = $1 ORDER BY position DESC, recorded_at DESC, sha256 LIMIT 1
                """, [.int64(libraryID)])
            return result.count > 0 ? Self.snapshot(result) : nil
        }
    }

    private static func snapshot(_ result: PostgresResult, row: Int = 0) -> SnapshotRecord {
        SnapshotRecord(
            position: result.int64(row, 0), chainHash: result.bytes(row, 1), hash: result.bytes(row, 2), size: result.int64(row, 3),
            device: result.text(row, 4), recordedAt: UInt64(clamping: result.int64(row, 5)))
    }

    public func keyEntry(libraryID: Int64, name: String) throws -> [UInt8]? {
        try withConnection { connection in
            let result = try connection.query(
                "SELECT value FROM key_entries WHERE library_id = $1 AND name = $2", [.int64(libraryID), .text(name)])
            return result.count > 0 ? result.bytes(0, 0) : nil
        }
    }

    public func applyKeyChangesReportingPositions(libraryID: Int64, _ changes: [KeyChange], by device: DeviceID, at milliseconds: UInt64)
        throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64)
    {
        try withConnection { connection in
            try connection.inTransaction {
                // Writers of one library's key store take turns (the library's row), so positions
                // commit in order and a reader never misses a write.
                _ = try connection.query("SELECT 1 FROM libraries WHERE library_id = $1 FOR UPDATE", [.int64(libraryID)])
                return try Self.applyKeyChanges(changes, libraryID: libraryID, by: device, at: Int64(milliseconds), on: connection)
            }
        }
    }

    /// ``applyKeyChangesReportingPositions(libraryID:_:by:at:)`` in `connection`'s open
    /// transaction, which holds the library's row against other writers of its key store.
    static func applyKeyChanges(
        _ changes: [KeyChange], libraryID: Int64, by device: DeviceID, at milliseconds: Int64, on connection: PostgresConnection
    )
        throws -> (statuses: [KeyChangeStatus], from: Int64, through: Int64)
    {
        let current = try connection.query(
            "SELECT coalesce(max(seq), 0) FROM key_entries WHERE library_id = $1", [.int64(libraryID)])
        let from = current.int64(0, 0)
        var seq = from
        let statuses = try changes.map { change -> KeyChangeStatus in
            guard let value = change.value else {
                _ = try connection.query(
                    "DELETE FROM key_entries WHERE library_id = $1 AND name = $2", [.int64(libraryID), .text(change.name)])
                return .deleted
            }
            if change.createOnly {
                let inserted = try connection.query(
                    """
                    INSERT INTO key_entries (library_id, name, value, written_by, written_at, seq) VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (library_id, name) DO NOTHING
                    """,
                    [
                        .int64(libraryID), .text(change.name), .bytes(value), .text(device.rawValue), .int64(milliseconds),
                        .int64(seq + 1),
                    ])
                if inserted.changes == 1 {
                    seq += 1
                    return .stored
                }
                let held = try connection.query(
                    "SELECT value FROM key_entries WHERE library_id = $1 AND name = $2", [.int64(libraryID), .text(change.name)])
                return held.count > 0 && held.bytes(0, 0) == value ? .stored : .conflict
            }
            seq += 1
            _ = try connection.query(
                """
                INSERT INTO key_entries (library_id, name, value, written_by, written_at, seq) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (library_id, name) DO UPDATE SET value = excluded.value, written_by = excluded.written_by,
                    written_at = excluded.written_at, seq = excluded.seq
                """,
                [
                    .int64(libraryID), .text(change.name), .bytes(value), .text(device.rawValue), .int64(milliseconds),
                    .int64(seq),
                ])
            return .stored
        }
        return (statuses, from, seq)
    }
}
