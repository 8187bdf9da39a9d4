import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

/// Applies change details the way a collection view does: removals (old indexes), insertions
/// (indexes after removals and insertions), then moves taken out and put in at their targets.
func apply<T: PhotoObject>(_ details: FetchResultChangeDetails<T>, to before: [T]) -> [UUID] {
    var ids = before.map(\.id)
    for index in details.removedIndexes.reversed() { ids.remove(at: index) }
    for (index, object) in zip(details.insertedIndexes, details.insertedObjects) { ids.insert(object.id, at: index) }
    let moved = details.moves.map { (id: ids[$0.from], to: $0.to) }
    for index in details.moves.map(\.from).sorted().reversed() { ids.remove(at: index) }
    for move in moved.sorted(by: { $0.to < $1.to }) { ids.insert(move.id, at: move.to) }
    return ids
}

/// An asset snapshot for index arithmetic tests.
func imageAsset(_ index: Int) -> Asset {
    Asset(
        id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0, UInt8(index))), mediaType: .image, mediaSubtypes: [],
        pixelWidth: 1, pixelHeight: 1, duration: 0, creationDate: nil, modificationDate: Date(timeIntervalSince1970: 0),
        addedDate: Date(timeIntervalSince1970: 0), location: nil, isFavorite: false, isHidden: false, isDeleted: false,
        deletionDate: nil, sourceDevice: "test", hasAdjustments: false)
}

@Suite("Change details and observers")
struct ChangeDetailsTests {
    func assets(_ library: PhotoLibrary, _ album: String) throws -> FetchResult<Asset> {
        try library.fetchAssets(in: library.album(album))
    }

    @Test("hand-worked example: removal, insertion, change and move in one commit")
    func handWorkedExample() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let a = try library.createAssets(5)
        let album = try library.createAlbum("Trip", assets: a)  // [a0 a1 a2 a3 a4]
        let before = try assets(library, album)
        let new = try library.createAssets(1)
        try library.performChangesAndWait { changes in
            let request = try changes.albumChangeRequest(for: album)
            try request.removeAssets([a[1]])  // [a0 a2 a3 a4]
            try request.insertAssets([new[0]], at: [0])  // [n a0 a2 a3 a4]
            try request.moveAssets(at: [4], to: 1)  // [n a4 a0 a2 a3]
            try changes.assetChangeRequest(for: a[2]).setFavorite(true)
        }
        let observer = RecordingObserver()
        library.register(observer)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: a[0]).setHidden(false) }
        let change = try #require(observer.next())
        let details = try #require(change.changeDetails(for: before))
        // Before [a0 a1 a2 a3 a4] → after [n a4 a0 a2 a3].
        #expect(details.removedIndexes == IndexSet([1]))
        #expect(details.insertedIndexes == IndexSet([0]))
        // After removals and insertions: [n a0 a2 a3 a4]; a4 moves from 4 to 1.
        #expect(details.moves.map { [$0.from, $0.to] } == [[4, 1]])
        #expect(details.changedIndexes.contains(3))  // a2, favorite, at index 3 after the changes
        #expect(details.removedObjects.map(\.localIdentifier) == [a[1]])
        #expect(details.insertedObjects.map(\.localIdentifier) == new)
        #expect(apply(details, to: before.allObjects) == details.fetchResultAfterChanges.map(\.id))
        #expect(details.fetchResultAfterChanges.map(\.localIdentifier) == [new[0], a[4], a[0], a[2], a[3]])
    }

    @Test("a fetch result the commit did not affect has no details")
    func unaffected() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let a = try library.createAssets(2)
        let trip = try library.createAlbum("Trip", assets: a)
        let pets = try library.createAlbum("Pets")
        let before = try assets(library, trip)
        let observer = RecordingObserver()
        library.register(observer)
        try library.performChangesAndWait { try $0.albumChangeRequest(for: pets).setTitle("Cats") }
        let change = try #require(observer.next())
        #expect(change.changeDetails(for: before) == nil)
        #expect(change.changedAlbumIdentifiers == [pets])
        let albums = try library.fetchAssetCollections(with: .album)
        #expect(change.changeDetails(for: albums[1])?.objectAfterChanges?.title == "Cats")
    }

    @Test("random edits: applying the details to the old result always gives the new one", arguments: 0..<20)
    func randomDetails(seed: Int) throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory, seed: UInt64(seed))
        var random = SeededRandomNumberGenerator(seed: UInt64(seed))
        let a = try library.createAssets(12)
        let album = try library.createAlbum("Trip", assets: Array(a.prefix(8)))
        var before = try assets(library, album)
        let observer = RecordingObserver()
        library.register(observer)
        for _ in 0..<10 {
            let eventsBefore = try library.allEvents().count
            try library.performChangesAndWait { changes in
                let request = try changes.albumChangeRequest(for: album)
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let count = try request.assetCount
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0 where count > 0: try request.removeAssets(at: [Int.random(in: 0..<count, using: &random)])
                    case 1 where count > 1:
                        try request.moveAssets(
                            at: [Int.random(in: 0..<count, using: &random)], to: Int.random(in: 0..<count, using: &random))
                    case 2: try request.addAssets([a.randomElement(using: &random)!])
                    default: try changes.assetChangeRequest(for: a.randomElement(using: &random)!).setFavorite(Bool.random(using: &random))
                    }
                }
            }
            guard try library.allEvents().count > eventsBefore else { continue }
            let change = try #require(observer.next())
            let after = try assets(library, album)
            if let details = change.changeDetails(for: before) {
                #expect(apply(details, to: before.allObjects) == after.map(\.id))
                #expect(details.fetchResultAfterChanges.map(\.id) == after.map(\.id))
                before = details.fetchResultAfterChanges
            } else {
                #expect(before.allObjects == after.allObjects)
            }
        }
    }

    @Test("any two snapshots: applying the details to the old one gives the new one", arguments: 0..<500)
    func arbitrarySnapshots(seed: Int) {
        var random = SeededRandomNumberGenerator(seed: UInt64(seed))
        let pool = (0..<12).map { index in imageAsset(index) }
        let old = Array(pool.shuffled(using: &random).prefix(Int.random(in: 0...10, using: &random)))
        let new = Array(pool.shuffled(using: &random).prefix(Int.random(in: 0...10, using: &random)))
        let details = FetchResultChangeDetails(
            before: FetchResult(old, query: .assets(FetchOptions())), after: FetchResult(new, query: .assets(FetchOptions())))
        #expect(apply(details, to: old) == new.map(\.id))
        #expect(details.removedObjects.allSatisfy { !new.contains($0) })
        #expect(details.insertedObjects.allSatisfy { !old.contains($0) })
        // Moves are minimal: objects that keep their relative order are not moved.
        let survivors = old.filter { new.contains($0) }.map { new.firstIndex(of: $0)! }
        #expect(details.moves.count == survivors.count - longestIncreasingSubsequence(survivors).count)
    }

    @Test("observers are held weakly and can be unregistered")
    func unregister() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let observer = RecordingObserver()
        library.register(observer)
        library.unregisterChangeObserver(observer)
        try library.createAssets(1)
        // Every notification of the commit has been handed out once the observers' queue is drained.
        library.flushNotifications()
        #expect(observer.pendingCount == 0)
    }
}
