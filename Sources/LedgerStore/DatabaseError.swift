import CSQLite

/// A failure reported by SQLite, with the result code, SQLite's message and the SQL that failed.
///
/// Bound values are never part of the description, so secrets and user data stay out of logs.
/// Match the kind of failure with the `is…` properties or with ``code``:
///
/// ```swift
/// do { try db.execute("INSERT …") } catch let error as DatabaseError where error.isConstraintViolation { … }
/// ```
public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended SQLite result code, for example 2067 (`SQLITE_CONSTRAINT_UNIQUE`).
    public let extendedCode: Int32
    /// SQLite's own message for the failure.
    public let message: String
    /// The SQL statement that failed, when there was one.
    public let sql: String?
    /// The database file, when known.
    public let path: String?

    /// The primary result code, for example 19 (`SQLITE_CONSTRAINT`).
    public var code: Int32 { extendedCode & 0xFF }

    /// Creates an error from an SQLite result code.
    public init(extendedCode: Int32, message: String, sql: String? = nil, path: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.path = path
    }

    /// The database was locked by another connection for longer than the busy timeout.
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// The file is damaged.
    public var isCorrupt: Bool { code == SQLITE_CORRUPT }
    /// The file is not an SQLite database at all.
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }
    /// A constraint (UNIQUE, CHECK, NOT NULL, FOREIGN KEY or a trigger's RAISE) refused the change.
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
    /// The file could not be opened, read or written.
    public var isIOError: Bool { code == SQLITE_IOERR || code == SQLITE_CANTOPEN || code == SQLITE_READONLY }

    /// What the user can do about the failure.
    public var hint: String? {
        if isBusy { return "another process holds the database; close it or retry later" }
        if isCorrupt { return "the file is damaged; restore it from a backup or rebuild it from a synced copy" }
        if isNotADatabase { return "the path does not name a PhotoLedger database; check the path" }
        if isIOError { return "check that the file exists, is readable and writable, and that the disk has space" }
        return nil
    }

    public var description: String {
        var text = "SQLite error \(extendedCode): \(message)"
        if let path { text += " (database \(path))" }
        if let sql { text += " - while executing `\(sql)`" }
        if let hint { text += "; \(hint)" }
        return text
    }
}

/// A misuse of the store that SQLite itself would not report.
public struct StoreUsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was attempted.
    public let message: String

    /// Creates a usage error.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
