import CBaseline
import Foundation
import LedgerCore
import LedgerStore

/// Event-log figures: batched and one-per-transaction appends, full read-back, point lookups.
struct EventLogBenchmarks {
    let batchedCount: Int
    let singleCount: Int
    let repetitions: Int
    let payload = (0..<200).map { UInt8(truncatingIfNeeded: $0 * 31 + 7) }

    init(quick: Bool) {
        batchedCount = quick ? 20_000 : 100_000
        singleCount = quick ? 2_000 : 10_000
        repetitions = quick ? 1 : 3
    }

    static func schemaSQL() throws -> String {
        try Migrator.library().migrations.map(\.sql).joined(separator: ";\n")
    }

    /// Appends `count` events through EventLog, `batch` per transaction; returns seconds.
    func swiftAppend(path: String, count: Int, batch: Int) throws -> Double {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try Migrator.library().migrate($0) }
        let ids = UUIDv7Generator(clock: { 1_764_483_790_000 }, random: SeededRandomNumberGenerator(seed: 7))
        let device = DeviceID("bench-device")
        var block = ids.next()
        let objects = (0..<64).map { _ in ids.next() }
        return try seconds {
            var index = 0
            var events: [Event] = []
            events.reserveCapacity(batch)
            while index < count {
                events.removeAll(keepingCapacity: true)
                block = ids.next()
                for offset in 0..<min(batch, count - index) {
                    let sequence = index + offset
                    events.append(
                        Event(
                            id: ids.next(), device: device, deviceSequence: Int64(sequence + 1),
                            timestamp: HLCTimestamp(
                                milliseconds: 1_764_483_790_000 + UInt64(sequence / 64), counter: UInt16(sequence % 64)),
                            changeBlock: block, object: objects[sequence % 64], type: "asset.created", schemaVersion: 1,
                            payload: payload))
                }
                try queue.write { try EventLog($0).append(events) }
                index += events.count
            }
        }
    }

    func run() throws -> [Figure] {
        let schema = try Self.schemaSQL()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var swiftBatched: [Double] = [], cBatched: [Double] = []
        var swiftSingle: [Double] = [], cSingle: [Double] = []
        var swiftRead: [Double] = [], cRead: [Double] = []
        var swiftLookups: [Double] = [], cLookups: [Double] = []
        for round in 0..<repetitions {
            let cPath = directory.appendingPathComponent("c-\(round).sqlite").path
            let swiftPath = directory.appendingPathComponent("swift-\(round).sqlite").path
            let cTime = baseline_append(cPath, schema, Int32(batchedCount), 1000, Int32(payload.count))
            guard cTime > 0 else { throw BenchmarkError("the C baseline append failed") }
            cBatched.append(Double(batchedCount) / cTime)
            swiftBatched.append(Double(batchedCount) / (try swiftAppend(path: swiftPath, count: batchedCount, batch: 1000)))

            var rows = 0
            let cScan = baseline_scan(cPath, &rows)
            cRead.append(Double(rows) / cScan)
            swiftRead.append(try swiftScan(path: swiftPath, expected: batchedCount))

            var latencies = [Double](repeating: 0, count: 2000)
            _ = baseline_point_lookups(cPath, 2000, &latencies)
            cLookups.append(median(latencies))
            swiftLookups.append(try swiftPointLookups(path: swiftPath, count: 2000))

            let cSinglePath = directory.appendingPathComponent("c1-\(round).sqlite").path
            let swiftSinglePath = directory.appendingPathComponent("swift1-\(round).sqlite").path
            cSingle.append(Double(singleCount) / baseline_append(cSinglePath, schema, Int32(singleCount), 1, Int32(payload.count)))
            swiftSingle.append(Double(singleCount) / (try swiftAppend(path: swiftSinglePath, count: singleCount, batch: 1)))
        }
        return [
            Figure(
                name: "append.batched", value: median(swiftBatched), unit: "events/s", baseline: median(cBatched), higherIsBetter: true,
                target: 1 / 1.5,
                note: "\(batchedCount) events of \(payload.count) B, 1,000 per transaction, hash chain; C baseline same rows"),
            Figure(
                name: "append.single", value: median(swiftSingle), unit: "events/s", baseline: median(cSingle), higherIsBetter: true,
                target: 1 / 1.5, note: "\(singleCount) events, one transaction each (WAL, synchronous=NORMAL)"),
            Figure(
                name: "read.full", value: median(swiftRead), unit: "events/s", baseline: median(cRead), higherIsBetter: true,
                target: 0.5, note: "whole log decoded into events, keyset pages of 1,000; C: one full scan touching every column"),
            Figure(
                name: "read.by-id.p50", value: median(swiftLookups), unit: "µs", baseline: median(cLookups), higherIsBetter: false,
                target: 0.5, note: "one event by id, decoded (2,000 lookups)"),
        ]
    }

    func swiftScan(path: String, expected: Int) throws -> Double {
        let queue = try DatabaseQueue(path: path)
        var count = 0
        var checksum = 0
        let elapsed = try seconds {
            try queue.read { db in
                try EventLog(db).forEach { stored in
                    count += 1
                    checksum &+= stored.event.payload.count &+ Int(stored.event.deviceSequence)
                }
            }
        }
        guard count == expected else { throw BenchmarkError("read back \(count) events, expected \(expected)") }
        if checksum == 42 { print("") }
        return Double(count) / elapsed
    }

    func swiftPointLookups(path: String, count: Int) throws -> Double {
        let queue = try DatabaseQueue(path: path)
        let total = try queue.read { try EventLog($0).count() }
        let ids: [UUID] = try queue.read { db in
            try (0..<count).map { index in
                try db.firstRow("SELECT event_id FROM events WHERE local_seq = ?", [Int64(1 + (index * 7919) % total)]) {
                    UUID(bytes: $0.blob(0))!
                }!
            }
        }
        var latencies: [Double] = []
        try queue.read { db in
            let log = EventLog(db)
            for id in ids {
                latencies.append(try seconds { _ = try log.event(withID: id) } * 1e6)
            }
        }
        return median(latencies)
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
