import Foundation
import LedgerCore
import LedgerStore
import Testing

@testable import PhotoLedger

/// `rebuild()` folds the log on a second thread in batches while the batch before is written:
/// every batch size gives the incrementally maintained tables, a damaged event fails the whole
/// rebuild and leaves the projections as they were, and the filter that tells a batch which rows
/// earlier batches wrote never forgets one.
@Suite("Rebuild")
struct RebuildTests {
    /// A library with albums whose members are hidden, deleted, recovered, purged and moved.
    func busyLibrary(_ directory: TemporaryDirectory) throws -> PhotoLibrary {
        let library = try makeLibrary(directory)
        var random = SeededRandomNumberGenerator(seed: 11)
        for round in 0..<4 {
            let assets = try library.createAssets(30, favorite: round % 2 == 0)
            let album = try library.createAlbum("Album \(round)", assets: Array(assets.prefix(20)))
            try library.performChangesAndWait { changes in
                try changes.assetChangeRequest(for: assets[Int.random(in: 0..<30, using: &random)]).setHidden(true)
                try changes.deleteAssets([assets[1], assets[2], assets[25]])
                try changes.albumChangeRequest(for: album).moveAssets(at: IndexSet([0, 1]), to: 5)
            }
            try library.performChangesAndWait { changes in
                try changes.recoverAssets([assets[2]])
                try changes.purgeAssets([assets[25]])
                try changes.albumChangeRequest(for: album).addAssets(Array(assets.suffix(4)))
            }
        }
        return library
    }

    @Test("a rebuild in batches of any size gives the incrementally maintained tables")
    func batchSizes() throws {
        let directory = try TemporaryDirectory()
        let library = try busyLibrary(directory)
        let reference = try library.projectionDump()
        for size in [1, 2, 7, 64, 1000, Projection.rebuildBatchSize] {
            try library.rebuild(batchSize: size)
            #expect(try library.projectionDump() == reference, "batches of \(size)")
        }
    }

    @Test("a damaged event is quarantined by the rebuild: the rest folds as before, and the event is listed with its reason")
    func damagedEvent() throws {
        let directory = try TemporaryDirectory()
        let library = try busyLibrary(directory)
        let reference = try library.projectionDump()
        let events = try library.allEvents()
        // An asset creation whose payload ends early, after every event already in the log.
        let template = try #require(events.first { $0.type == EventType.assetCreated.rawValue })
        var damaged = template
        damaged.id = UUID()
        damaged.deviceSequence = Int64(events.count + 1)
        damaged.object = UUID()
        damaged.payload = Array(template.payload.prefix(3))
        try library.storage.write { db in _ = try EventLog(db).append([damaged]) }
        for size in [1, 5, Projection.rebuildBatchSize] {
            try library.rebuild(batchSize: size)
            var dump = try library.projectionDump()
            let removed = dump.removeValue(forKey: "quarantine")
            let quarantine = try #require(removed)
            var expected = reference
            expected["quarantine"] = nil
            #expect(dump == expected, "batches of \(size): every other event folds as before")
            #expect(quarantine.count == 1)
            let entry = try #require(try library.quarantine().first)
            #expect(entry.eventID == damaged.id && entry.kind == .quarantined && entry.type == "asset.created")
            #expect(entry.reason.contains("payload is invalid"), "\(entry.reason)")
        }
    }

    @Test("rebuild refuses a log whose chain does not verify, and changes nothing")
    func tamperedLog() throws {
        let directory = try TemporaryDirectory()
        let library = try busyLibrary(directory)
        let reference = try library.projectionDump()
        // An edit behind the library's back: the trigger that keeps the log append-only is dropped first.
        try library.storage.write { db in
            try db.execute("DROP TRIGGER events_are_never_changed")
            try db.execute("UPDATE events SET payload = CAST(payload || x'00' AS BLOB) WHERE local_seq = 3")
        }
        let error = try #require(throws: PhotoLibraryError.self) { try library.rebuild() }
        #expect(error.code == .internalError)
        #expect(error.message.contains("does not verify"), "\(error.message)")
        #expect(try library.projectionDump() == reference)
    }

    @Test("a changed row the fold cannot read is reported as the chain's break, and changes nothing")
    func tamperedSeal() throws {
        let directory = try TemporaryDirectory()
        let library = try busyLibrary(directory)
        let reference = try library.projectionDump()
        // A plain event made to claim a sealed payload without its nonce.
        try library.storage.write { db in
            try db.execute("DROP TRIGGER events_are_never_changed")
            try db.execute("UPDATE events SET key_id = 7 WHERE local_seq = 3")
        }
        let error = try #require(throws: PhotoLibraryError.self) { try library.rebuild() }
        #expect(error.message.contains("does not verify"), "\(error.message)")
        #expect(try library.projectionDump() == reference)
    }

    @Test("rebuild refuses a log whose last events were removed, and changes nothing")
    func truncatedLog() throws {
        let directory = try TemporaryDirectory()
        let library = try busyLibrary(directory)
        let reference = try library.projectionDump()
        // The chain of what is left still links: only the commit records show the missing tail.
        try library.storage.write { db in
            try db.execute("DROP TRIGGER IF EXISTS events_are_never_deleted")
            try db.execute("DELETE FROM events WHERE local_seq = (SELECT max(local_seq) FROM events)")
        }
        let error = try #require(throws: PhotoLibraryError.self) { try library.rebuild() }
        #expect(error.message.contains("does not verify") && error.message.contains("removed from its end"), "\(error.message)")
        #expect(try library.projectionDump() == reference)
    }

    @Test("the rebuild filter never forgets an object, and rarely claims one it never saw")
    func objectFilter() {
        var random = SeededRandomNumberGenerator(seed: 5)
        func uuid() -> UUID {
            let (a, b) = (UInt64.random(in: .min ... .max, using: &random), UInt64.random(in: .min ... .max, using: &random))
            return withUnsafeBytes(of: (a, b)) { UUID(uuid: $0.load(as: uuid_t.self)) }
        }
        // Random identifiers, and identifiers that differ only in a counter (not random at all).
        let counted = (0..<20_000).map { n in
            withUnsafeBytes(of: (UInt64(0x0190_0000_0000_7000), UInt64(n).bigEndian)) { UUID(uuid: $0.load(as: uuid_t.self)) }
        }
        for inserted in [(0..<20_000).map { _ in uuid() }, counted] {
            var filter = ObjectFilter(capacity: inserted.count)
            for id in inserted { filter.insert(id) }
            #expect(inserted.allSatisfy(filter.mayContain))
            let others = (0..<20_000).map { _ in uuid() }
            let claimed = others.filter(filter.mayContain).count
            #expect(claimed < 100, "\(claimed) of 20,000 never inserted were claimed")
        }
        #expect(!ObjectFilter(capacity: 0).mayContain(uuid()))
    }
}
