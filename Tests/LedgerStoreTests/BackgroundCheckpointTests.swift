import Foundation
import LedgerCore
import LedgerStore
import Testing

@Suite("Background checkpoints")
struct BackgroundCheckpointTests {
    func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    @Test("commits leave checkpoints to a thread of their own, which copies the log into the file and lets it restart")
    func checkpointsRunBeside() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        var options = Database.Options()
        options.checkpointsInBackground = true
        var checkpoints = 0
        do {
            let db = try Database(path: path, options: options)
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
            // 30 commits of 100 rows of 3,000 bytes: about 100 log pages each, 3,000 in all.
            var maximumLog = 0
            for commit in 0..<30 {
                try db.inTransaction {
                    for row in 0..<100 { try db.execute("INSERT INTO t (body) VALUES (?)", [[UInt8](repeating: UInt8(row), count: 3000)]) }
                }
                #expect(db.waitForBackgroundCheckpoints(timeout: TestPatience.limit), "commit \(commit): the checkpoint finished")
                maximumLog = max(maximumLog, fileSize(path + "-wal"))
            }
            checkpoints = db.backgroundCheckpointCount
            // Without a checkpoint the log would hold all 3,000 pages and the file none of them;
            // here the log restarts after each checkpoint, so it stays near SQLite's 1,000-page mark.
            #expect(maximumLog < 1300 * (4096 + 24), "the log reached \(maximumLog) bytes")
            #expect(fileSize(path) > 2000 * 4096, "the file holds the checkpointed pages")
        }
        // One checkpoint per 1,000 new pages, not one per commit.
        #expect(checkpoints >= 2 && checkpoints <= 4, "\(checkpoints) checkpoints")
        let reopened = try Database(path: path)
        #expect(try reopened.firstRow("SELECT count(*), sum(length(body)) FROM t") { [$0.int64(0), $0.int64(1)] } == [3000, 9_000_000])
        #expect(try reopened.integrityProblems().isEmpty)
    }

    @Test("commits in a tight loop ask for a checkpoint per 1,000 new pages, not one per commit")
    func tightLoop() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        var options = Database.Options()
        options.checkpointsInBackground = true
        let db = try Database(path: path, options: options)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        // 600 commits of about 5 pages each, without waiting: 3,000 pages in all.
        for _ in 0..<600 {
            try db.inTransaction {
                for row in 0..<5 { try db.execute("INSERT INTO t (body) VALUES (?)", [[UInt8](repeating: UInt8(row), count: 3000)]) }
            }
        }
        #expect(db.waitForBackgroundCheckpoints(timeout: TestPatience.limit))
        #expect(db.backgroundCheckpointCount >= 1 && db.backgroundCheckpointCount <= 6, "\(db.backgroundCheckpointCount) checkpoints")
        #expect(try db.firstRow("SELECT count(*) FROM t") { $0.int64(0) } == 3000)
    }

    @Test("a connection without background checkpoints checkpoints in its own commits")
    func defaultCheckpoints() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let db = try Database(path: path)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        for _ in 0..<30 {
            try db.inTransaction {
                for row in 0..<100 { try db.execute("INSERT INTO t (body) VALUES (?)", [[UInt8](repeating: UInt8(row), count: 3000)]) }
            }
        }
        #expect(db.backgroundCheckpointCount == 0)
        #expect(db.waitForBackgroundCheckpoints(timeout: .milliseconds(1)))
        #expect(fileSize(path) > 2000 * 4096)
    }
}
