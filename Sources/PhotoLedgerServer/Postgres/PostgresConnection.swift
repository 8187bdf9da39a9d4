import CPostgres
import Foundation
import LedgerCore
import LedgerStore

/// One libpq connection, freed in `deinit`. Statements run with bound parameters in binary
/// format, prepared once per connection and reused; results come back in binary format.
///
/// A connection is used by one thread at a time: ``PostgresPool`` lends it to one borrower.
// Safe to share: the pool hands a connection to one borrower at a time, under its lock, and takes
// it back only after the borrower's body has returned; libpq allows a connection to move between
// threads when it is never used by two at once.
final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    /// The database, as `postgresql://user@host:port/name`, for messages.
    let database: String
    /// Prepared statement names by SQL text and parameter types.
    private var prepared: [PreparedKey: String] = [:]

    private struct PreparedKey: Hashable {
        let sql: String
        let types: [UInt32]
    }

    /// Connects with the libpq connection string or URL `conninfo`, then applies `settings`
    /// (`SET name = value`, for example the statement timeout).
    init(conninfo: String, database: String, connectTimeoutSeconds: Int, settings: [(name: String, value: String)]) throws {
        self.database = database
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = ["\(connectTimeoutSeconds)", "photoledger-server", conninfo]
        let connection = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let connection else {
            throw PostgresError(.unreachable, "libpq could not allocate a connection (out of memory?)", database: database)
        }
        handle = connection
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(
                .unreachable,
                "cannot connect: \(lastMessage); check that PostgreSQL runs and accepts this user, and that the URL names the right host, "
                    + "port and database",
                database: database)
        }
        for setting in settings {
            // Settings are the store's own constants, never input: set_config binds the value.
            _ = try query("SELECT set_config($1, $2, false)", [.text(setting.name), .text(setting.value)])
        }
    }

    deinit {
        PQfinish(handle)
    }

    /// The server's version number (`150004` for 15.4).
    var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Whether the connection can be lent again: open, outside any transaction, and not left in
    /// the middle of a pipeline.
    var isReusable: Bool { !broken && PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// Set when a pipeline could not be sent or read whole: what the server will answer next is
    /// unknown, so the connection is closed rather than lent again.
    private var broken = false

    // MARK: Notifications

    /// The connection's socket, to wait on for notifications.
    var socket: Int32 { PQsocket(handle) }

    /// Reads what has arrived on the socket and returns the payloads of the notifications
    /// received (`NOTIFY channel, 'payload'` of channels this session listens on), oldest first.
    ///
    /// - Throws: ``PostgresError`` when the connection is lost.
    func receivedNotifications() throws -> [String] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(.unreachable, "the notification connection was lost: \(lastMessage)", database: database)
        }
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(notification.pointee.extra.map { String(cString: $0) } ?? "")
            PQfreemem(notification)
        }
        return payloads
    }

    private var lastMessage: String {
        String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Statements

    /// Runs SQL without parameters through the simple query protocol: several statements may be
    /// given (a migration). Returns the command tag of the last one (`COMMIT`, `INSERT 0 1`, …).
    @discardableResult
    func execute(_ sql: String) throws -> String {
        let result = PostgresResult(PQexec(handle, sql))
        try check(result, sql: sql)
        return result.commandStatus
    }

    /// Runs one statement with `parameters` bound as `$1`, `$2`, …, prepared on first use; with
    /// `planned: .eachTime`, planned for each execution instead (see ``Planning``).
    func query(_ sql: String, _ parameters: [PostgresValue], planned planning: Planning = .once) throws -> PostgresResult {
        let name = planning == .once ? try statementName(sql, parameters) : nil
        var storage: [UInt8] = [0]  // never empty: every value points into it
        var offsets: [Int] = []
        var lengths: [Int32] = []
        for parameter in parameters {
            let start = storage.count
            let present = parameter.encode(into: &storage)
            offsets.append(present ? start : -1)
            lengths.append(Int32(storage.count - start))
        }
        let formats = [Int32](repeating: 1, count: parameters.count)
        let raw = storage.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { $0 < 0 ? nil : (base + $0).assumingMemoryBound(to: CChar.self) }
            guard let name else {
                let types = parameters.map(\.type.rawValue)
                return PQexecParams(handle, sql, Int32(parameters.count), types, pointers, lengths, formats, 1)
            }
            return PQexecPrepared(handle, name, Int32(parameters.count), pointers, lengths, formats, 1)
        }
        let result = PostgresResult(raw)
        try check(result, sql: sql)
        return result
    }

    /// When a statement is planned.
    enum Planning {
        /// Prepared on first use; PostgreSQL may settle on a generic plan after a few runs.
        case once
        /// Planned for each execution with its parameters and the tables as they are then: for
        /// lookups whose good plan depends on the size of a log that starts empty (a generic plan
        /// made while a library's log was nearly empty, when every index costs the same, looked
        /// up a push's event identifiers by scanning the library's whole log through the object
        /// index, and pushes slowed as the log grew).
        case eachTime
    }

    /// One statement of a ``pipeline(_:)``.
    struct PipelinedStatement {
        let sql: String
        let parameters: [PostgresValue]
        let planning: Planning

        init(_ sql: String, _ parameters: [PostgresValue] = [], planned planning: Planning = .once) {
            self.sql = sql
            self.parameters = parameters
            self.planning = planning
        }

        /// `BEGIN`, `COMMIT` and other statements without a plan: sent unnamed.
        static func command(_ sql: String) -> PipelinedStatement { PipelinedStatement(sql, planned: .eachTime) }
    }

    /// Runs `statements` one after the other, as ``query(_:_:planned:)`` would, but sends them all
    /// at once and reads their results after (libpq's pipeline mode): one round trip to the
    /// server instead of one per statement. Each statement still runs alone, in order, with a
    /// snapshot of its own (`READ COMMITTED`), so one that follows a lock sees what the lock's
    /// previous holder committed.
    ///
    /// When a statement fails, the ones after it do not run, and the error of the failed one is
    /// thrown; a transaction the pipeline began stays open (and failed): roll it back.
    func pipeline(_ statements: [PipelinedStatement]) throws -> [PostgresResult] {
        // Statements prepared once per connection are prepared first, outside the pipeline.
        let names = try statements.map { $0.planning == .once ? try statementName($0.sql, $0.parameters) : nil }
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(.unreachable, "cannot start a pipeline: \(lastMessage)", database: database)
        }
        for (statement, name) in zip(statements, names) {
            guard send(statement, name: name) else {
                broken = true
                throw PostgresError(
                    .unreachable, "cannot send a statement to PostgreSQL: \(lastMessage); check that the server runs, then retry",
                    database: database, sql: statement.sql)
            }
        }
        guard PQpipelineSync(handle) == 1 else {
            broken = true
            throw PostgresError(
                .unreachable, "cannot send statements to PostgreSQL: \(lastMessage); check that the server runs, then retry",
                database: database)
        }
        var results: [PostgresResult] = []
        var failure: PostgresError?
        for statement in statements {
            // A statement's results end with a null result; an aborted one answers PIPELINE_ABORTED.
            var first: PostgresResult?
            while let raw = PQgetResult(handle) {
                let result = PostgresResult(raw)
                if first == nil { first = result }
            }
            guard let result = first else {
                broken = true
                throw PostgresError(
                    .unreachable, "the connection to PostgreSQL broke: \(lastMessage); check that the server runs, then retry",
                    database: database, sql: statement.sql)
            }
            switch result.status {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_PIPELINE_ABORTED:
                break
            default:
                if failure == nil { failure = self.failure(result, sql: statement.sql) }
            }
            results.append(result)
        }
        let sync = PostgresResult(PQgetResult(handle))
        guard sync.status == PGRES_PIPELINE_SYNC, PQexitPipelineMode(handle) == 1 else {
            broken = true
            throw failure
                ?? PostgresError(
                    .unreachable, "the connection to PostgreSQL broke: \(lastMessage); check that the server runs, then retry",
                    database: database)
        }
        if let failure { throw failure }
        return results
    }

    /// Queues one statement of a pipeline; false when libpq could not.
    private func send(_ statement: PipelinedStatement, name: String?) -> Bool {
        var storage: [UInt8] = [0]  // never empty: every value points into it
        var offsets: [Int] = []
        var lengths: [Int32] = []
        for parameter in statement.parameters {
            let start = storage.count
            let present = parameter.encode(into: &storage)
            offsets.append(present ? start : -1)
            lengths.append(Int32(storage.count - start))
        }
        let count = Int32(statement.parameters.count)
        let formats = [Int32](repeating: 1, count: statement.parameters.count)
        // libpq copies the parameters into its output buffer before the call returns.
        return storage.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { $0 < 0 ? nil : (base + $0).assumingMemoryBound(to: CChar.self) }
            guard let name else {
                let types = statement.parameters.map(\.type.rawValue)
                return PQsendQueryParams(handle, statement.sql, count, types, pointers, lengths, formats, 1) == 1
            }
            return PQsendQueryPrepared(handle, name, count, pointers, lengths, formats, 1) == 1
        }
    }

    /// Rolls back the transaction the connection is in, if any (after a failure); a connection
    /// that cannot is left to be closed.
    func rollBackOpenTransaction() {
        guard !broken, PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) != PQTRANS_IDLE else { return }
        _ = try? execute("ROLLBACK")
    }

    private func statementName(_ sql: String, _ parameters: [PostgresValue]) throws -> String {
        let types = parameters.map(\.type.rawValue)
        let key = PreparedKey(sql: sql, types: types)
        if let name = prepared[key] { return name }
        let name = "pl\(prepared.count + 1)"
        let result = PostgresResult(PQprepare(handle, name, sql, Int32(types.count), types))
        try check(result, sql: sql)
        prepared[key] = name
        return name
    }

    private func check(_ result: PostgresResult, sql: String) throws {
        switch result.status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            throw failure(result, sql: sql)
        }
    }

    private func failure(_ result: PostgresResult, sql: String) -> PostgresError {
        let state = result.errorField(plpq_diag_sqlstate)
        var message = result.errorField(plpq_diag_message_primary) ?? lastMessage
        if let detail = result.errorField(plpq_diag_message_detail) { message += " (\(detail))" }
        if PQstatus(handle) != CONNECTION_OK || state?.hasPrefix("08") == true || state == "57P01" || state == "57P02" || state == "57P03" {
            return PostgresError(
                .unreachable, "the connection to PostgreSQL broke: \(message); check that the server runs, then retry", database: database,
                sqlState: state, sql: sql)
        }
        if state == "57014" {
            return PostgresError(
                .statementTimeout, "the statement ran longer than the statement timeout and was cancelled; retry, or raise the timeout",
                database: database, sqlState: state, sql: sql)
        }
        return PostgresError(.statementFailed, "the statement failed: \(message)", database: database, sqlState: state, sql: sql)
    }

    // MARK: Transactions

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func inTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        let value: T
        do {
            value = try body()
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
        // COMMIT of a transaction that failed inside answers ROLLBACK instead of an error.
        let tag = try execute("COMMIT")
        guard tag == "COMMIT" else {
            throw PostgresError(
                .statementFailed, "the transaction was rolled back by the server instead of committed ('\(tag)')", database: database)
        }
        return value
    }
}

/// One libpq result, freed in `deinit`, read in binary format.
final class PostgresResult {
    private let handle: OpaquePointer?

    init(_ handle: OpaquePointer?) { self.handle = handle }

    deinit { PQclear(handle) }

    var status: ExecStatusType { handle.map(PQresultStatus) ?? PGRES_FATAL_ERROR }

    var commandStatus: String { handle.map { String(cString: PQcmdStatus($0)) } ?? "" }

    func errorField(_ field: Int32) -> String? {
        guard let handle, let value = PQresultErrorField(handle, field) else { return nil }
        return String(cString: value)
    }

    /// The number of rows.
    var count: Int { handle.map { Int(PQntuples($0)) } ?? 0 }

    /// The number of rows a command changed (`INSERT`, `UPDATE`).
    var changes: Int { handle.flatMap { Int(String(cString: PQcmdTuples($0))) } ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    private func value(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let start = PQgetvalue(handle, Int32(row), Int32(column)) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: start, count: length)
    }

    /// An integer column (`smallint`, `integer` or `bigint`); 0 for NULL.
    func int64(_ row: Int, _ column: Int) -> Int64 {
        let bytes = value(row, column)
        var result: Int64 = 0
        for byte in bytes { result = result << 8 | Int64(byte) }
        switch bytes.count {
        case 2: return Int64(Int16(truncatingIfNeeded: result))
        case 4: return Int64(Int32(truncatingIfNeeded: result))
        default: return result
        }
    }

    /// An integer column, or nil for NULL.
    func optionalInt64(_ row: Int, _ column: Int) -> Int64? { isNull(row, column) ? nil : int64(row, column) }

    /// A `boolean` column.
    func bool(_ row: Int, _ column: Int) -> Bool { value(row, column).first == 1 }

    /// A `text` column.
    func text(_ row: Int, _ column: Int) -> String { String(decoding: value(row, column), as: UTF8.self) }

    /// A `text` column, or nil for NULL.
    func optionalText(_ row: Int, _ column: Int) -> String? { isNull(row, column) ? nil : text(row, column) }

    /// A `bytea` column.
    func bytes(_ row: Int, _ column: Int) -> [UInt8] { Array(value(row, column)) }

    /// A `bytea` column, or nil for NULL.
    func optionalBytes(_ row: Int, _ column: Int) -> [UInt8]? { isNull(row, column) ? nil : bytes(row, column) }

    /// A 16-byte `bytea` column as an identifier, or nil when it is not 16 bytes.
    func uuid(_ row: Int, _ column: Int) -> UUID? { UUID(bytes: value(row, column)) }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

// MARK: Migrations

extension PostgresConnection: MigrationTarget {
    /// The database, without its password.
    var migrationLocation: String { database }

    func recordedMigrations() throws -> [RecordedMigration] {
        try execute(
            """
            CREATE TABLE IF NOT EXISTS ledger_migrations (
                id         bigint PRIMARY KEY,
                name       text   NOT NULL,
                checksum   bytea  NOT NULL,
                applied_at bigint NOT NULL
            )
            """)
        let result = try query("SELECT id, name, checksum FROM ledger_migrations ORDER BY id", [])
        return (0..<result.count).map {
            RecordedMigration(id: Int(result.int64($0, 0)), name: result.text($0, 1), checksum: result.bytes($0, 2))
        }
    }

    func apply(_ migration: Migration, at milliseconds: Int64) throws {
        try inTransaction {
            try execute(migration.sql)
            _ = try query(
                "INSERT INTO ledger_migrations (id, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
                [.int64(Int64(migration.id)), .text(migration.name), .bytes(migration.checksum), .int64(milliseconds)])
        }
    }

    /// Holds a session advisory lock while `body` runs, so that server processes starting
    /// together migrate one after the other.
    func withMigrationLock<T>(_ body: () throws -> T) throws -> T {
        let key: Int64 = 0x5068_6f74_6f4c_6564  // "PhotoLed"
        _ = try query("SELECT pg_advisory_lock($1)", [.int64(key)])
        defer { _ = try? query("SELECT pg_advisory_unlock($1)", [.int64(key)]) }
        return try body()
    }
}
