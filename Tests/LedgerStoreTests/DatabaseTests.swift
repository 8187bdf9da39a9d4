import Foundation
import LedgerCore
import LedgerStore
import Testing

@Suite("Database connection")
struct DatabaseTests {
    @Test("an SQL failure is a typed error with code, message and SQL, without bound values")
    func typedErrors() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, secret TEXT NOT NULL UNIQUE)")
        try db.execute("INSERT INTO t (secret) VALUES (?)", ["hunter2"])
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("INSERT INTO t (secret) VALUES (?)", ["hunter2"])
        }
        #expect(error.isConstraintViolation)
        #expect(error.code == 19)
        #expect(error.extendedCode == 2067)
        #expect(error.sql == "INSERT INTO t (secret) VALUES (?)")
        #expect(error.message.contains("UNIQUE constraint failed"))
        #expect(!error.description.contains("hunter2"))

        let syntax = try #require(throws: DatabaseError.self) { try db.execute("SELEC nothing") }
        #expect(syntax.code == 1)
        #expect(syntax.description.contains("SELEC nothing"))
    }

    @Test("a batch insert binds no NULL: a value of one run never stays for the next, a failed run's neither")
    func batchInsertNulls() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL CHECK (c IS NULL OR c >= 0))")
        let insert = BatchInsert("INSERT INTO t (id, a, b, c)", columns: 4, rowsPerStatement: 3)
        // Rows 0..<7: full statements of 3 and single ones; even rows hold values, odd rows NULLs.
        func row(_ index: Int, _ values: inout BatchInsert.Values, id: Int) {
            values.append(Int64(id))
            values.append(index % 2 == 0 ? Int64(index) : nil)
            if index % 2 == 0 { values.append("row \(index)") } else { values.appendNull() }
            values.append(index % 2 == 0 ? Double(index) : nil)
        }
        #expect(try insert.run(count: 7, in: db) { index, values in row(index, &values, id: index) } == 7)
        // A run that fails in its step (the CHECK) leaves nothing bound for the next one.
        #expect(throws: DatabaseError.self) {
            try insert.run(count: 3, in: db) { index, values in
                values.append(Int64(100 + index))
                values.append(Int64(7))
                values.append("bad")
                values.append(index == 2 ? -1.0 : 1.0)
            }
        }
        #expect(try insert.run(count: 4, in: db) { index, values in row(2 * index + 1, &values, id: 200 + index) } == 4)
        let rows = try db.rows("SELECT id, a, b, c FROM t ORDER BY id") { row in
            (row.int64(0), row.isNull(1) ? nil : row.int64(1), row.isNull(2) ? nil : row.text(2), row.isNull(3) ? nil : row.double(3))
        }
        #expect(rows.count == 11)
        for (id, a, b, c) in rows {
            let even = id < 100 && id % 2 == 0
            #expect((a == nil) == !even && (b == nil) == !even && (c == nil) == !even, "row \(id)")
        }
    }

    @Test("a transaction that throws rolls back everything")
    func transactionRollsBack() throws {
        let directory = try TemporaryDirectory()
        let queue = try DatabaseQueue(path: directory.path("db.sqlite"))
        try queue.write { try $0.execute("CREATE TABLE t (value INTEGER)") }
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try queue.write { db in
                try db.execute("INSERT INTO t VALUES (1)", [])
                throw Refused()
            }
        }
        let count = try queue.read { try $0.firstRow("SELECT count(*) FROM t") { $0.int64(0) } }
        #expect(count == 0)
    }

    @Test("a nested transaction is a savepoint: a caught inner failure keeps the outer work")
    func savepoints() throws {
        let directory = try TemporaryDirectory()
        let queue = try DatabaseQueue(path: directory.path("db.sqlite"))
        try queue.write { try $0.execute("CREATE TABLE t (value INTEGER)") }
        struct Refused: Error {}
        try queue.write { db in
            try db.execute("INSERT INTO t VALUES (1)", [])
            do {
                try db.inTransaction {
                    try db.execute("INSERT INTO t VALUES (2)", [])
                    throw Refused()
                }
            } catch is Refused {}
            try db.inTransaction { try db.execute("INSERT INTO t VALUES (3)", []) }
        }
        let values = try queue.read { try $0.rows("SELECT value FROM t ORDER BY value") { $0.int64(0) } }
        #expect(values == [1, 3])
    }

    @Test("opening a file that is not a database is a clear error")
    func notADatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("photo.jpg")
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: DatabaseError.self) { try Database(path: path) }
        #expect(error.isNotADatabase)
        #expect(error.description.contains(path))
        #expect(error.description.contains("does not name a PhotoLedger database"))
    }

    @Test("a damaged database file is reported as corrupt")
    func corruptFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        do {
            let queue = try makeLibraryQueue(directory, name: "db.sqlite")
            var factory = EventFactory()
            try queue.write { try EventLog($0).append(factory.make(500)) }
            try queue.writeWithoutTransaction { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        // Overwrite the B-tree pages after the schema page with garbage.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 4096)
        handle.write(Data((0..<(4096 * 8)).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 13) }))
        try handle.close()
        let error = try #require(throws: DatabaseError.self) {
            let queue = try DatabaseQueue(path: path)
            try queue.read { db in
                _ = try db.integrityProblems()
                _ = try EventLog(db).verify()
            }
        }
        #expect(error.isCorrupt)
        #expect(error.description.contains("restore it from a backup"))
    }

    @Test("a database locked by another connection beyond the timeout gives a busy error")
    func lockedBeyondTimeout() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let holder = try Database(path: path)
        try holder.execute("CREATE TABLE t (value INTEGER)")
        try holder.execute("BEGIN EXCLUSIVE")
        var options = Database.Options()
        options.busyTimeout = .milliseconds(100)
        let queue = try DatabaseQueue(path: path, options: options)
        let error = try #require(throws: DatabaseError.self) {
            try queue.write { try $0.execute("INSERT INTO t VALUES (1)", []) }
        }
        #expect(error.isBusy)
        #expect(error.description.contains("another process holds the database"))
        try holder.execute("COMMIT")
        try queue.write { try $0.execute("INSERT INTO t VALUES (1)", []) }
    }

    @Test("nested access to the same queue is a thrown usage error, not a deadlock")
    func reentrantAccess() throws {
        let directory = try TemporaryDirectory()
        let queue = try DatabaseQueue(path: directory.path("db.sqlite"))
        let error = try #require(throws: StoreUsageError.self) {
            try queue.write { _ in try queue.read { _ in } }
        }
        #expect(error.message.contains("do not nest"))
    }

    @Test("writes from many threads are serialized and none is lost")
    func concurrentWrites() async throws {
        let directory = try TemporaryDirectory()
        let queue = try DatabaseQueue(path: directory.path("db.sqlite"))
        try queue.write { try $0.execute("CREATE TABLE t (task INTEGER, step INTEGER)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for step in 0..<50 {
                        try queue.write { try $0.execute("INSERT INTO t VALUES (?, ?)", [task, step]) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let count = try queue.read { try $0.firstRow("SELECT count(DISTINCT task * 1000 + step) FROM t") { $0.int64(0) } }
        #expect(count == 400)
    }

    @Test("statements are cached and reusable with new bindings")
    func statementCache() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try db.execute("CREATE TABLE t (value BLOB)")
        try db.execute("INSERT INTO t VALUES (?)", [[UInt8]()])
        try db.execute("INSERT INTO t VALUES (?)", [[UInt8]([1, 2, 3])])
        let first = try db.cachedStatement("SELECT value FROM t ORDER BY rowid")
        let second = try db.cachedStatement("SELECT value FROM t ORDER BY rowid")
        #expect(first === second)
        let values = try db.rows("SELECT value, typeof(value) FROM t ORDER BY rowid") { ($0.blob(0), $0.text(1)) }
        #expect(values.map(\.0) == [[], [1, 2, 3]])
        #expect(values.map(\.1) == ["blob", "blob"])
    }

    @Test("a column's bytes compare with an array in place: equal, another length, other bytes, empty and NULL")
    func blobEquality() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("db.sqlite"))
        try db.execute("CREATE TABLE t (value BLOB)")
        try db.execute("INSERT INTO t VALUES (?)", [[UInt8]([1, 2, 3])])
        try db.execute("INSERT INTO t VALUES (?)", [[UInt8]()])
        try db.execute("INSERT INTO t VALUES (NULL)")
        let rows = try db.rows("SELECT value FROM t ORDER BY rowid") { row in
            [[1, 2, 3], [1, 2], [1, 2, 4], [], [1, 2, 3, 4]].map { row.blob(0, equals: $0) }
        }
        #expect(rows[0] == [true, false, false, false, false])
        #expect(rows[1] == [false, false, false, true, false])
        #expect(rows[2] == [false, false, false, true, false])
    }
}
