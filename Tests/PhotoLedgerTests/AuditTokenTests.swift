import Foundation
import LedgerCore
import LedgerStore
import Testing

@testable import PhotoLedger

@Suite("Audit: change tokens and persistent changes")
struct AuditTokenTests {
    @Test("a token survives a restart and an archive round trip; nothing changed after it")
    func tokenAcrossRestart() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        var library: PhotoLibrary? = try makeLibrary(directory, clock: clock)
        try library!.createAssets(2)
        let token = try library!.currentChangeToken
        let archived = try JSONEncoder().encode(token)
        library = nil
        clock.advance(milliseconds: 1000)  // the same seed and clock would make the same identifiers again
        let reopened = try makeLibrary(directory, clock: clock)
        let restored = try JSONDecoder().decode(PersistentChangeToken.self, from: archived)
        #expect(restored == token && restored.hashValue == token.hashValue)
        #expect(try reopened.currentChangeToken == token)
        #expect(try reopened.fetchPersistentChanges(since: restored).count == 0)
        let created = try reopened.createAssets(1)
        let changes = Array(try reopened.fetchPersistentChanges(since: restored))
        #expect(changes.count == 1 && changes[0].changeDetails(for: .asset).insertedLocalIdentifiers == Set(created))
        #expect(changes[0].changeToken == (try reopened.currentChangeToken))
    }

    @Test("one change per change block, each with its own token and inserted, updated and deleted identifiers")
    func changesPerBlock() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let start = try library.currentChangeToken
        let assets = try library.createAssets(3)
        let album = try library.createAlbum("Trip", assets: [assets[0]])
        let other = try library.createAlbum("Other")
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: assets[1]).setFavorite(true)
            try changes.deleteAssets([assets[2]])
            try changes.albumChangeRequest(for: album).addAssets([assets[1]])
            try changes.deleteAlbums([other])
        }
        let changes = Array(try library.fetchPersistentChanges(since: start))
        #expect(changes.count == 4)
        #expect(changes[0].changeDetails(for: .asset).insertedLocalIdentifiers == Set(assets))
        #expect(changes[1].changeDetails(for: .assetCollection).insertedLocalIdentifiers == [album])
        #expect(changes[1].changeDetails(for: .asset).updatedLocalIdentifiers.isEmpty)
        let last = changes[3]
        #expect(last.changeDetails(for: .asset).updatedLocalIdentifiers == [assets[1]])
        #expect(last.changeDetails(for: .asset).deletedLocalIdentifiers == [assets[2]])
        #expect(last.changeDetails(for: .assetCollection).updatedLocalIdentifiers == [album])
        #expect(last.changeDetails(for: .assetCollection).deletedLocalIdentifiers == [other])
        #expect(last.changeToken == (try library.currentChangeToken))
        // Fetching from a change's token gives the changes after it.
        #expect(Array(try library.fetchPersistentChanges(since: changes[1].changeToken)) == Array(changes[2...]))
        #expect(Set(changes.map(\.changeToken)).count == 4)
    }

    @Test("a page of events from another device is one change, with that device's objects")
    func changesFromSync() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let token = try anna.currentChangeToken
        let assets = try ben.createAssets(2)
        let album = try ben.createAlbum("Ben's", assets: assets)
        try ben.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        #expect(try anna.applyRemoteEvents(try ben.allEvents()) == 5)
        let changes = Array(try anna.fetchPersistentChanges(since: token))
        #expect(changes.count == 1)
        #expect(changes[0].devices == ["ben-tablet"] && changes[0].changeBlocks.count == 3)
        #expect(changes[0].changeDetails(for: .asset).insertedLocalIdentifiers == [assets[1]])
        #expect(changes[0].changeDetails(for: .asset).deletedLocalIdentifiers == [assets[0]])
        #expect(changes[0].changeDetails(for: .assetCollection).insertedLocalIdentifiers == [album])
        // Duplicates change nothing and make no change.
        #expect(try anna.applyRemoteEvents(try ben.allEvents()) == 0)
        #expect(try anna.fetchPersistentChanges(since: changes[0].changeToken).count == 0)
    }

    /// The visible assets and live albums, as an app mirroring the library would fetch them.
    static func snapshot(_ library: PhotoLibrary) throws -> (assets: Set<String>, albums: Set<String>) {
        (
            Set(try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).map(\.localIdentifier)),
            Set(try library.fetchAssetCollections(with: .album).map(\.localIdentifier))
        )
    }

    @Test("applying the persistent changes since a token to the fetch at that token gives the fetch now", arguments: [3, 11, 29])
    func changesEqualDiffOfFetches(seed: UInt64) throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: seed, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: seed + 1, clock: clock)
        let server = ScriptedServer()
        var random = SeededRandomNumberGenerator(seed: seed)
        var marks: [(PersistentChangeToken, (assets: Set<String>, albums: Set<String>))] = [
            (try anna.currentChangeToken, try Self.snapshot(anna))
        ]
        for step in 0..<60 {
            let library = Bool.random(using: &random) ? anna : ben
            clock.advance(milliseconds: 10)
            try Self.randomChange(library, &random)
            if step % 7 == 6 { try server.sync(anna, ben) }
            if step % 10 == 9 { marks.append((try anna.currentChangeToken, try Self.snapshot(anna))) }
        }
        try server.sync(anna, ben)
        let now = try Self.snapshot(anna)
        for (token, then) in marks {
            var assets = then.assets, albums = then.albums
            for change in try anna.fetchPersistentChanges(since: token) {
                let a = change.changeDetails(for: .asset), b = change.changeDetails(for: .assetCollection)
                assets.formUnion(a.insertedLocalIdentifiers)
                assets.subtract(a.deletedLocalIdentifiers)
                albums.formUnion(b.insertedLocalIdentifiers)
                albums.subtract(b.deletedLocalIdentifiers)
            }
            #expect(assets == now.assets)
            #expect(albums == now.albums)
        }
    }

    /// A random change without recovery (which the persistent history reports as an update).
    static func randomChange(_ library: PhotoLibrary, _ random: inout SeededRandomNumberGenerator) throws {
        let assets = try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).map(\.localIdentifier)
        let albums = try library.fetchAssetCollections(with: .album).map(\.localIdentifier)
        switch Int.random(in: 0..<7, using: &random) {
        case 0, 1: try library.createAssets(Int.random(in: 1...3, using: &random))
        case 2: try library.createAlbum("Album \(Int.random(in: 0..<5, using: &random))")
        case 3:
            guard let asset = assets.randomElement(using: &random) else { return }
            let value = Bool.random(using: &random)
            try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(value) }
        case 4:
            guard let asset = assets.randomElement(using: &random) else { return }
            try library.performChangesAndWait { try $0.deleteAssets([asset]) }
        case 5:
            guard let album = albums.randomElement(using: &random), let asset = assets.randomElement(using: &random) else { return }
            try? library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets([asset]) }
        default:
            guard let album = albums.randomElement(using: &random) else { return }
            if Bool.random(using: &random) {
                try library.performChangesAndWait { try $0.deleteAlbums([album]) }
            } else {
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Renamed") }
            }
        }
    }

    @Test("a token from another library, or newer than the library, is refused with what to do")
    func foreignAndFutureTokens() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let other = try makeLibrary(directory, device: "anna-phone", name: "other.sqlite")
        try other.createAssets(1)
        let foreign = try other.currentChangeToken
        let error = try #require(throws: PhotoLibraryError.self) { try anna.fetchPersistentChanges(since: foreign) }
        #expect(error.code == .persistentChangeTokenExpired && error.message.contains("another library"))
        #expect(error.message.contains("store a new currentChangeToken"))
        let future = PersistentChangeToken(library: try anna.currentChangeToken.library, sequence: 99)
        expectError(.persistentChangeTokenExpired) { try anna.fetchPersistentChanges(since: future) }
    }

    @Test("persistent changes, history and audit queries read through indexes, never a table scan")
    func queryPlans() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        try library.createAssets(2)
        func plan(_ sql: String, _ values: [any SQLBindable]) throws -> String {
            try library.readDatabase { db in
                try db.rows("EXPLAIN QUERY PLAN " + sql, values) { $0.text(3) }.joined(separator: "; ")
            }
        }
        let blob = [UInt8](repeating: 1, count: 16)
        let changes = try plan("SELECT local_seq, object_id, type FROM events WHERE local_seq > ? ORDER BY local_seq", [Int64(0)])
        #expect(changes.contains("USING INTEGER PRIMARY KEY (rowid>?)"), "\(changes)")
        let history = try plan(
            "SELECT local_seq FROM events WHERE object_id = ? AND local_seq > ? ORDER BY local_seq LIMIT ?", [blob, Int64(0), Int64(1)])
        #expect(history.contains("USING INDEX events_by_object") || history.contains("USING COVERING INDEX events_by_object"), "\(history)")
        let members = try plan(
            "SELECT event_id FROM events WHERE object_id = ? AND type = ? AND instr(payload, ?) > 0 ORDER BY local_seq",
            [blob, "album.membersChanged", blob])
        #expect(members.contains("events_by_object"), "\(members)")
        let byTime = try plan(
            PhotoLibrary.auditSQL(condition: "(hlc, local_seq) > (?, ?) AND hlc <= ?", order: "hlc, local_seq"),
            [Int64(0), Int64(0), Int64(9), Int64(5)])
        #expect(byTime.contains("events_by_hlc"), "\(byTime)")
        let byBlock = try plan(
            PhotoLibrary.auditSQL(condition: "change_block = ? AND local_seq > ?", order: "local_seq"), [blob, Int64(0), Int64(5)])
        #expect(byBlock.contains("events_by_change_block"), "\(byBlock)")
        let byDevice = try plan(
            PhotoLibrary.auditSQL(condition: "device_id = ? AND device_seq > ?", order: "device_seq"), ["anna-phone", Int64(0), Int64(5)])
        #expect(byDevice.contains("events_by_device"), "\(byDevice)")
        for text in [changes, history, members, byTime, byBlock, byDevice] { #expect(!text.contains("SCAN events"), "\(text)") }
    }

    @Test("audit queries page by device, by time range and by change block")
    func auditQueries() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        try anna.createAssets(5)
        clock.advance(milliseconds: 1000)
        let middle = HLCTimestamp(milliseconds: clock.read(), counter: 0)
        try ben.createAssets(4)
        clock.advance(milliseconds: 1000)
        try anna.createAssets(3)
        _ = try anna.applyRemoteEvents(try ben.allEvents())
        func all(_ query: (AuditCursor?) throws -> AuditPage) rethrows -> [AuditEvent] {
            var events: [AuditEvent] = []
            var cursor: AuditCursor?
            repeat {
                let page = try query(cursor)
                #expect(page.events.count <= 2)
                events += page.events
                cursor = page.next
            } while cursor != nil
            return events
        }
        let annas = try all { try anna.events(fromDevice: "anna-phone", after: $0, limit: 2) }
        #expect(annas.map(\.deviceSequence) == Array(1...8))
        let window = try all { try anna.events(in: middle...HLCTimestamp(milliseconds: clock.read() - 1, counter: 0), after: $0, limit: 2) }
        #expect(window.count == 4 && window.allSatisfy { $0.device == "ben-tablet" })
        let block = annas[0].changeBlock
        let blockEvents = try all { try anna.events(inChangeBlock: block, after: $0, limit: 2) }
        #expect(
            blockEvents.count == 5 && blockEvents.allSatisfy { $0.changeBlock == block && $0.localIdentifier?.hasSuffix("/L0/001") == true }
        )
    }
}
