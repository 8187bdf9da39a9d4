import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

/// An observer that holds its first notification until ``open()`` is called, so commits pile up
/// behind a slow app; it records every notification.
final class GatedObserver: PhotoLibraryChangeObserver, @unchecked Sendable {
    // Safe to share: `changes` is touched only under `lock`.
    private let lock = NSLock()
    private var changes: [PhotoLibraryChange] = []
    private let gate = DispatchSemaphore(value: 0)
    /// Signalled when the first notification arrives (and waits at the gate).
    let entered = DispatchSemaphore(value: 0)
    private var first = true

    func photoLibraryDidChange(_ change: PhotoLibraryChange) {
        let isFirst = lock.withLock {
            defer { first = false }
            return first
        }
        if isFirst {
            entered.signal()
            gate.wait()
        }
        lock.withLock { changes.append(change) }
    }

    /// Lets the notifications through.
    func open() { gate.signal() }

    /// Every notification received so far.
    var received: [PhotoLibraryChange] { lock.withLock { changes } }
}

/// Applies change details to an app's copy of a fetch result the way a collection view does,
/// objects included: removals, insertions, reloads of the changed objects, then moves.
func applyObjects<T: PhotoObject>(_ details: FetchResultChangeDetails<T>, to before: [T]) -> [T] {
    var objects = before
    for index in details.removedIndexes.reversed() { objects.remove(at: index) }
    for (index, object) in zip(details.insertedIndexes, details.insertedObjects) { objects.insert(object, at: index) }
    let moved = details.moves.map { (object: objects[$0.from], to: $0.to) }
    for index in details.moves.map(\.from).sorted().reversed() { objects.remove(at: index) }
    for move in moved.sorted(by: { $0.to < $1.to }) { objects.insert(move.object, at: move.to) }
    for (index, object) in zip(details.changedIndexes, details.changedObjects) { objects[index] = object }
    return objects
}

/// The fetch results an app holds, and what a new fetch returns for each.
struct HeldResults {
    var assets: [String: FetchResult<Asset>]
    var collections: [String: FetchResult<AssetCollection>]

    /// Fetches every result afresh.
    static func fetch(_ library: PhotoLibrary, album: String?) throws -> HeldResults {
        var assets: [String: FetchResult<Asset>] = [
            "all photos": try library.fetchAssets(),
            "favorites": try library.fetchAssets(in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumFavorites)[0]),
            "recently deleted": try library.fetchAssets(
                in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted)[0]),
            "newest four": try library.fetchAssets(
                options: FetchOptions(sortDescriptors: [SortDescriptor(.creationDate, ascending: false)], fetchLimit: 4)),
            "hidden included": try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)),
        ]
        if let album { assets["album"] = try library.fetchAssets(in: library.album(album)) }
        return HeldResults(assets: assets, collections: ["albums": try library.fetchAssetCollections(with: .album)])
    }

    /// Applies one notification to every result, checking each against what a fetch returned
    /// right after that commit.
    mutating func apply(_ change: PhotoLibraryChange, expecting expected: HeldResults, step: Int) {
        for (name, held) in assets {
            assets[name] = Self.applyDetails(change, to: held, expected: expected.assets[name]!, name: "\(name), commit \(step)")
        }
        for (name, held) in collections {
            collections[name] = Self.applyDetails(change, to: held, expected: expected.collections[name]!, name: "\(name), commit \(step)")
        }
    }

    static func applyDetails<T: PhotoObject>(_ change: PhotoLibraryChange, to held: FetchResult<T>, expected: FetchResult<T>, name: String)
        -> FetchResult<T>
    {
        guard let details = change.changeDetails(for: held) else {
            #expect(held.allObjects == expected.allObjects, "\(name): no details, so no change")
            return held
        }
        #expect(details.hasIncrementalChanges, "\(name)")
        #expect(PhotoLedgerTests.apply(details, to: held.allObjects) == expected.map(\.id), "\(name): indexes applied")
        #expect(applyObjects(details, to: held.allObjects) == expected.allObjects, "\(name): objects applied")
        #expect(details.fetchResultAfterChanges.allObjects == expected.allObjects, "\(name): the result after the changes")
        return details.fetchResultAfterChanges
    }
}

/// Random changes of the projections (no media): assets, their properties, Recently Deleted,
/// albums and their order.
enum RandomCommits {
    /// Makes one random change block on `library`; returns whether it recorded events.
    @discardableResult
    static func make(on library: PhotoLibrary, album: String, random: inout SeededRandomNumberGenerator) throws -> Bool {
        let present = try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).map(\.localIdentifier)
        let trashed = try library.fetchAssets(in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted)[0])
            .map(\.localIdentifier)
        let albums = try library.fetchAssetCollections(with: .album).map(\.localIdentifier)
        let albumCount = try library.fetchAssets(in: library.album(album)).count
        let before = try library.allEvents().count
        let choice = Int.random(in: 0..<12, using: &random)
        let date = Date(timeIntervalSince1970: Double(Int.random(in: 1_600_000_000...1_600_100_000, using: &random)))
        let pick = present.isEmpty ? nil : present.randomElement(using: &random)
        let flag = Bool.random(using: &random)
        let index = Int.random(in: 0...max(0, albumCount), using: &random)
        let other = Int.random(in: 0..<max(1, albumCount), using: &random)
        let title = ["Trip", "Pets", "Work"].randomElement(using: &random)!
        let second = present.randomElement(using: &random)
        let renamed = albums.randomElement(using: &random)!
        try library.performChangesAndWait { changes in
            switch choice {
            case 0:
                _ = try changes.createAsset(imageCreation(favorite: flag, hidden: index % 5 == 0, date: date))
            case 1: if let pick { try changes.assetChangeRequest(for: pick).setFavorite(flag) }
            case 2: if let pick { try changes.assetChangeRequest(for: pick).setHidden(flag) }
            case 3: if let pick { try changes.deleteAssets([pick]) }
            case 4: if let back = trashed.first { try changes.recoverAssets([back]) }
            case 5: if let pick, let second { try changes.albumChangeRequest(for: album).addAssets([pick, second]) }
            case 6: if albumCount > 0 { try changes.albumChangeRequest(for: album).removeAssets(at: [other]) }
            case 7: if albumCount > 1 { try changes.albumChangeRequest(for: album).moveAssets(at: [other], to: min(index, albumCount - 1)) }
            case 8: try changes.albumChangeRequest(for: renamed).setTitle(title + (flag ? " 2" : ""))
            case 9: _ = try changes.createAlbum(title: title)
            case 10: if let pick { try changes.assetChangeRequest(for: pick).setCreationDate(date) }
            default:
                // Several changes in one block.
                if let pick, let second {
                    try changes.assetChangeRequest(for: pick).setFavorite(!flag)
                    try changes.assetChangeRequest(for: second).setHidden(flag)
                    let request = try changes.albumChangeRequest(for: album)
                    if !(try library.isMember(pick, of: album)) { try request.insertAssets([pick], at: [0]) }
                }
            }
        }
        return try library.allEvents().count > before
    }
}

extension PhotoLibrary {
    fileprivate func isMember(_ asset: String, of album: String) throws -> Bool {
        try readDatabase { db in
            let albumID = LocalIdentifier(album)!.uuid, assetID = LocalIdentifier(asset)!.uuid
            return try AlbumMembers.ordered(albumID, in: db, includeHidden: true).contains { $0.asset == assetID }
        }
    }

}

@Suite("Change details per commit")
struct PerCommitChangeTests {
    static let sequences = TestIntensity.count(local: 6, full: 200, variable: "PHOTOLEDGER_CHANGE_SEQUENCES")

    @Test(
        "a slow observer gets one notification per commit, in order; each applied gives the fetch right after it", .serialized,
        arguments: 0..<sequences)
    func slowObserverLocalCommits(seed: Int) throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let library = try makeLibrary(directory, seed: UInt64(seed), clock: clock)
        var random = SeededRandomNumberGenerator(seed: UInt64(1000 + seed))
        let dates = (0..<8).map { Date(timeIntervalSince1970: 1_600_000_000 + Double($0 * 1000)) }
        let assets = try library.createAssets(8, dates: dates)
        let album = try library.createAlbum("Trip", assets: Array(assets.prefix(5)))
        var held = try HeldResults.fetch(library, album: album)
        let observer = GatedObserver()
        library.register(observer)
        var expected: [HeldResults] = []
        for _ in 0..<15 {
            clock.advance(milliseconds: 10)
            guard try RandomCommits.make(on: library, album: album, random: &random) else { continue }
            expected.append(try HeldResults.fetch(library, album: album))
        }
        observer.open()
        library.flushNotifications()
        let received = observer.received
        #expect(received.count == expected.count, "one notification per commit")
        #expect(received.map { $0.records[0].generation } == received.indices.map { Int64(received[0].records[0].generation) + Int64($0) })
        for (step, change) in received.enumerated() where step < expected.count {
            #expect(change.commitCount == 1)
            held.apply(change, expecting: expected[step], step: step)
        }
        let fresh = try HeldResults.fetch(library, album: album)
        for (name, result) in held.assets { #expect(result.allObjects == fresh.assets[name]!.allObjects, "\(name) equals a new fetch") }
        #expect(held.collections["albums"]!.allObjects == fresh.collections["albums"]!.allObjects)
    }

    @Test(
        "pulled pages: one notification per applied page, interleaved with local commits, each applied in order", .serialized,
        arguments: 0..<sequences)
    func syncedPages(seed: Int) throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: UInt64(seed), clock: clock)
        let ben = try makeLibrary(directory, device: "ben-laptop", seed: UInt64(seed) + 100, clock: clock)
        var random = SeededRandomNumberGenerator(seed: UInt64(2000 + seed))
        let assets = try anna.createAssets(6, dates: (0..<6).map { Date(timeIntervalSince1970: 1_600_000_000 + Double($0 * 500)) })
        let album = try anna.createAlbum("Trip", assets: Array(assets.prefix(4)))
        var sent = try anna.allEvents()
        try ben.applyRemoteEvents(sent)
        var held = try HeldResults.fetch(ben, album: album)
        let observer = GatedObserver()
        ben.register(observer)
        var expected: [HeldResults] = []
        for _ in 0..<20 {
            clock.advance(milliseconds: 10)
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                // A local change on the device that observes.
                guard try RandomCommits.make(on: ben, album: album, random: &random) else { continue }
            default:
                try RandomCommits.make(on: anna, album: album, random: &random)
                let all = try anna.allEvents()
                let unsent = all.filter { event in !sent.contains { $0.id == event.id } }
                guard !unsent.isEmpty else { continue }
                // A page of a random size: a page can end inside a change block.
                let page = Array(unsent.prefix(Int.random(in: 1...unsent.count, using: &random)))
                guard try ben.applyRemoteEvents(page, prefolded: Bool.random(using: &random)) > 0 else { continue }
                sent += page
            }
            expected.append(try HeldResults.fetch(ben, album: album))
        }
        observer.open()
        ben.flushNotifications()
        let received = observer.received
        #expect(received.count == expected.count, "one notification per page and per change block")
        for (step, change) in received.enumerated() where step < expected.count {
            held.apply(change, expecting: expected[step], step: step)
        }
        let fresh = try HeldResults.fetch(ben, album: album)
        for (name, result) in held.assets { #expect(result.allObjects == fresh.assets[name]!.allObjects, "\(name) equals a new fetch") }
    }

    @Test("an older write from another device that wins a field is a change, though the asset's version did not move")
    func olderWriteWins() throws {
        let directory = try TemporaryDirectory()
        let annaClock = TestClock(), benClock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: annaClock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: benClock)
        let asset = try anna.createAssets(1)[0]
        let shared = try anna.allEvents()
        try ben.applyRemoteEvents(shared)
        annaClock.advance(milliseconds: 10)
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(true) }
        // Ben's clock is far ahead: his later edit of another field gives the asset a newer version.
        benClock.advance(milliseconds: 60_000)
        try ben.performChangesAndWait { try $0.assetChangeRequest(for: asset).setCreationDate(Date(timeIntervalSince1970: 1_600_000_000)) }
        let photos = try ben.fetchAssets()
        let observer = RecordingObserver()
        ben.register(observer)
        try ben.applyRemoteEvents(try anna.allEvents().filter { event in !shared.contains { $0.id == event.id } })
        let change = try #require(observer.next())
        let details = try #require(change.changeDetails(for: photos))
        #expect(details.changedIndexes == [0] && details.changedObjects[0].isFavorite)
        #expect(details.fetchResultAfterChanges.allObjects == (try ben.fetchAssets()).allObjects)
    }

    @Test("an edited photo is reported as content changed; a favorite is not")
    func contentChanged() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let id = try library.performChangesAndWait { try $0.createAsset(from: samplePhoto(1)).placeholderForCreatedAsset.localIdentifier }
        let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [id]).first)
        let photos = try library.fetchAssets()
        let observer = RecordingObserver()
        library.register(observer)
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: id).setContentEditingOutput(
                ContentEditingOutput(
                    renderedContent: .data(samplePhoto(2)), adjustmentFormatIdentifier: "com.example.filter", adjustmentFormatVersion: "1",
                    adjustmentData: Data("sepia".utf8)))
        }
        let edit = try #require(observer.next())
        let details = try #require(edit.changeDetails(for: asset))
        #expect(details.assetContentChanged && !details.objectWasDeleted)
        #expect(details.objectAfterChanges?.hasAdjustments == true)
        #expect(edit.contentChangedAssetIdentifiers == [id])
        let resultDetails = try #require(edit.changeDetails(for: photos))
        #expect(resultDetails.changedIndexes == [0] && resultDetails.changedObjects[0].hasAdjustments)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: id).setFavorite(true) }
        let favorite = try #require(observer.next())
        #expect(favorite.changeDetails(for: details.objectAfterChanges!)?.assetContentChanged == false)
        #expect(favorite.contentChangedAssetIdentifiers.isEmpty)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: id).revertAssetContentToOriginal() }
        let revert = try #require(observer.next())
        #expect(revert.changeDetails(for: asset)?.assetContentChanged == true)
        #expect(revert.changeDetails(for: asset)?.objectAfterChanges?.hasAdjustments == false)
    }

    @Test("a result whose state the commit could not capture gets details without indexes: reload")
    func notIncremental() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(3)
        let tracked = try library.fetchAssets()
        // A result of a query no fetch result tracks, as one fetched while a commit was made.
        let untracked = FetchResult(
            tracked.allObjects, versions: tracked.versions, query: .assets(FetchOptions(fetchLimit: 77)), generation: tracked.generation)
        let observer = RecordingObserver()
        library.register(observer)
        try library.performChangesAndWait { try $0.deleteAssets([assets[1]]) }
        let change = try #require(observer.next())
        let exact = try #require(change.changeDetails(for: tracked))
        #expect(exact.hasIncrementalChanges && exact.removedIndexes == [1])
        let reload = try #require(change.changeDetails(for: untracked))
        #expect(!reload.hasIncrementalChanges)
        #expect(reload.removedIndexes.isEmpty && reload.insertedIndexes.isEmpty && reload.changedIndexes.isEmpty && !reload.hasMoves)
        #expect(reload.fetchResultAfterChanges.map(\.localIdentifier) == [assets[0], assets[2]])
        // A result fetched after the commit has nothing to apply.
        #expect(change.changeDetails(for: try library.fetchAssets()) == nil)
    }

    @Test("a coalescing observer gets the commits made while it was busy as one change")
    func coalescing() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(5)
        let before = try library.fetchAssets()
        let observer = GatedObserver()
        library.register(observer, coalescing: true)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: assets[0]).setFavorite(true) }
        #expect(observer.entered.wait(timeout: TestPatience.dispatchDeadline) == .success)
        let afterFirst = try library.fetchAssets()
        for asset in assets.dropFirst() { try library.performChangesAndWait { try $0.deleteAssets([asset]) } }
        observer.open()
        library.flushNotifications()
        let received = observer.received
        #expect(received.map(\.commitCount) == [1, 4])
        let first = try #require(received.first.flatMap { $0.changeDetails(for: before) })
        #expect(first.fetchResultAfterChanges.allObjects == afterFirst.allObjects)
        let rest = try #require(received.last.flatMap { $0.changeDetails(for: first.fetchResultAfterChanges) })
        #expect(rest.removedIndexes == IndexSet(1...4))
        #expect(rest.fetchResultAfterChanges.map(\.localIdentifier) == [assets[0]])
        #expect(received.last?.changedAssetIdentifiers == Set(assets.dropFirst()))
    }

    @Test("the change stream yields one element per commit, in commit order")
    func changeStream() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(4)
        var photos = try library.fetchAssets()
        let stream = library.changeStream()
        for asset in assets { try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(true) } }
        try library.performChangesAndWait { try $0.deleteAssets([assets[2]]) }
        var seen: [Set<String>] = []
        for await change in stream {
            seen.append(change.changedAssetIdentifiers)
            if let details = change.changeDetails(for: photos) { photos = details.fetchResultAfterChanges }
            if seen.count == 5 { break }
        }
        #expect(seen == assets.map { [$0] } + [[assets[2]]])
        #expect(photos.allObjects == (try library.fetchAssets()).allObjects)
        #expect(photos.allObjects.allSatisfy { $0.isFavorite })
    }

    @Test("performChanges with a completion handler reports the value, or the error with nothing changed")
    func completionHandler() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let created: Result<String, any Error> = await withCheckedContinuation { continuation in
            library.performChanges({ try $0.createAsset(imageCreation()).placeholderForCreatedAsset.localIdentifier }) {
                continuation.resume(returning: $0)
            }
        }
        let id = try created.get()
        #expect(try library.fetchAssets().map(\.localIdentifier) == [id])
        let failed: Result<Void, any Error> = await withCheckedContinuation { continuation in
            library.performChanges({ changes in
                _ = try changes.createAsset(imageCreation())
                try changes.albumChangeRequest(for: "00000000-0000-0000-0000-000000000000/L0/040").setTitle("x")
            }) { continuation.resume(returning: $0) }
        }
        #expect(throws: PhotoLibraryError.self) { try failed.get() }
        #expect(try library.fetchAssets().count == 1, "the failed block changed nothing")
    }

    @Test("a commit right after a captured one updates the held fetches in place; applied details equal new fetches")
    func updatedInPlace() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let ids = try library.createAssets(120, dates: (0..<120).map { Date(timeIntervalSince1970: Double($0 * 60)) })
        var photos = try library.fetchAssets()
        var favorites = try library.fetchAssets(in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumFavorites)[0])
        let observer = RecordingObserver()
        library.register(observer)
        // Photos move across the first hundred (read whole) and out of it; one is hidden, one a favorite.
        for (step, id) in [ids[5], ids[110], ids[0], ids[60]].enumerated() {
            try library.performChangesAndWait { changes in
                try changes.assetChangeRequest(for: id).setCreationDate(Date(timeIntervalSince1970: Double(step * 2_000 + 30)))
                try changes.assetChangeRequest(for: ids[119 - step]).setHidden(true)
                try changes.assetChangeRequest(for: ids[50 + step]).setFavorite(true)
            }
            let generation = try library.readDatabase { try PhotoLibrary.changeGeneration(in: $0) }
            #expect(library.tracker.outcomes.outcome(of: .assets(FetchOptions()), before: generation + 1) != nil, "kept, step \(step)")
            let change = try #require(observer.next())
            photos = HeldResults.applyDetails(change, to: photos, expected: try library.fetchAssets(), name: "all, step \(step)")
            favorites = HeldResults.applyDetails(
                change, to: favorites,
                expected: try library.fetchAssets(in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumFavorites)[0]),
                name: "favorites, step \(step)")
        }
    }
}
