import Foundation
import LedgerCore
import LedgerStore
import TestSupportKit
import Testing

@Suite("Crash safety")
struct CrashSafetyTests {
    /// Kills: a few by default (each round verifies the whole log so far), the full amount in CI.
    static let rounds = TestIntensity.count(local: 8, full: 24)

    @Test("a writer killed with SIGKILL at random moments never leaves a half-written event")
    func killedWriter() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("crash.sqlite")
        let writer = try builtExecutable("ledger-crash-writer")
        var random = SeededRandomNumberGenerator(seed: 20261130)
        var previousCount = 0
        for round in 0..<Self.rounds {
            let process = ChildProcess()
            process.executableURL = writer
            process.arguments = [path, "crash-device", String(round)]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            // Wait until the writer has committed at least one block, then kill it after a random delay.
            _ = output.fileHandleForReading.readData(ofLength: 6)
            usleep(UInt32.random(in: 1_000...60_000, using: &random))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)

            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { try Migrator.library().migrate($0) }
            try queue.read { db in
                let log = EventLog(db)
                guard case .intact(let count) = try log.verify() else {
                    Issue.record("round \(round): the hash chain does not verify after the kill")
                    return
                }
                #expect(count > previousCount, "round \(round): the writer made progress")
                previousCount = count
                #expect(try db.integrityProblems() == [])
                // Device sequences are 1…n without gaps, and every payload is whole.
                var expected: Int64 = 0
                try log.forEach { stored in
                    expected += 1
                    #expect(stored.event.deviceSequence == expected)
                    let byte = UInt8(truncatingIfNeeded: stored.event.deviceSequence)
                    #expect(stored.event.payload.allSatisfy { $0 == byte })
                }
                // Change blocks are whole: the count of each block matches a committed transaction.
                let blocks = try db.rows(
                    "SELECT change_block, count(*), max(device_seq) - min(device_seq) + 1 FROM events GROUP BY change_block"
                ) {
                    ($0.int64(1), $0.int64(2))
                }
                #expect(blocks.allSatisfy { $0.0 == $0.1 })
            }
        }
        #expect(previousCount > 0)
    }
}
