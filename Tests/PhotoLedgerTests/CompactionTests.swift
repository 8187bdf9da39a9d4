import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Audit: compaction to the archive, and tampering with either file")
struct CompactionTests {
    /// Two synced libraries with some history; returns Anna's.
    static func history(_ directory: TemporaryDirectory) throws -> (
        anna: PhotoLibrary, ben: PhotoLibrary, server: ScriptedServer, assets: [String], album: String
    ) {
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let server = ScriptedServer()
        let assets = try anna.createAssets(6)
        let album = try anna.createAlbum("Trip", assets: Array(assets.prefix(3)))
        try server.sync(anna, ben)
        clock.advance(milliseconds: 50)
        try ben.performChangesAndWait { changes in
            try changes.albumChangeRequest(for: album).setTitle("Trip 2026")
            try changes.assetChangeRequest(for: assets[0]).setFavorite(true)
        }
        try anna.performChangesAndWait { try $0.deleteAssets([assets[5]]) }
        try server.sync(anna, ben)
        try server.pull(anna)
        return (anna, ben, server, assets, album)
    }

    @Test("folders and key assets survive compaction; a snapshot taken before folders existed still rebuilds")
    func foldersAndOlderSnapshots() throws {
        let directory = try TemporaryDirectory()
        let (anna, ben, server, assets, album) = try Self.history(directory)
        try anna.performChangesAndWait { changes in
            let folder = try changes.createCollectionList(title: "Travel")
            try folder.addChildCollections([album])
            try changes.albumChangeRequest(for: album).setKeyAsset(assets[2])
        }
        try server.sync(anna, ben)
        try server.pull(anna)
        let before = try anna.projectionDump()
        _ = try anna.compact(upToServerSequence: Int64(server.log.count))
        try anna.rebuild()
        #expect(try anna.projectionDump() == before)
        // A snapshot of an older build: no copy of the folders table, albums without the new columns.
        try anna.withDatabase { db in
            try db.execute("DROP TABLE snapshot_collection_lists")
            try db.execute("UPDATE snapshot_albums SET parent = NULL, parent_hlc = 0, parent_device = ''")
        }
        try anna.rebuild()
        // The folder's events were archived after that snapshot's fold: it never held them.
        #expect(try anna.fetchCollectionLists().isEmpty)
        #expect(try anna.fetchTopLevelUserCollections().map(\.title) == ["Trip 2026"])
    }

    @Test("compaction keeps projections identical, verify green, rebuild identical, and history whole")
    func compactionKeepsEverything() throws {
        let directory = try TemporaryDirectory()
        let (anna, _, server, assets, album) = try Self.history(directory)
        let before = try anna.projectionDump()
        let historyBefore = try anna.history(of: album, limit: 100).entries
        let count = try anna.allEvents().count
        let report = try anna.compact(upToServerSequence: Int64(server.log.count - 1))
        #expect(report.archivedEvents == count - 1 && report.horizon == Int64(count - 1))
        #expect(FileManager.default.fileExists(atPath: anna.archiveURL.path))
        #expect(try anna.allEvents().count == 1)
        #expect(try anna.projectionDump() == before)
        #expect(try anna.verify().intactCount == count)
        let chain = try anna.verifyChain()
        #expect(chain.archivedEvents == count - 1 && chain.liveEvents == 1 && chain.isIntact)
        #expect(try anna.verifyServerChain().isIntact)
        try anna.rebuild()
        #expect(try anna.projectionDump() == before)
        let historyAfter = try anna.history(of: album, limit: 100).entries
        #expect(historyAfter.map(\.eventID) == historyBefore.map(\.eventID))
        #expect(historyAfter.filter { $0.location == .archive }.count == historyBefore.count)
        // Audit queries read the archive and the live log as one, in order.
        var annas: [AuditEvent] = []
        var cursor: AuditCursor?
        repeat {
            let page = try anna.events(fromDevice: "anna-phone", after: cursor, limit: 4)
            annas += page.events
            cursor = page.next
        } while cursor != nil
        #expect(annas.map(\.deviceSequence) == Array(1...9) && annas.allSatisfy { $0.location == .archive })
        let bens = try anna.events(fromDevice: "ben-tablet").events
        #expect(bens.map(\.location) == [.archive, .live])
        let everything = try anna.events(in: HLCTimestamp.zero...HLCTimestamp(rawValue: UInt64(Int64.max)), limit: 100).events
        #expect(everything.count == count && everything.map(\.localSequence).sorted() == Array(1...Int64(count)))
        // The log goes on: new events chain from the archive, a second compaction moves them too.
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: assets[1]).setHidden(true) }
        try anna.rebuild()
        #expect(try anna.verify().intactCount == count + 1)
        try server.push(anna)
        // The last event always stays in the live log.
        #expect(try anna.compact(upToServerSequence: Int64(server.log.count)).archivedEvents == 1)
        #expect(try anna.verify().intactCount == count + 1)
        let after = try anna.projectionDump()
        try anna.rebuild()
        #expect(try anna.projectionDump() == after)
    }

    @Test("only the acknowledged prefix below the watermark is archived; unacknowledged events stay")
    func onlyAcknowledgedPrefix() throws {
        let directory = try TemporaryDirectory()
        let (anna, _, server, _, _) = try Self.history(directory)
        let acknowledged = try anna.allEvents().count
        try anna.createAssets(2)
        #expect(try anna.compact(upToServerSequence: Int64(server.log.count + 10)).archivedEvents == acknowledged)
        #expect(try anna.allEvents().count == 2)
        #expect(try anna.compact(upToServerSequence: Int64(server.log.count + 10)).archivedEvents == 0)
        // The schema still refuses to delete an event that was not archived.
        let error = try #require(throws: PhotoLibraryError.self) {
            try anna.withDatabase { try $0.execute("DELETE FROM events", []) }
        }
        #expect(error.message.contains("cannot be deleted"))
        #expect(try anna.allEvents().count == 2)
    }

    @Test("a compaction interrupted after copying to the archive changes nothing visible, and the next one completes it")
    func interruptedCompaction() throws {
        let directory = try TemporaryDirectory()
        let (anna, _, server, _, _) = try Self.history(directory)
        let before = try anna.projectionDump()
        let count = try anna.allEvents().count
        let crash = "CREATE TRIGGER crash BEFORE UPDATE ON compaction_state BEGIN SELECT RAISE(ABORT, 'interrupted'); END"
        try anna.withDatabase { try $0.execute(crash) }
        #expect(throws: PhotoLibraryError.self) { try anna.compact(upToServerSequence: Int64(server.log.count)) }
        #expect(FileManager.default.fileExists(atPath: anna.archiveURL.path))
        #expect(try anna.allEvents().count == count)
        #expect(try anna.verify().intactCount == count)
        #expect(try anna.events(fromDevice: "anna-phone").events.count == 9)
        try anna.withDatabase { try $0.execute("DROP TRIGGER crash") }
        #expect(try anna.compact(upToServerSequence: Int64(server.log.count)).archivedEvents == count - 1)
        #expect(try anna.verify().intactCount == count)
        #expect(try anna.events(fromDevice: "anna-phone").events.count == 9)
        #expect(try anna.projectionDump() == before)
    }

    @Test("a token older than the compaction horizon expires with what to do; a token at the horizon still works")
    func expiredToken() throws {
        let directory = try TemporaryDirectory()
        let (anna, _, server, assets, _) = try Self.history(directory)
        let old = try anna.fetchPersistentChanges(since: PersistentChangeToken(library: try anna.currentChangeToken.library, sequence: 0))
        let first = Array(old)[0].changeToken
        let current = try anna.currentChangeToken
        try anna.compact(upToServerSequence: Int64(server.log.count))
        let error = try #require(throws: PhotoLibraryError.self) { try anna.fetchPersistentChanges(since: first) }
        #expect(error.code == .persistentChangeTokenExpired)
        #expect(error.message.contains("compacted") && error.message.contains("fetch everything you mirror again"))
        #expect(try anna.fetchPersistentChanges(since: current).count == 0)
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: assets[2]).setFavorite(true) }
        #expect(
            Array(try anna.fetchPersistentChanges(since: current)).map { $0.changeDetails(for: .asset).updatedLocalIdentifiers } == [
                [assets[2]]
            ])
    }

    @Test("tampering in the live log: a changed payload, a deleted row, a reordered row, a removed tail")
    func liveTampering() throws {
        for (statement, position) in [
            ("UPDATE events SET payload = x'00' WHERE local_seq = 4", Int64(4)),
            ("DELETE FROM events WHERE local_seq = 3", Int64(4)),
            (
                "UPDATE events SET local_seq = -7 WHERE local_seq = 7; UPDATE events SET local_seq = 7 WHERE local_seq = 8; "
                    + "UPDATE events SET local_seq = 8 WHERE local_seq = -7", Int64(7)
            ),
        ] {
            let directory = try TemporaryDirectory()
            let library = try makeLibrary(directory)
            try library.createAssets(10)
            let events = try library.allEvents()
            try tamper(library.url, statement)
            let failure = try #require(try library.verifyChain().failure, "\(statement)")
            #expect(failure.position == position && failure.location == .live && failure.chain == .local)
            #expect(failure.eventID == events[Int(position) - 1].id || statement.hasPrefix("UPDATE events SET local_seq"))
            #expect(try library.verify().intactCount != 10)
        }
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        try library.createAssets(3)
        try library.createAssets(2)
        try tamper(library.url, "DELETE FROM events WHERE local_seq > 3")
        let failure = try #require(try library.verifyChain().failure)
        #expect(failure.position == 4 && failure.reason.contains("removed from its end"))
    }

    @Test("tampering in the archive: a changed payload, a deleted row, a reordered row")
    func archiveTampering() throws {
        // A reordered row still holds the events the server chained; the other two do not.
        for (statement, position, serverSees) in [
            ("UPDATE events SET payload = x'00' WHERE local_seq = 2", Int64(2), true),
            ("DELETE FROM events WHERE local_seq = 2", Int64(3), true),
            (
                "UPDATE events SET local_seq = -3 WHERE local_seq = 3; UPDATE events SET local_seq = 3 WHERE local_seq = 4; "
                    + "UPDATE events SET local_seq = 4 WHERE local_seq = -3", Int64(3), false
            ),
        ] {
            let directory = try TemporaryDirectory()
            let (anna, _, server, _, _) = try Self.history(directory)
            try anna.compact(upToServerSequence: Int64(server.log.count))
            try tamper(anna.archiveURL, statement)
            let failure = try #require(try anna.verifyChain().failure, "\(statement)")
            #expect(failure.position == position && failure.location == .archive, "\(failure)")
            #expect(try anna.verifyServerChain().isIntact != serverSees, "\(statement)")
        }
        // The last archived events removed: the archive no longer reaches the live log's chain.
        let directory = try TemporaryDirectory()
        let (anna, _, server, _, _) = try Self.history(directory)
        let report = try anna.compact(upToServerSequence: Int64(server.log.count))
        try tamper(anna.archiveURL, "DELETE FROM events WHERE local_seq = \(report.horizon)")
        #expect(try anna.verifyChain().failure?.reason.contains("does not end with the chain value") == true)
    }
}
