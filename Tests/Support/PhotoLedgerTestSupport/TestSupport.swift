import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoMedia
@_exported import TestSupportKit

/// A controllable physical clock (Unix milliseconds) shared by libraries and servers in a test.
public final class TestClock: @unchecked Sendable {
    // Safe to share: `now` is touched only under `lock`.
    private let lock = NSLock()
    private var now: UInt64

    /// A clock starting at `start`.
    public init(_ start: UInt64 = 1_764_483_790_000) { now = start }

    /// The current reading.
    public func read() -> UInt64 { lock.withLock { now } }
    /// Moves the clock forward.
    public func advance(milliseconds: UInt64) { lock.withLock { now += milliseconds } }
    /// Sets the clock.
    public func set(_ value: UInt64) { lock.withLock { now = value } }
}

extension TestClock {
    /// A clock at the wall clock's time, ten seconds ahead: for tests of garbage collection, which
    /// compares the library's clock with the times files were written.
    public static func wallClock() -> TestClock { TestClock(wallClockMilliseconds() + 10_000) }

    /// Sets the clock to ten seconds past the wall clock (never back), so that garbage collection
    /// with no grace period sees every file written so far as old enough, however long the test
    /// took to get here.
    public func passWallClock() {
        let target = Self.wallClockMilliseconds() + 10_000
        if read() < target { set(target) }
    }

    private static func wallClockMilliseconds() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }
}

/// A tiny real JPEG, different for every seed.
public func samplePhoto(_ seed: UInt64) -> Data {
    Data(SyntheticMedia.sample(.jpeg, width: 8, height: 8, seed: seed))
}

/// Random changes of every kind through the public API, for property tests and simulations.
/// Operations PhotoKit's rules refuse (an index that became invalid, an asset deleted meanwhile)
/// throw and write nothing; the script ignores those.
public enum RandomChanges {
    static let titles = ["Trip", "Family", "Trip", "Pets", "Work"]

    /// Makes one random change on `library`.
    public static func apply(on library: PhotoLibrary, random: inout SeededRandomNumberGenerator) throws {
        let assets = try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).map(\.localIdentifier)
        let trashed = try library.fetchAssets(in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted)[0])
            .map(\.localIdentifier)
        let albums = try library.fetchAssetCollections(with: .album)
        var r = random
        defer { random = r }
        let choice = Int.random(in: 0..<21, using: &r)
        do {
            switch choice {
            case 0, 1:
                let count = Int.random(in: 1...3, using: &r)
                let seeds = (0..<count).map { _ in UInt64.random(in: 0...1_000_000, using: &r) }
                let hidden = Int.random(in: 0..<6, using: &r) == 0
                try library.performChangesAndWait { changes in
                    for seed in seeds {
                        let created = try changes.createAsset(from: samplePhoto(seed))
                        if hidden { try changes.assetChangeRequest(for: created.placeholderForCreatedAsset).setHidden(true) }
                    }
                }
            case 2:
                let title = titles.randomElement(using: &r)!
                let stable = Int.random(in: 0..<4, using: &r) == 0
                try library.performChangesAndWait { _ = try $0.createAlbum(title: title, stableKey: stable ? "key." + title : nil) }
            case 3:
                guard let album = albums.randomElement(using: &r) else { return }
                let title = titles.randomElement(using: &r)! + " \(Int.random(in: 0..<3, using: &r))"
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle(title) }
            case 4:
                guard let album = albums.randomElement(using: &r), !assets.isEmpty else { return }
                let chosen = (0..<Int.random(in: 1...3, using: &r)).compactMap { _ in assets.randomElement(using: &r) }
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets(chosen) }
            case 5:
                guard let album = albums.randomElement(using: &r), let asset = assets.randomElement(using: &r) else { return }
                let index = Int.random(in: 0...(try library.fetchAssets(in: album).count), using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).insertAssets([asset], at: [index]) }
            case 6:
                guard let album = albums.randomElement(using: &r) else { return }
                let count = try library.fetchAssets(in: album).count
                guard count > 0 else { return }
                let index = Int.random(in: 0..<count, using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets(at: [index]) }
            case 7:
                guard let album = albums.randomElement(using: &r) else { return }
                let count = try library.fetchAssets(in: album).count
                guard count > 1 else { return }
                let from = Int.random(in: 0..<count, using: &r), to = Int.random(in: 0..<count, using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: [from], to: to) }
            case 8:
                guard let asset = assets.randomElement(using: &r) else { return }
                let value = Bool.random(using: &r), which = Int.random(in: 0..<3, using: &r)
                let date = Date(timeIntervalSince1970: Double(Int.random(in: 1_600_000_000...1_700_000_000, using: &r)))
                try library.performChangesAndWait { changes in
                    let request = try changes.assetChangeRequest(for: asset)
                    switch which {
                    case 0: try request.setFavorite(value)
                    case 1: try request.setHidden(value)
                    default: try request.setCreationDate(date)
                    }
                }
            case 9:
                guard let asset = assets.randomElement(using: &r) else { return }
                try library.performChangesAndWait { try $0.deleteAssets([asset]) }
            case 10:
                guard let asset = trashed.randomElement(using: &r) else { return }
                let purge = Int.random(in: 0..<4, using: &r) == 0
                try library.performChangesAndWait { purge ? try $0.purgeAssets([asset]) : try $0.recoverAssets([asset]) }
            case 11:
                guard let album = albums.randomElement(using: &r), Int.random(in: 0..<3, using: &r) == 0 else { return }
                try library.performChangesAndWait { try $0.deleteAlbums([album]) }
            case 16:
                let title = ["Travel", "Family", "Archive"].randomElement(using: &r)!
                try library.performChangesAndWait { _ = try $0.createCollectionList(title: title) }
            case 17:
                // An album or a folder moved into a folder, or to the top level: concurrent moves on
                // several devices can make a folder hold itself.
                let folders = try library.fetchCollectionLists().map(\.localIdentifier)
                let children = folders + albums.map(\.localIdentifier)
                guard let child = children.randomElement(using: &r) else { return }
                let target = folders.randomElement(using: &r)
                let toTop = target == nil || Int.random(in: 0..<4, using: &r) == 0
                let parent = try library.fetchCollectionListsContaining(child).first
                try library.performChangesAndWait { changes in
                    if toTop {
                        guard let parent else { return }
                        try changes.collectionListChangeRequest(for: parent).removeChildCollections([child])
                    } else {
                        try changes.collectionListChangeRequest(for: target!).addChildCollections([child])
                    }
                }
            case 18:
                // A photo of one of two bursts (photos of one burst made on several devices).
                let burst = ["burst-1", "burst-2"].randomElement(using: &r)!
                let seed = UInt64.random(in: 0...1_000_000, using: &r), autoPick = Int.random(in: 0..<3, using: &r) == 0
                try library.performChangesAndWait { changes in
                    _ = try changes.createAsset(
                        withResources: [ResourceInput(type: .photo, source: .data(samplePhoto(seed)))],
                        properties: AssetCreationProperties(burstIdentifier: burst, burstSelectionTypes: autoPick ? [.autoPick] : []))
                }
            case 19:
                // A burst photo picked or unpicked: picks on several devices decide the representative.
                let burst = ["burst-1", "burst-2"].randomElement(using: &r)!
                guard let photo = try library.fetchAssets(withBurstIdentifier: burst).map(\.localIdentifier).randomElement(using: &r) else {
                    return
                }
                let pick = Bool.random(using: &r)
                try library.performChangesAndWait { try $0.assetChangeRequest(for: photo).setBurstUserPick(pick) }
            case 20:
                // A folder's collections reordered, or one inserted at an index: concurrent reorders conflict.
                guard let folder = try library.fetchCollectionLists().allObjects.randomElement(using: &r) else { return }
                let count = try library.fetchCollections(in: folder).count
                if count > 1, Bool.random(using: &r) {
                    let from = Int.random(in: 0..<count, using: &r), to = Int.random(in: 0..<count, using: &r)
                    try library.performChangesAndWait {
                        try $0.collectionListChangeRequest(for: folder).moveChildCollections(at: [from], to: to)
                    }
                } else {
                    guard let album = albums.randomElement(using: &r) else { return }
                    let index = Int.random(in: 0...count, using: &r)
                    try library.performChangesAndWait {
                        try $0.collectionListChangeRequest(for: folder).insertChildCollections([album], at: [index])
                    }
                }
            case 14:
                // An album's key asset chosen (one of its assets) or cleared.
                guard let album = albums.randomElement(using: &r) else { return }
                let members = try library.fetchAssets(in: album).map(\.localIdentifier)
                let key = Int.random(in: 0..<4, using: &r) == 0 ? nil : members.randomElement(using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(key) }
            case 15:
                // A content edit (or a revert) of a photo: edits of one photo on several devices conflict.
                guard let asset = assets.randomElement(using: &r) else { return }
                let seed = UInt64.random(in: 0...1_000_000, using: &r), revert = Int.random(in: 0..<4, using: &r) == 0
                try library.performChangesAndWait { changes in
                    let request = try changes.assetChangeRequest(for: asset)
                    if revert {
                        try request.revertAssetContentToOriginal()
                    } else {
                        try request.setContentEditingOutput(
                            ContentEditingOutput(
                                renderedContent: .data(samplePhoto(seed)), adjustmentFormatIdentifier: "org.photoledger.test",
                                adjustmentFormatVersion: "1", adjustmentData: Data("seed \(seed)".utf8)))
                    }
                }
            case 12:
                let groups = Dictionary(grouping: albums, by: \.title).values.filter { $0.count > 1 }
                guard let group = groups.randomElement(using: &r) else { return }
                try library.performChangesAndWait { _ = try $0.mergeAlbums(group) }
            default:
                guard let album = albums.randomElement(using: &r) else { return }
                let count = try library.fetchAssets(in: album).count
                let seeds = [UInt64.random(in: 0...1_000_000, using: &r), UInt64.random(in: 0...1_000_000, using: &r)]
                let second = min(count + 1, Int.random(in: 1...max(1, count + 1), using: &r))
                try library.performChangesAndWait { changes in
                    let fresh = try seeds.map { try changes.createAsset(from: samplePhoto($0)).placeholderForCreatedAsset }
                    try changes.albumChangeRequest(for: album).insertAssets(fresh, at: IndexSet([0, second]))
                }
            }
        } catch let error as PhotoLibraryError where [.operationInterrupted, .identifierNotFound, .changeNotSupported].contains(error.code)
        {
            // Refused by the rules; nothing was written.
        }
    }
}

/// Records a library's change notifications and waits for them.
public final class RecordingObserver: PhotoLibraryChangeObserver, @unchecked Sendable {
    // Safe to share: `changes` is touched only under `lock`.
    private let lock = NSLock()
    private var changes: [PhotoLibraryChange] = []
    private let semaphore = DispatchSemaphore(value: 0)

    /// A recorder with nothing recorded.
    public init() {}

    public func photoLibraryDidChange(_ change: PhotoLibraryChange) {
        lock.withLock { changes.append(change) }
        semaphore.signal()
    }

    /// The next notification, waiting for it (nil only when none comes within
    /// `TestPatience.limit`, in a broken run).
    public func next() -> PhotoLibraryChange? {
        guard semaphore.wait(timeout: TestPatience.dispatchDeadline) == .success else { return nil }
        return lock.withLock { changes.removeFirst() }
    }

    /// How many notifications arrived and were not taken by ``next()``, without waiting.
    public var pendingCount: Int { lock.withLock { changes.count } }
}

/// The path of an executable built beside the test binary (found by walking up from it).
public func builtExecutable(_ name: String) throws -> URL {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    var directory = testBinary.deletingLastPathComponent()
    while directory.path != "/" {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw PhotoLibraryError(.internalError, "cannot find the built executable \(name); run `swift build` first")
}

extension ChainVerificationReport {
    /// The number of events checked when the chain is intact, nil when it is not.
    public var intactCount: Int? { isIntact ? checkedEvents : nil }
}
