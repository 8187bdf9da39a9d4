import CSQLite
import Foundation

/// A prepared SQL statement. Owns its `sqlite3_stmt` and finalizes it in `deinit`.
///
/// Statements belong to one ``Database`` and are used only inside its access closures.
public final class Statement {
    let handle: OpaquePointer
    unowned let database: Database
    /// The SQL text of the statement.
    public let sql: String

    init(database: Database, sql: String) throws {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw database.error(code, sql: sql)
        }
        self.handle = statement
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and clears its bindings, ready to run again.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets the statement, keeping its bindings (each is released when bound anew).
    public func resetKeepingBindings() {
        sqlite3_reset(handle)
    }

    // MARK: Binding (1-based parameter indexes, as in SQLite)

    /// Binds a value to the parameter at `index` (1-based).
    public func bind(_ value: SQLValue, at index: Int32) throws {
        switch value {
        case .null: try check(sqlite3_bind_null(handle, index))
        case .integer(let value): try bind(value, at: index)
        case .real(let value): try check(sqlite3_bind_double(handle, index, value))
        case .text(let value): try bind(value, at: index)
        case .blob(let value): try bind(value, at: index)
        }
    }

    /// Binds an integer.
    public func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Binds a text value (copied by SQLite).
    public func bind(_ value: String, at index: Int32) throws {
        var value = value
        try value.withUTF8 { utf8 in
            // Bound with its length (no strlen); an empty buffer may have no address, and SQLite
            // binds a NULL pointer as NULL, so '' points at a static empty string instead.
            let start = UnsafeRawPointer(utf8.baseAddress ?? Self.emptyText.utf8Start).assumingMemoryBound(to: CChar.self)
            try check(sqlite3_bind_text(handle, index, start, Int32(utf8.count), csqlite_transient()))
        }
    }

    private static let emptyText: StaticString = ""

    /// Binds bytes as a BLOB (copied by SQLite). An empty array binds an empty BLOB, not NULL.
    public func bind(_ value: [UInt8], at index: Int32) throws {
        try value.withUnsafeBytes { try bind(bytes: $0, at: index) }
    }

    /// Binds raw bytes as a BLOB (copied by SQLite).
    public func bind(bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        if let base = bytes.baseAddress, bytes.count > 0 {
            try check(sqlite3_bind_blob(handle, index, base, Int32(bytes.count), csqlite_transient()))
        } else {
            try check(sqlite3_bind_zeroblob(handle, index, 0))
        }
    }

    /// Binds `values` to parameters 1…n.
    public func bind(_ values: [any SQLBindable]) throws {
        for (offset, value) in values.enumerated() {
            try bind(value.sqlValue, at: Int32(offset + 1))
        }
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw database.error(code, sql: sql) }
    }

    // MARK: Stepping

    /// Runs the statement one step. Returns `true` when a row is available, `false` when done.
    @discardableResult
    public func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw database.error(code, sql: sql)
        }
    }

    /// Runs the statement to completion with `values` bound, then resets it.
    public func execute(_ values: [any SQLBindable] = []) throws {
        defer { reset() }
        try bind(values)
        while try step() {}
    }

    // MARK: Columns (0-based, as in SQLite)

    /// Whether the column of the current row is NULL.
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    /// The column as an integer (0 when NULL).
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// The column as an integer, or nil when NULL.
    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    /// The column as a double.
    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    /// The column as text (empty when NULL).
    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column as text, or nil when NULL.
    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    /// The column as bytes (empty when NULL).
    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Calls `body` with the column's bytes without copying them; the buffer is valid only inside `body`.
    public func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Whether the column's bytes equal `bytes` (compared with `memcmp`, without copying them). A
    /// NULL column has no bytes: it equals an empty array.
    public func blob(_ column: Int32, equals bytes: [UInt8]) -> Bool {
        withBlob(column) { stored in
            guard stored.count == bytes.count else { return false }
            guard let base = stored.baseAddress else { return true }
            return bytes.withUnsafeBytes { memcmp(base, $0.baseAddress!, bytes.count) == 0 }
        }
    }

    /// The column as a value of any type.
    public func value(_ column: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(int64(column))
        case SQLITE_FLOAT: return .real(double(column))
        case SQLITE_TEXT: return .text(text(column))
        case SQLITE_BLOB: return .blob(blob(column))
        default: return .null
        }
    }

    /// The number of columns in a result row.
    public var columnCount: Int32 { sqlite3_column_count(handle) }
}
