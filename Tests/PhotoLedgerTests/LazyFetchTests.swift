import Foundation
import LedgerCore
import LedgerStore
import Testing

@testable import PhotoLedger

/// Fetch results larger than one batch: identifiers and versions read at the fetch, objects read
/// lazily in batches; album fetches read the membership rows only.
@Suite("Lazy fetch results")
struct LazyFetchTests {
    /// A library with an album of `count` assets (in creation order).
    func albumLibrary(_ directory: TemporaryDirectory, count: Int) throws -> (PhotoLibrary, String, [String]) {
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(count)
        let album = try library.createAlbum("Big", assets: assets)
        return (library, album, assets)
    }

    @Test("a result larger than a batch holds every identifier in order and reads the rest on access")
    func lazyObjects() throws {
        let directory = try TemporaryDirectory()
        let count = FetchResult<Asset>.batchSize * 2 + 37
        let (library, album, assets) = try albumLibrary(directory, count: count)
        let result = try library.fetchAssets(in: library.album(album))
        #expect(result.count == count)
        #expect(result.map(\.localIdentifier) == assets)
        #expect(result.lastObject?.localIdentifier == assets.last)
        #expect(try result.objects(at: IndexSet([3, count - 1])).map(\.localIdentifier) == [assets[3], assets[count - 1]])
        // The same object each time it is asked for.
        #expect(result[count - 5] == result.object(at: count - 5))
        // All Photos is lazy too, in creation order here.
        let all = try library.fetchAssets()
        #expect(all.count == count)
        #expect(all.allObjects.map(\.localIdentifier) == assets)
    }

    @Test("membership is frozen at the fetch; an object first read after a change shows the change")
    func frozenMembership() throws {
        let directory = try TemporaryDirectory()
        let count = FetchResult<Asset>.batchSize + 20
        let (library, album, assets) = try albumLibrary(directory, count: count)
        let result = try library.fetchAssets(in: library.album(album))
        let late = count - 3
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: assets[late]).setFavorite(true)
            try changes.assetChangeRequest(for: assets[0]).setFavorite(true)
            try changes.deleteAssets([assets[1]])
            try changes.albumChangeRequest(for: album).addAssets(try library.createAssetsInBlock(changes, 2))
        }
        #expect(result.count == count)
        #expect(result.map(\.localIdentifier) == assets)
        #expect(result[0].isFavorite == false)  // read at the fetch, in the first batch
        #expect(result[late].isFavorite == true)  // first read after the change
        #expect(try library.fetchAssets(in: library.album(album)).count == count + 1)
    }

    @Test("change details of a lazy result: versions tell which objects changed, inserted objects are read")
    func changeDetails() throws {
        let directory = try TemporaryDirectory()
        let count = FetchResult<Asset>.batchSize * 3
        let (library, album, assets) = try albumLibrary(directory, count: count)
        let before = try library.fetchAssets(in: library.album(album))
        let observer = RecordingObserver()
        library.register(observer)
        let added = try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: assets[250]).setFavorite(true)
            try changes.assetChangeRequest(for: assets[7]).setLocation(Location(latitude: 1, longitude: 2))
            try changes.deleteAssets([assets[120]])
            let new = try library.createAssetsInBlock(changes, 1)
            try changes.albumChangeRequest(for: album).insertAssets(new, at: [200])
            return new[0].localIdentifier
        }
        let change = try #require(observer.next())
        let details = try #require(change.changeDetails(for: before))
        #expect(details.removedIndexes == IndexSet([120]))
        #expect(details.removedObjects.map(\.localIdentifier) == [assets[120]])
        #expect(details.insertedIndexes == IndexSet([200]))
        #expect(details.insertedObjects.map(\.localIdentifier) == [added])
        // After the removal at 120 and the insertion at 200, asset 250 stays at 250.
        #expect(details.changedIndexes == IndexSet([7, 250]))
        #expect(details.changedObjects.map(\.isFavorite) == [false, true])
        #expect(details.moves.isEmpty)
        #expect(apply(details, to: before.allObjects) == details.fetchResultAfterChanges.map(\.id))
        // A commit that touches nothing in the result gives no details.
        try library.createAssets(1)
        #expect(try #require(observer.next()).changeDetails(for: details.fetchResultAfterChanges) == nil)
    }

    @Test("objects are read lazily inside a change block without waiting for it or seeing its uncommitted changes")
    func readInsideChangeBlock() throws {
        let directory = try TemporaryDirectory()
        let count = FetchResult<Asset>.batchSize + 50
        let (library, _, assets) = try albumLibrary(directory, count: count)
        let result = try library.fetchAssets()
        let index = count - 1
        let seen = try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: assets[index]).setFavorite(true)
            return result[index]
        }
        #expect(seen.localIdentifier == assets[index])
        #expect(seen.isFavorite == false)
        #expect(try library.fetchAssets(withLocalIdentifiers: [assets[index]]).first?.isFavorite == true)
    }

    @Test("an album fetch follows each member's state: hidden, deleted, recovered, purged, not yet created")
    func memberState() throws {
        let directory = try TemporaryDirectory()
        let (library, album, assets) = try albumLibrary(directory, count: 6)
        func members(includeHidden: Bool = false) throws -> [String] {
            try library.fetchAssets(in: library.album(album), options: FetchOptions(includeHiddenAssets: includeHidden)).map(
                \.localIdentifier)
        }
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: assets[1]).setHidden(true)
            try changes.deleteAssets([assets[2], assets[3]])
        }
        #expect(try members() == [assets[0], assets[4], assets[5]])
        #expect(try members(includeHidden: true) == [assets[0], assets[1], assets[4], assets[5]])
        #expect(try library.album(album).estimatedAssetCount == 3)
        try library.performChangesAndWait { changes in
            try changes.recoverAssets([assets[2]])
            try changes.purgeAssets([assets[3]])
            try changes.assetChangeRequest(for: assets[1]).setHidden(false)
        }
        #expect(try members() == [assets[0], assets[1], assets[2], assets[4], assets[5]])
        #expect(try library.album(album).estimatedAssetCount == 5)
        // Every membership row carries its asset's state and version, as a rebuild computes them.
        let carried = try library.readDatabase { db in
            try db.rows(
                """
                SELECT count(*) FROM album_members m JOIN assets a ON a.asset_id = m.asset_id
                WHERE m.asset_version = a.modification_hlc
                  AND m.asset_state = CASE WHEN a.created = 1 AND a.purged = 0 AND a.trash_cl % 2 = 1 THEN 2 - a.hidden ELSE 0 END
                """
            ) { $0.int64(0) }[0]
        }
        #expect(carried == 6)
        let dump = try library.projectionDump()
        try library.rebuild()
        #expect(try library.projectionDump() == dump)
    }

    @Test("a membership that arrives before its asset is not shown until the asset's creation arrives")
    func memberBeforeAsset() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let asset = try anna.createAssets(1)
        let album = try anna.createAlbum("Trip", assets: asset)
        let events = try anna.allEvents()
        let ben = try makeLibrary(directory, device: "ben-phone", seed: 2)
        let creation = try #require(events.firstIndex { $0.type == EventType.assetCreated.rawValue })
        var rest = events
        let created = rest.remove(at: creation)
        _ = try ben.applyRemoteEvents(rest, serverSequences: rest.indices.map { Int64($0 + 2) }, chain: [])
        #expect(try ben.fetchAssets(in: ben.album(album)).count == 0)
        #expect(try ben.album(album).estimatedAssetCount == 0)
        _ = try ben.applyRemoteEvents([created], serverSequences: [1], chain: [])
        #expect(try ben.fetchAssets(in: ben.album(album)).map(\.localIdentifier) == asset)
        #expect(try ben.album(album).estimatedAssetCount == 1)
        let dump = try ben.projectionDump()
        try ben.rebuild()
        #expect(try ben.projectionDump() == dump)
        // One event per batch: the membership is written before its asset, which then passes
        // its state on to it.
        try ben.rebuild(batchSize: 1)
        #expect(try ben.projectionDump() == dump)
    }

    @Test("migration 6 gives existing memberships their assets' state and version")
    func migration() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("old.sqlite").path
        let all = try Migrator.library()
        do {
            let db = try Database(path: path)
            try Migrator(set: "Library", migrations: Array(all.migrations.prefix(5))).migrate(db)
            let album: [UInt8] = Array(repeating: 0xA0, count: 16)
            func asset(_ n: UInt8) -> [UInt8] { Array(repeating: n, count: 16) }
            try db.execute("INSERT INTO albums (album_id, created) VALUES (?, 1)", [album])
            // shown, hidden, in Recently Deleted, purged; the fifth member has no asset row yet.
            for (n, hidden, trash, purged) in [(1, 0, 1, 0), (2, 1, 1, 0), (3, 0, 2, 0), (4, 0, 1, 1)] as [(UInt8, Int64, Int64, Int64)] {
                try db.execute(
                    "INSERT INTO assets (asset_id, created, hidden, trash_cl, purged, modification_hlc) VALUES (?, 1, ?, ?, ?, ?)",
                    [asset(n), hidden, trash, purged, Int64(n) * 1000])
            }
            for n in UInt8(1)...5 {
                try db.execute(
                    "INSERT INTO album_members (album_id, asset_id, cl, position) VALUES (?, ?, 1, ?)", [album, asset(n), "a\(n)"])
            }
        }
        let db = try Database(path: path)
        #expect(try all.migrate(db).contains(6))
        let rows = try db.rows("SELECT asset_state, asset_version FROM album_members ORDER BY position") { [$0.int64(0), $0.int64(1)] }
        #expect(rows == [[2, 1000], [1, 2000], [0, 3000], [0, 4000], [0, 0]])
    }
}

extension PhotoLibrary {
    /// Creates `count` assets inside an open change block.
    func createAssetsInBlock(_ changes: LibraryChanges, _ count: Int) throws -> [ObjectPlaceholder] {
        try (0..<count).map { _ in try changes.createAsset(imageCreation()).placeholderForCreatedAsset }
    }
}
