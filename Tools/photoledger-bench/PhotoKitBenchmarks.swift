import Foundation
import LedgerCore
import PhotoLedger
import Synchronization

/// Per-commit change recording: how many small change blocks a library commits per second with
/// nobody observing, and with an observer while the app holds fetch results, whose outcome each
/// commit captures inside its transaction (ChangeTracking.swift). Beside them, what fetching
/// those results again costs: the floor of a capture that re-reads them.
struct PhotoKitBenchmarks {
    let quick: Bool

    init(quick: Bool) { self.quick = quick }

    /// Counts notifications and does nothing else: the figures measure the commit, not the app.
    final class CountingObserver: PhotoLibraryChangeObserver, Sendable {
        let count = Atomic<Int>(0)
        func photoLibraryDidChange(_ change: PhotoLibraryChange) { count.add(1, ordering: .relaxed) }
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.randomSeed = 1
        let library = try PhotoLibrary(url: directory.appendingPathComponent("photokit.sqlite"), device: "bench-device", options: options)
        let assetCount = quick ? 2_000 : 10_000
        let albumCount = assetCount / 10
        let (assets, album) = try library.performChangesAndWait { changes in
            let created = try (0..<assetCount).map { index in
                try changes.createImageRecord(
                    width: 4032, height: 3024, creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
                ).placeholderForCreatedAsset
            }
            let album = try changes.createAlbum(title: "Trip")
            try album.addAssets(Array(created.prefix(albumCount)))
            return (created.map(\.localIdentifier), album.localIdentifier)
        }
        library.waitForBackgroundCheckpoints()
        let collection = try library.fetchAssetCollections(withLocalIdentifiers: [album])[0]
        let smart = { (subtype: CollectionSubtype) in try library.fetchAssetCollections(with: .smartAlbum, subtype: subtype)[0] }
        // The ten results of a photo app's screens: the grid, the smart albums, the album, its
        // cover, the album list, the top level.
        let screens: [() throws -> Any] = [
            { try library.fetchAssets() },
            { try library.fetchAssets(in: try smart(.smartAlbumFavorites)) },
            { try library.fetchAssets(in: try smart(.smartAlbumVideos)) },
            { try library.fetchAssets(in: try smart(.smartAlbumRecentlyAdded)) },
            { try library.fetchAssets(in: try smart(.smartAlbumAllHidden)) },
            { try library.fetchAssets(in: collection) },
            { try library.fetchKeyAssets(in: collection) },
            { try library.fetchAssetCollections(with: .album) },
            { try library.fetchTopLevelUserCollections() },
            {
                try library.fetchAssets(
                    options: FetchOptions(sortDescriptors: [SortDescriptor(.creationDate, ascending: false)], fetchLimit: 100))
            },
        ]
        let commits = quick ? 200 : 1_000
        var random = SeededRandomNumberGenerator(seed: 7)
        /// Commits `commits` blocks that each toggle one asset's favorite (an asset of the album
        /// every fourth time); returns commits per second.
        func commitRate() throws -> Double {
            let start = Date()
            for index in 0..<commits {
                let asset =
                    index % 4 == 0 ? assets[Int(random.next() % UInt64(albumCount))] : assets[Int(random.next() % UInt64(assetCount))]
                try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(index % 2 == 0) }
            }
            return Double(commits) / Date().timeIntervalSince(start)
        }
        var figures: [Figure] = []
        _ = try commitRate()  // warms the page cache and the statement caches
        let alone = try commitRate()
        figures.append(
            Figure(
                name: "photokit.commit.none", value: alone, unit: "commits/s", baseline: nil, higherIsBetter: true, target: nil,
                note: "a change block setting one favorite in a \(assetCount)-asset library, nobody observing"))
        let observer = CountingObserver()
        library.register(observer)
        for held in [1, 10] {
            let results = try screens.prefix(held).map { try $0() }
            let rate = try commitRate()
            figures.append(
                Figure(
                    name: "photokit.commit.observed-\(held)", value: rate, unit: "commits/s", baseline: alone, higherIsBetter: true,
                    target: nil,
                    note:
                        "same blocks, an observer registered, the app holding \(held) fetch result\(held == 1 ? "" : "s") (\(results.count) held)"
                ))
            var refetches: [Double] = []
            for _ in 0..<(quick ? 10 : 30) {
                refetches.append(try seconds { for screen in screens.prefix(held) { _ = try screen() } } * 1000)
            }
            figures.append(
                Figure(
                    name: "photokit.refetch-\(held)", value: median(refetches), unit: "ms", baseline: nil, higherIsBetter: false,
                    target: nil, note: "fetching those \(held) result\(held == 1 ? "" : "s") again, outside any commit"))
        }
        library.unregisterChangeObserver(observer)
        return figures
    }
}
