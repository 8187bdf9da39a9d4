import CBaseline
import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoMedia
import Synchronization

/// Library figures: change-block latency, a large import in one block, projection rebuild beside
/// a C scan-and-upsert, fetch by identifier beside a C point lookup, and a large album in order.
struct LibraryBenchmarks {
    let quick: Bool

    init(quick: Bool) { self.quick = quick }

    func library(_ path: URL, seed: UInt64 = 1) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.randomSeed = seed
        return try PhotoLibrary(url: path, device: "bench-device", options: options)
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var figures: [Figure] = []

        // Change block latency: create one asset from photo bytes and insert it at the front of an album.
        let small = try library(directory.appendingPathComponent("latency.sqlite"))
        let album = try small.performChangesAndWait { try $0.createAlbum(title: "Camera").localIdentifier }
        let photos = (0..<64).map { Data(SyntheticMedia.sample(.jpeg, width: 64, height: 48, seed: UInt64($0))) }
        var latencies: [Double] = []
        for index in 0..<(quick ? 300 : 1000) {
            latencies.append(
                try seconds {
                    try small.performChangesAndWait { changes in
                        let created = try changes.createAsset(from: photos[index % photos.count])
                        try changes.albumChangeRequest(for: album).insertAssets([created.placeholderForCreatedAsset], at: [0])
                    }
                } * 1000)
        }
        figures.append(
            Figure(
                name: "library.block.p50", value: median(latencies), unit: "ms", baseline: nil, higherIsBetter: false, target: nil,
                note: "one change block: create an asset from JPEG bytes (validated, hashed, stored with fsync) + insert at 0"))
        figures.append(
            Figure(
                name: "library.block.p99", value: percentile(latencies, 99), unit: "ms", baseline: nil, higherIsBetter: false, target: nil,
                note: "same blocks, 99th percentile"))

        // A 10,000-asset import in one block (asset records and album membership).
        let large = try library(directory.appendingPathComponent("large.sqlite"))
        let importCount = 10_000
        var bigAlbum = ""
        let importTime = try seconds {
            bigAlbum = try large.performChangesAndWait { changes in
                let album = try changes.createAlbum(title: "Everything")
                let created = try (0..<importCount).map { index in
                    try changes.createImageRecord(
                        width: 4032, height: 3024, creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
                    )
                    .placeholderForCreatedAsset
                }
                try album.addAssets(created)
                return album.localIdentifier
            }
            // Counted until its write-ahead log checkpoint (on a thread of its own) is done.
            large.waitForBackgroundCheckpoints()
        }
        figures.append(
            Figure(
                name: "library.import.10k", value: Double(importCount) / importTime, unit: "assets/s", baseline: nil, higherIsBetter: true,
                target: nil,
                note: "10,000 asset creations + one addAssets in a single change block (\(String(format: "%.2f", importTime)) s)"))

        // Fetch of the 10,000-asset album in order.
        let collection = try large.fetchAssetCollections(withLocalIdentifiers: [bigAlbum])[0]
        var albumFetches: [Double] = []
        for _ in 0..<20 {
            var count = 0
            albumFetches.append(try seconds { count = try large.fetchAssets(in: collection).count } * 1000)
            guard count == importCount else { throw BenchmarkError("the album holds \(count) assets, expected \(importCount)") }
        }
        figures.append(
            Figure(
                name: "library.album.10k", value: median(albumFetches), unit: "ms", baseline: nil, higherIsBetter: false, target: 10,
                note: "fetch a 10,000-asset album in album order (median of 20)"))

        // Fetch by identifier beside a C point lookup on the same assets table.
        let identifiers = try large.fetchAssets(options: FetchOptions(fetchLimit: 2000)).map(\.localIdentifier)
        var fetchLatencies: [Double] = []
        for identifier in identifiers {
            fetchLatencies.append(try seconds { _ = try large.fetchAssets(withLocalIdentifiers: [identifier]).first } * 1e6)
        }
        var cLatencies = [Double](repeating: 0, count: 2000)
        _ = baseline_asset_lookups(directory.appendingPathComponent("large.sqlite").path, 2000, &cLatencies)
        figures.append(
            Figure(
                name: "library.fetch-by-id.p50", value: median(fetchLatencies), unit: "µs", baseline: median(cLatencies),
                higherIsBetter: false, target: 0.5, note: "fetchAssets(withLocalIdentifiers:) of one asset; C: SELECT * by asset_id"))

        return figures
    }

    /// Rebuild of a 100,000-event log beside the C scan-and-upsert of the same rows.
    func rebuildFigure() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let rebuildPath = directory.appendingPathComponent("rebuild.sqlite")
        let log = try library(rebuildPath, seed: 2)
        let eventCount = quick ? 30_000 : 100_000
        try makeLog(log, events: eventCount)
        var ours: [Double] = [], theirs: [Double] = []
        for _ in 0..<(quick ? 1 : 3) {
            // The rebuild's write-ahead log checkpoint runs on a thread of its own: it is waited
            // for, so it is counted (the C baseline checkpoints inside its commits) and does not
            // overlap the baseline's run.
            ours.append(
                Double(eventCount)
                    / (try seconds {
                        try log.rebuild()
                        log.waitForBackgroundCheckpoints()
                    }))
            var rows = 0
            let c = baseline_rebuild(rebuildPath.path, &rows)
            theirs.append(Double(rows) / c)
        }
        return [
            Figure(
                name: "library.rebuild", value: median(ours), unit: "events/s", baseline: median(theirs), higherIsBetter: true, target: 0.5,
                note: "rebuild() of \(eventCount) events (decode + LWW/causal-length upserts); C: keyset scan + one upsert per event")
        ]
    }

    /// A log of `events` events: asset creations, property changes and album memberships.
    func makeLog(_ library: PhotoLibrary, events: Int) throws {
        var made = 0
        var random = SeededRandomNumberGenerator(seed: 42)
        while made < events {
            made += try library.performChangesAndWait { changes in
                let album = try changes.createAlbum(title: "Album \(made)")
                var count = 1
                var assets: [ObjectPlaceholder] = []
                for _ in 0..<300 {
                    assets.append(try changes.createImageRecord(width: 4000, height: 3000, creationDate: nil).placeholderForCreatedAsset)
                    count += 1
                }
                for asset in assets.prefix(200) {
                    try changes.assetChangeRequest(for: asset).setFavorite(Bool.random(using: &random))
                    count += 1
                }
                for chunk in stride(from: 0, to: assets.count, by: 3) {
                    try album.addAssets(Array(assets[chunk..<min(chunk + 3, assets.count)]))
                    count += 1
                }
                return count
            }
        }
    }
}

extension LibraryBenchmarks {
    /// Fetch latency while an import runs (`library.fetch-during-import.*`): a library of 10,000
    /// assets imports a folder of camera JPEGs the way `photoledger import` does (staged outside
    /// the change block, then one block), while another thread fetches the 100 newest assets
    /// again and again. The baseline is the same fetch on the idle library, in the same run:
    /// readers off the writer's lock should leave fetches nearly unaffected.
    func fetchDuringImportFigures() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let library = try library(directory.appendingPathComponent("busy.sqlite"))
        try library.performChangesAndWait { changes in
            for index in 0..<10_000 {
                _ = try changes.createImageRecord(
                    width: 4032, height: 3024, creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
            }
        }
        let folder = directory.appendingPathComponent("camera")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let files = try (0..<(quick ? 100 : 300)).map { index in
            let url = folder.appendingPathComponent(String(format: "IMG_%04d.JPG", index))
            try Data(SyntheticMedia.sample(.jpeg, width: 2000, height: 1500, seed: UInt64(index))).write(to: url)
            return url
        }
        var options = FetchOptions()
        options.sortDescriptors = [SortDescriptor(.creationDate, ascending: false)]
        options.fetchLimit = 100
        func fetchOnce() throws -> Double {
            try seconds { _ = try library.fetchAssets(options: options).map(\.localIdentifier) } * 1000
        }
        var idle: [Double] = []
        for _ in 0..<300 { idle.append(try fetchOnce()) }

        let importing = Atomic<Bool>(true)
        let failure = Mutex<(any Error)?>(nil)
        let busy = Mutex<[Double]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                let staged = library.stageImport(fromFilesAt: files, options: AssetImportOptions(makesThumbnails: false))
                try library.performChangesAndWait { _ = try $0.importAssets(staged) }
            } catch {
                failure.withLock { $0 = error }
            }
            importing.store(false, ordering: .releasing)
        }
        while importing.load(ordering: .acquiring) {
            let latency = try fetchOnce()
            busy.withLock { $0.append(latency) }
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        let during = busy.withLock { $0 }
        let note =
            "the 100 newest of 10,000 assets, fetched again and again while \(files.count) JPEGs of 2000×1500 are imported as photoledger import does (\(during.count) fetches); baseline: the same fetch on the idle library"
        return [
            Figure(
                name: "library.fetch-during-import.p50", value: median(during), unit: "ms", baseline: median(idle), higherIsBetter: false,
                target: nil, note: note),
            Figure(
                name: "library.fetch-during-import.p99", value: percentile(during, 99), unit: "ms", baseline: percentile(idle, 99),
                higherIsBetter: false, target: nil, note: "the same, 99th percentiles"),
        ]
    }
}
