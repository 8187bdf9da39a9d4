import CSQLite
import Foundation
import LedgerCore

/// One SQLite connection. Owns the `sqlite3` handle and closes it in `deinit`.
///
/// A `Database` is not thread-safe: reach it through a ``DatabaseQueue``, which serializes
/// access, or keep it confined to one thread. The connection runs in WAL mode with foreign keys
/// on, a busy timeout, and a cache of prepared statements.
public final class Database {
    let handle: OpaquePointer
    /// The path of the database file.
    public let path: String
    private var statementCache: [String: Statement] = [:]
    private var preparedCache: [ObjectIdentifier: Statement] = [:]
    private var savepointDepth = 0
    // Set by init, never changed after; thread-safe itself, so it may be reached from any thread.
    private var checkpointer: BackgroundCheckpointer?

    /// How a connection is opened.
    public struct Options: Sendable {
        /// How long to wait for another connection's lock before failing with a busy error.
        public var busyTimeout: Duration = .seconds(5)
        /// Open read-only (no schema changes, no writes).
        public var readOnly = false
        /// `PRAGMA synchronous`: `NORMAL` (durable across process crashes; the default in WAL
        /// mode) or `FULL` (also across power loss, at the cost of one fsync per commit).
        public var synchronous: Synchronous = .normal
        /// The page cache per connection, in KiB: a fixed bound, so memory does not grow with
        /// the database.
        public var cacheSizeKiB = 16 * 1024
        /// How much of the file reads may map into memory, in bytes. Off by default: mapped pages
        /// count as resident memory and grow with the file.
        public var memoryMapBytes = 0
        /// Checkpoint the write-ahead log on a thread and connection of their own
        /// (``BackgroundCheckpointer``) instead of inside the commit that fills it: commits then
        /// never copy pages back or wait for the disk to do so. For the one writing connection
        /// of a file; ignored when read-only.
        public var checkpointsInBackground = false

        /// SQLite's durability level for commits.
        public enum Synchronous: String, Sendable { case normal = "NORMAL", full = "FULL" }

        /// The default options.
        public init() {}
    }

    /// Opens (creating if needed) the database at `path`.
    ///
    /// - Throws: ``DatabaseError`` when the file cannot be opened, is not a database, is
    ///   corrupt, or stays locked beyond the busy timeout.
    public init(path: String, options: Options = Options()) throws {
        var connection: OpaquePointer?
        let flags =
            (options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open database"
            sqlite3_close_v2(connection)
            throw DatabaseError(extendedCode: code, message: message, path: path)
        }
        self.handle = connection
        self.path = path
        sqlite3_extended_result_codes(connection, 1)
        let milliseconds =
            options.busyTimeout.components.seconds * 1000
            + options.busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(connection, Int32(clamping: milliseconds))
        // Reading the schema fails at once for a file that is not a database or is damaged.
        try execute("SELECT count(*) FROM sqlite_schema")
        if !options.readOnly {
            try execute("PRAGMA journal_mode = WAL")
        }
        try execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
        try execute("PRAGMA foreign_keys = ON")
        // A bounded page cache keeps hot B-tree pages out of read(2) calls.
        try execute("PRAGMA cache_size = -\(options.cacheSizeKiB)")
        try execute("PRAGMA mmap_size = \(options.memoryMapBytes)")
        // Statement journals (kept while a statement that writes many rows runs, to undo it
        // alone on failure) and temporary tables stay in memory instead of temporary files:
        // otherwise every page a multi-row upsert touches is first copied to a file.
        try execute("PRAGMA temp_store = MEMORY")
        _ = csqlite_db_config_int(connection, SQLITE_DBCONFIG_DEFENSIVE, 1)
        if options.checkpointsInBackground && !options.readOnly {
            let checkpointer = BackgroundCheckpointer(path: path, busyTimeout: options.busyTimeout)
            self.checkpointer = checkpointer
            // Replaces SQLite's automatic checkpoint; the connection keeps the checkpointer alive.
            sqlite3_wal_hook(connection, backgroundCheckpointHook, Unmanaged.passUnretained(checkpointer).toOpaque())
        }
    }

    /// Waits until the background checkpointer (when the connection has one) has no checkpoint
    /// requested or running, or `timeout` passes; returns whether it became idle.
    @discardableResult
    public func waitForBackgroundCheckpoints(timeout: Duration = .seconds(10)) -> Bool {
        checkpointer?.waitUntilIdle(timeout: timeout) ?? true
    }

    /// How many checkpoints the background checkpointer has run (0 without one).
    public var backgroundCheckpointCount: Int { checkpointer?.completedCount ?? 0 }

    deinit {
        if let checkpointer {
            sqlite3_wal_hook(handle, nil, nil)
            checkpointer.stop()
        }
        statementCache.removeAll()
        preparedCache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ code: Int32, sql: String?) -> DatabaseError {
        DatabaseError(
            extendedCode: sqlite3_extended_errcode(handle) == 0 ? code : sqlite3_extended_errcode(handle),
            message: String(cString: sqlite3_errmsg(handle)),
            sql: sql,
            path: path
        )
    }

    // MARK: Statements

    /// A prepared statement for `sql`, taken from the connection's cache (reset, no bindings).
    public func cachedStatement(_ sql: String) throws -> Statement {
        if let statement = statementCache[sql] {
            statement.reset()
            return statement
        }
        let statement = try Statement(database: self, sql: sql)
        statementCache[sql] = statement
        return statement
    }

    /// The prepared statement for `sql`, found by the identity of `sql` (no hashing of its text:
    /// for statements run on hot paths).
    ///
    /// - Parameter clearingBindings: false when the caller binds every parameter anew (for
    ///   statements with thousands of parameters, clearing them costs as much as binding).
    public func cachedStatement(_ sql: PreparedSQL, clearingBindings: Bool = true) throws -> Statement {
        let key = ObjectIdentifier(sql)
        if let statement = preparedCache[key] {
            if clearingBindings { statement.reset() } else { statement.resetKeepingBindings() }
            return statement
        }
        let statement = try Statement(database: self, sql: sql.text)
        preparedCache[key] = statement
        return statement
    }

    /// Runs one statement of a hot path with bound values.
    public func execute(_ sql: PreparedSQL, _ values: [any SQLBindable]) throws {
        try cachedStatement(sql).execute(values)
    }

    /// Runs one or more SQL statements without parameters (schema scripts, pragmas).
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw DatabaseError(extendedCode: sqlite3_extended_errcode(handle), message: text, sql: sql, path: path)
        }
    }

    /// Runs one statement with bound values.
    public func execute(_ sql: String, _ values: [any SQLBindable]) throws {
        try cachedStatement(sql).execute(values)
    }

    /// Runs a query and calls `row` for every result row, with the statement positioned on it.
    public func forEachRow(_ sql: String, _ values: [any SQLBindable] = [], _ row: (Statement) throws -> Void) throws {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() { try row(statement) }
    }

    /// Runs a query and maps every row.
    public func rows<T>(_ sql: String, _ values: [any SQLBindable] = [], _ map: (Statement) throws -> T) throws -> [T] {
        var result: [T] = []
        try forEachRow(sql, values) { result.append(try map($0)) }
        return result
    }

    /// Runs a query and maps its first row, or returns nil when there is none.
    public func firstRow<T>(_ sql: String, _ values: [any SQLBindable] = [], _ map: (Statement) throws -> T) throws -> T? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        return try statement.step() ? map(statement) : nil
    }

    /// The number of rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last inserted row.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether the connection was opened read-only.
    public var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// Whether a transaction is open.
    public var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    // MARK: Transactions

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// Inside an open transaction the call nests as a savepoint, so an inner failure rolls back
    /// only the inner work (when the caller catches it).
    public func inTransaction<T>(_ body: () throws -> T) throws -> T {
        if isInsideTransaction {
            return try inSavepoint(body)
        }
        try cachedStatement("BEGIN IMMEDIATE").execute()
        do {
            let result = try body()
            try cachedStatement("COMMIT").execute()
            return result
        } catch {
            if isInsideTransaction { try? cachedStatement("ROLLBACK").execute() }
            throw error
        }
    }

    private func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "ledger_savepoint_\(savepointDepth)"
        try execute("SAVEPOINT \(name)")
        do {
            let result = try body()
            try execute("RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            if isInsideTransaction {
                try? execute("ROLLBACK TO SAVEPOINT \(name)")
                try? execute("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
    }

    /// Runs `PRAGMA integrity_check` and returns SQLite's findings (empty when the file is sound).
    public func integrityProblems() throws -> [String] {
        let findings = try rows("PRAGMA integrity_check") { $0.text(0) }
        return findings == ["ok"] ? [] : findings
    }
}

/// SQL text that a connection prepares once and finds again by identity. Declare it once
/// (`static let insert = PreparedSQL("INSERT …")`) for statements on hot paths.
public final class PreparedSQL: Sendable {
    /// The SQL text.
    public let text: String

    /// Wraps SQL text.
    public init(_ text: String) { self.text = text }
}
