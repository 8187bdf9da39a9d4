import Foundation
import LedgerStore
import Testing
@testable import PhotoLedger

/// Random change scripts on several devices that exchange events, checking the laws of the fold:
/// any permutation of the event set, with duplicates, folds to identical tables; incremental
/// projections equal `rebuild()`; devices that have seen the same events have identical tables.
@Suite("Projection fold laws")
struct FoldPropertyTests {
    static let titles = ["Trip", "Family", "Trip", "Pets", "Work"]

    /// One random change on `library`; failures that PhotoKit's rules dictate are expected and ignored.
    static func randomChange(on library: PhotoLibrary, random: inout SeededRandomNumberGenerator) throws {
        let assets = try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).map(\.localIdentifier)
        let trashed = try library.fetchAssets(in: library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted)[0])
            .map(\.localIdentifier)
        let albums = try library.fetchAssetCollections(with: .album)
        let choice = Int.random(in: 0..<14, using: &random)
        let pickAsset = { (r: inout SeededRandomNumberGenerator) in assets.randomElement(using: &r) }
        let pickAlbum = { (r: inout SeededRandomNumberGenerator) in albums.randomElement(using: &r) }
        var r = random
        defer { random = r }
        do {
            switch choice {
            case 0, 1:
                let count = Int.random(in: 1...3, using: &r)
                let favorite = Bool.random(using: &r), hidden = Int.random(in: 0..<6, using: &r) == 0
                try library.performChangesAndWait { changes in
                    for _ in 0..<count { _ = try changes.createAsset(imageCreation(favorite: favorite, hidden: hidden)) }
                }
            case 2:
                let title = titles.randomElement(using: &r)!
                let stable = Int.random(in: 0..<4, using: &r) == 0
                try library.performChangesAndWait { _ = try $0.createAlbum(title: title, stableKey: stable ? "key." + title : nil) }
            case 3:
                guard let album = pickAlbum(&r) else { return }
                let title = titles.randomElement(using: &r)! + " \(Int.random(in: 0..<3, using: &r))"
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle(title) }
            case 4:
                guard let album = pickAlbum(&r), !assets.isEmpty else { return }
                let chosen = (0..<Int.random(in: 1...3, using: &r)).compactMap { _ in pickAsset(&r) }
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets(chosen) }
            case 5:
                guard let album = pickAlbum(&r), let asset = pickAsset(&r) else { return }
                let count = try library.fetchAssets(in: album).count
                let index = Int.random(in: 0...count, using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).insertAssets([asset], at: [index]) }
            case 6:
                guard let album = pickAlbum(&r) else { return }
                let count = try library.fetchAssets(in: album).count
                guard count > 0 else { return }
                let index = Int.random(in: 0..<count, using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets(at: [index]) }
            case 7:
                guard let album = pickAlbum(&r) else { return }
                let count = try library.fetchAssets(in: album).count
                guard count > 1 else { return }
                let from = Int.random(in: 0..<count, using: &r), to = Int.random(in: 0..<count, using: &r)
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: [from], to: to) }
            case 8:
                guard let asset = pickAsset(&r) else { return }
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
                guard let asset = pickAsset(&r) else { return }
                try library.performChangesAndWait { try $0.deleteAssets([asset]) }
            case 10:
                guard let asset = trashed.randomElement(using: &r) else { return }
                let purge = Int.random(in: 0..<4, using: &r) == 0
                try library.performChangesAndWait { purge ? try $0.purgeAssets([asset]) : try $0.recoverAssets([asset]) }
            case 11:
                guard let album = pickAlbum(&r), Int.random(in: 0..<3, using: &r) == 0 else { return }
                try library.performChangesAndWait { try $0.deleteAlbums([album]) }
            case 12:
                let groups = Dictionary(grouping: albums, by: \.title).values.filter { $0.count > 1 }
                guard let group = groups.randomElement(using: &r) else { return }
                try library.performChangesAndWait { _ = try $0.mergeAlbums(group) }
            default:
                guard let album = pickAlbum(&r) else { return }
                let count = try library.fetchAssets(in: album).count
                let fresh = try library.createAssets(2)
                let indexes = IndexSet([0, min(count + 1, Int.random(in: 1...max(1, count + 1), using: &r))])
                try library.performChangesAndWait { try $0.albumChangeRequest(for: album).insertAssets(fresh, at: indexes) }
            }
        } catch let error as PhotoLibraryError where [.operationInterrupted, .identifierNotFound, .changeNotSupported].contains(error.code) {
            // An operation the rules refuse: nothing was written.
        }
    }

    /// Delivers every event `from` has that `to` lacks.
    static func deliver(from: PhotoLibrary, to: PhotoLibrary) throws {
        _ = try to.applyRemoteEvents(try from.allEvents())
    }

    static func dump(_ db: Database) throws -> [String: [[SQLValue]]] {
        var dump: [String: [[SQLValue]]] = [:]
        for table in Projection.tables {
            dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
        }
        return dump
    }

    @Test("devices converge; every permutation with duplicates folds to the same tables; incremental equals rebuild",
          arguments: 0..<30)
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
                try Self.deliver(from: devices.randomElement(using: &random)!, to: device)
            } else {
                try Self.randomChange(on: device, random: &random)
            }
        }
        for receiver in devices { for sender in devices where sender !== receiver { try Self.deliver(from: sender, to: receiver) } }
        let reference = try devices[0].projectionDump()
        for device in devices.dropFirst() {
            #expect(try device.projectionDump() == reference, "devices converge after exchanging every event")
        }
        try devices[1].rebuild()
        #expect(try devices[1].projectionDump() == reference, "rebuild() equals the incremental projections")

        let events = try devices[0].allEvents()
        #expect(events.count > 40)
        for permutation in 0..<50 {
            var shuffled = events + events.filter { _ in Int.random(in: 0..<4, using: &random) == 0 }
            shuffled.shuffle(using: &random)
            let db = try Database(path: ":memory:")
            try Migrator.library().migrate(db)
            try db.inTransaction { for event in shuffled { try Projection(db).apply(event) } }
            #expect(try Self.dump(db) == reference, "permutation \(permutation) of script \(script)")
        }
    }
}
