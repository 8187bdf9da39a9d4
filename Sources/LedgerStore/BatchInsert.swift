import CSQLite
import Foundation
import LedgerCore

/// Inserts many rows into one table with few statements (or runs any statement over a list of
/// rows of values: the head and tail may put the `VALUES` list inside a subquery): a prepared
/// statement of ``rowsPerStatement`` rows of placeholders for full groups, and a one-row
/// statement for the remainder. Binding and stepping once per group instead of once per row saves SQLite's
/// per-statement work (starting, halting, resetting), which dominates narrow inserts.
///
/// Text and blob values are copied once into a buffer that lives until the statement has run
/// and been reset, and bound from there without SQLite copying them again (`SQLITE_STATIC`).
///
/// ```swift
/// static let insert = BatchInsert("INSERT INTO t (a, b)", columns: 2, tail: "ON CONFLICT DO NOTHING")
/// let inserted = try Self.insert.run(count: rows.count, in: db) { row, values in
///     values.append(rows[row].a)
///     values.append(blob: rows[row].b)
/// }
/// ```
public struct BatchInsert: Sendable {
    /// Values bound per row.
    public let columns: Int
    /// Rows inserted by one statement of the grouped form.
    public let rowsPerStatement: Int
    private let grouped: PreparedSQL
    private let single: PreparedSQL

    /// A batch insert of `head` (`INSERT INTO table (columns…)`) with `columns` placeholders per
    /// row, followed by `tail` (an `ON CONFLICT` clause, or nothing).
    public init(_ head: String, columns: Int, tail: String = "", rowsPerStatement: Int = 100) {
        precondition(columns > 0 && rowsPerStatement > 0 && columns * rowsPerStatement <= 32_766, "too many parameters")
        self.columns = columns
        self.rowsPerStatement = rowsPerStatement
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        grouped = PreparedSQL("\(head) VALUES \(Array(repeating: row, count: rowsPerStatement).joined(separator: ", ")) \(tail)")
        single = PreparedSQL("\(head) VALUES \(row) \(tail)")
    }

    /// The values of the rows of one statement, in parameter order.
    public struct Values: ~Copyable {
        fileprivate var integers: [(parameter: Int32, value: Int64?)] = []
        fileprivate var reals: [(parameter: Int32, value: Double)] = []
        fileprivate var buffers: [(parameter: Int32, offset: Int, count: Int, isText: Bool)] = []
        fileprivate var bytes: [UInt8] = []
        fileprivate var next: Int32 = 1

        fileprivate mutating func removeAll() {
            integers.removeAll(keepingCapacity: true)
            reals.removeAll(keepingCapacity: true)
            buffers.removeAll(keepingCapacity: true)
            bytes.removeAll(keepingCapacity: true)
            next = 1
        }

        /// Binds an integer to the next parameter.
        public mutating func append(_ value: Int64) {
            integers.append((next, value))
            next += 1
        }

        /// Binds NULL to the next parameter.
        public mutating func appendNull() {
            integers.append((next, nil))
            next += 1
        }

        /// Binds an integer, or NULL, to the next parameter.
        public mutating func append(_ value: Int64?) {
            if let value { append(value) } else { appendNull() }
        }

        /// Binds a floating-point number to the next parameter.
        public mutating func append(_ value: Double) {
            reals.append((next, value))
            next += 1
        }

        /// Binds a floating-point number, or NULL, to the next parameter.
        public mutating func append(_ value: Double?) {
            if let value { append(value) } else { appendNull() }
        }

        /// Binds text to the next parameter.
        public mutating func append(_ value: String) {
            var value = value
            let offset = bytes.count
            value.withUTF8 { bytes.append(contentsOf: $0) }
            buffers.append((next, offset, bytes.count - offset, true))
            next += 1
        }

        /// Binds bytes as a BLOB (an empty array binds an empty BLOB, not NULL) to the next parameter.
        public mutating func append(blob value: [UInt8]) { value.withUnsafeBytes { append(blob: $0) } }

        /// Binds bytes lent by their owner as a BLOB to the next parameter (copied).
        public mutating func append(blob value: UnsafeRawBufferPointer) {
            buffers.append((next, bytes.count, value.count, false))
            bytes.append(contentsOf: value)
            next += 1
        }

        /// Binds the 16 bytes of a UUID as a BLOB to the next parameter.
        public mutating func append(uuid value: UUID) {
            buffers.append((next, bytes.count, 16, false))
            withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
            next += 1
        }

        /// Binds an event's envelope and payload to the next nine parameters, in the order both
        /// event logs (a device's and the server's) store them: identifier, device, device
        /// sequence, HLC, change block, object, type, schema version, payload.
        public mutating func append(envelopeOf event: Event) {
            append(uuid: event.id)
            append(event.device.rawValue)
            append(event.deviceSequence)
            append(Int64(bitPattern: event.timestamp.rawValue))
            append(uuid: event.changeBlock)
            append(uuid: event.object)
            append(event.type)
            append(Int64(event.schemaVersion))
            append(blob: event.payload)
        }
    }

    /// Inserts rows `0..<count`; `values(row, &values)` appends row `row`'s values, in column
    /// order. Returns the number of rows inserted (rows skipped by an `ON CONFLICT DO NOTHING`
    /// tail are not counted).
    ///
    /// With `stopAtSkippedRow`, it returns nil as soon as a statement inserts fewer rows than it
    /// was given, without running the rest (the caller rolls back what was inserted).
    @discardableResult
    public func run(
        count: Int, in database: Database, stopAtSkippedRow: Bool = false, values appendRow: (Int, inout Values) throws -> Void
    ) throws -> Int? {
        var inserted = 0
        var row = 0
        var values = Values()
        while row < count {
            let rows = count - row >= rowsPerStatement ? rowsPerStatement : 1
            // Cleared after its last run already (below): every parameter is NULL.
            let statement = try database.cachedStatement(rows == 1 ? single : grouped, clearingBindings: false)
            values.removeAll()
            for offset in 0..<rows {
                try appendRow(row + offset, &values)
                precondition(values.next == Int32((offset + 1) * columns + 1), "each row binds exactly \(columns) values")
            }
            try Self.run(statement, values)
            let changed = database.changes
            if stopAtSkippedRow && changed < rows { return nil }
            inserted += changed
            row += rows
        }
        return inserted
    }

    /// Binds `values` and steps `statement` once, then resets it and clears its bindings while
    /// the bound bytes are still alive. Every parameter is NULL when it starts (a new statement's
    /// are, and every run ends by clearing them, failed runs too), so NULLs are not bound.
    private static func run(_ statement: Statement, _ values: borrowing Values) throws {
        var stepped = false
        // A run that fails before its step clears what it bound (the step's own scope clears after it).
        defer { if !stepped { statement.reset() } }
        let handle = statement.handle
        for case (let parameter, let value?) in values.integers {
            let code = sqlite3_bind_int64(handle, parameter, value)
            guard code == SQLITE_OK else { throw statement.database.error(code, sql: statement.sql) }
        }
        for (parameter, value) in values.reals {
            let code = sqlite3_bind_double(handle, parameter, value)
            guard code == SQLITE_OK else { throw statement.database.error(code, sql: statement.sql) }
        }
        try values.bytes.withUnsafeBytes { bytes in
            for buffer in values.buffers {
                let code: Int32
                if buffer.count == 0 {
                    code =
                        buffer.isText
                        ? sqlite3_bind_text(handle, buffer.parameter, "", 0, csqlite_transient())
                        : sqlite3_bind_zeroblob(handle, buffer.parameter, 0)
                } else if buffer.isText {
                    let start = (bytes.baseAddress! + buffer.offset).assumingMemoryBound(to: CChar.self)
                    code = sqlite3_bind_text(handle, buffer.parameter, start, Int32(buffer.count), nil)
                } else {
                    code = sqlite3_bind_blob(handle, buffer.parameter, bytes.baseAddress! + buffer.offset, Int32(buffer.count), nil)
                }
                guard code == SQLITE_OK else { throw statement.database.error(code, sql: statement.sql) }
            }
            // Bound without a copy (SQLITE_STATIC): step and clear while `bytes` is valid.
            stepped = true
            defer { statement.reset() }
            try statement.step()
        }
    }
}
