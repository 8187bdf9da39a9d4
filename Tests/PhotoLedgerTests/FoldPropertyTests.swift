import Foundation
import LedgerCore
import LedgerStore
import Testing

@testable import PhotoLedger

/// Random change scripts on several devices that exchange events, checking the laws of the fold:
/// any permutation of the event set, with duplicates, folds to identical tables; incremental
/// projections equal `rebuild()`; devices that have seen the same events have identical tables.
@Suite("Projection fold laws")
struct FoldPropertyTests {
    /// How events are handed over.
    enum Delivery: CaseIterable {
        /// Every event `from` has, folded by the apply (duplicates are skipped).
        case all
        /// Every event, folded first as a pull does off the applying thread (the fold made
        /// ahead is not used when some events are held already).
        case allFolded
        /// Only the events `to` lacks, folded first: the fold made ahead is the one merged.
        case missingFolded
    }

    /// Delivers every event `from` has that `to` lacks.
    static func deliver(from: PhotoLibrary, to: PhotoLibrary, _ delivery: Delivery = .all) throws {
        var events = try from.allEvents()
        if delivery == .missingFolded {
            let held = Set(try to.allEvents().map(\.id))
            events.removeAll { held.contains($0.id) }
        }
        let applied = try to.applyRemoteEvents(events, prefolded: delivery != .all)
        if delivery == .missingFolded { #expect(applied == events.count) }
    }

    static func dump(_ db: Database) throws -> [String: [[SQLValue]]] {
        var dump: [String: [[SQLValue]]] = [:]
        for table in Projection.tables {
            dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
        }
        return dump
    }

    /// Scripts and permutations per script: a few by default, the full amounts in CI.
    static let scripts = TestIntensity.count(local: 4, full: 30)
    static let permutations = TestIntensity.count(local: 10, full: 50)

    @Test(
        "devices converge; every permutation with duplicates folds to the same tables; incremental equals rebuild",
        arguments: 0..<scripts)
    func foldLaws(script: Int) throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let devices = try ["anna-phone", "ben-tablet", "cleo-laptop"].enumerated().map { index, name in
            try makeLibrary(directory, device: DeviceID(name), seed: UInt64(script * 10 + index), clock: clock)
        }
        var random = SeededRandomNumberGenerator(seed: UInt64(9000 + script))
        for _ in 0..<120 {
            let device = devices.randomElement(using: &random)!
            clock.advance(milliseconds: UInt64.random(in: 0...3, using: &random))
            if Int.random(in: 0..<8, using: &random) == 0 {
                try Self.deliver(from: devices.randomElement(using: &random)!, to: device, Delivery.allCases.randomElement(using: &random)!)
            } else {
                try RandomChanges.apply(on: device, random: &random)
            }
        }
        for receiver in devices {
            for sender in devices where sender !== receiver {
                try Self.deliver(from: sender, to: receiver, Delivery.allCases.randomElement(using: &random)!)
            }
        }
        let reference = try devices[0].projectionDump()
        for device in devices.dropFirst() {
            #expect(try device.projectionDump() == reference, "devices converge after exchanging every event")
        }
        try devices[1].rebuild()
        #expect(try devices[1].projectionDump() == reference, "rebuild() equals the incremental projections")
        // In batches: the first into empty tables, the others merged into what is stored.
        try devices[2].rebuild(batchSize: Int.random(in: 1...40, using: &random))
        #expect(try devices[2].projectionDump() == reference, "rebuild() in small batches equals the incremental projections")

        let events = try devices[0].allEvents()
        #expect(events.count > 40)
        for permutation in 0..<Self.permutations {
            var shuffled = events + events.filter { _ in Int.random(in: 0..<4, using: &random) == 0 }
            shuffled.shuffle(using: &random)
            let db = try Database(path: ":memory:")
            try Migrator.library().migrate(db)
            // Even permutations fold one event at a time; odd ones in batches of random sizes,
            // merged in memory first (as rebuild and sync pages do).
            try db.inTransaction {
                var rest = shuffled[...]
                while !rest.isEmpty {
                    let count = permutation % 2 == 0 ? 1 : Int.random(in: 1...rest.count, using: &random)
                    try Projection(db).apply(rest.prefix(count), context: FoldContext(schema: .standard, library: nil))
                    rest = rest.dropFirst(count)
                }
            }
            #expect(try Self.dump(db) == reference, "permutation \(permutation) of script \(script)")
        }
    }
}
