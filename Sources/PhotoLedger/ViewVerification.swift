import Foundation
import LedgerCore
import LedgerStore

/// Where the stored views differ from a fold of the log.
public struct ViewDifference: Sendable, Hashable, CustomStringConvertible {
    /// The projection table.
    public let table: String
    /// The row's key (its primary key columns, as text).
    public let key: String
    /// What differs: a column and both values, or a row only one side has.
    public let detail: String

    public var description: String { "the view \(table) differs from the log at \(key): \(detail)" }
}

/// The result of ``PhotoLibrary/verifyViews()``.
public struct ViewVerificationReport: Sendable, Hashable, CustomStringConvertible {
    /// Rows compared, over every projection table.
    public let rowsCompared: Int
    /// The first difference, or nil when the stored views are exactly the fold of the log.
    public let difference: ViewDifference?

    /// Whether the views are exactly the fold of the log.
    public var isIntact: Bool { difference == nil }

    public var description: String {
        difference?.description ?? "the views are the fold of the log: \(rowsCompared) rows compared"
    }
}

extension PhotoLibrary {
    /// Verifies that the stored views are the fold of the log: copies the library to a scratch
    /// file, refolds the copy from its log and compares every projection table, row by row, with
    /// the stored ones. An edit made directly to a view table (which the hash chains do not
    /// cover) is found here, and named by its table, key and column.
    ///
    /// Verify the chain first (``verifyChain()``): a log that does not verify is not refolded.
    public func verifyViews() throws -> ViewVerificationReport {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("photoledger-verify-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratch.path + suffix) }
        }
        do {
            try storage.readWithoutTransaction { db in try db.execute("VACUUM INTO ?", [scratch.path]) }
            let copy = try Database(path: scratch.path)
            let context = foldContext
            try withArchive { _, archive in
                try copy.inTransaction {
                    _ = try Projection(copy, archive: archive).rebuild(context: context)
                    // As a rebuild does: the purged assets' events wait for no key.
                    if encryption.snapshot.enabled { try forgetShreddedEvents(of: purgedAssets(copy), in: copy, archive: archive) }
                }
            }
            return try readDatabase { db in try Self.compareViews(stored: db, folded: copy) }
        } catch {
            throw Self.translate(error, doing: "verify the views")
        }
    }

    /// Compares every projection table of `stored` with `folded`, in key order.
    private static func compareViews(stored: Database, folded: Database) throws -> ViewVerificationReport {
        var compared = 0
        for table in Projection.tables {
            let columns = try stored.rows("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", [table]) { ($0.text(0), $0.int64(1)) }
            let keys = columns.filter { $0.1 > 0 }.sorted { $0.1 < $1.1 }.map(\.0)
            let order = (keys.isEmpty ? [columns[0].0] : keys).joined(separator: ", ")
            let sql = "SELECT * FROM \(table) ORDER BY \(order)"
            let mine = try stored.rows(sql) { row in (0..<row.columnCount).map { row.value($0) } }
            let theirs = try folded.rows(sql) { row in (0..<row.columnCount).map { row.value($0) } }
            let keyIndexes = keys.compactMap { key in columns.firstIndex { $0.0 == key } }
            func key(_ row: [SQLValue]) -> String { keyIndexes.map { describe(row[$0]) }.joined(separator: ", ") }
            for (index, (a, b)) in zip(mine, theirs).enumerated() {
                compared += 1
                guard a != b else { continue }
                if key(a) != key(b) {
                    return ViewVerificationReport(
                        rowsCompared: compared,
                        difference: ViewDifference(
                            table: table, key: key(a) < key(b) ? key(a) : key(b),
                            detail: key(a) < key(b)
                                ? "a stored row the log does not make (row \(index + 1))" : "a row the log makes is missing"))
                }
                let column = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }!.offset
                return ViewVerificationReport(
                    rowsCompared: compared,
                    difference: ViewDifference(
                        table: table, key: key(a),
                        detail: "\(columns[column].0) is \(describe(a[column])), the log makes \(describe(b[column]))"))
            }
            if mine.count != theirs.count {
                let extra = mine.count > theirs.count ? mine[theirs.count] : theirs[mine.count]
                return ViewVerificationReport(
                    rowsCompared: compared,
                    difference: ViewDifference(
                        table: table, key: key(extra),
                        detail: mine.count > theirs.count ? "a stored row the log does not make" : "a row the log makes is missing"))
            }
        }
        return ViewVerificationReport(rowsCompared: compared, difference: nil)
    }

    private static func describe(_ value: SQLValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let value): return "\(value)"
        case .real(let value): return "\(value)"
        case .text(let value): return "'\(value)'"
        case .blob(let value): return value.count == 16 ? (UUID(bytes: value)?.uuidString ?? Hex.encode(value)) : Hex.encode(value)
        }
    }
}
