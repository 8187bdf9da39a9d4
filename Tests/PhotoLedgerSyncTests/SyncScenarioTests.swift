import Foundation
import LedgerCore
import PhotoLedgerServer
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Two-device scenarios over the real server on loopback with libcurl, each in both orders:
/// the device whose write should win syncs first, or last.
@Suite("Sync scenarios")
struct SyncScenarioTests {
    /// Two devices that share one album holding two assets; keeps the server and files alive.
    final class Scenario {
        let server: TestServer
        let directory: TemporaryDirectory
        let clock = TestClock()
        let anna: Device
        let ben: Device
        var album = ""
        var assets: [String] = []

        init() throws {
            server = try TestServer(clock: clock)
            directory = try TemporaryDirectory()
            anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
            ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        }
    }

    func twoDevices() async throws -> Scenario {
        let scenario = try Scenario()
        (scenario.album, scenario.assets) = try scenario.anna.library.performChangesAndWait { changes in
            let created = try [photo(1), photo(2)].map { try changes.createAsset(from: $0).placeholderForCreatedAsset }
            let album = try changes.createAlbum(title: "Trip")
            try album.addAssets(created)
            return (album.localIdentifier, created.map(\.localIdentifier))
        }
        try await scenario.anna.sync()
        try await scenario.ben.sync()
        return scenario
    }

    func syncBoth(_ first: Device, _ second: Device) async throws {
        try await first.sync()
        try await second.sync()
        try await first.sync()
    }

    @Test("placeholders created offline keep their identifiers on every device, with their bytes", arguments: [true, false])
    func offlineCreation(annaFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, album, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.album, scenario.assets)
        #expect(try ben.members(album) == assets)
        #expect(try ben.library.requestImageData(for: assets[0], version: .original) == photo(1))
        clock.advance(milliseconds: 1000)
        let annaNew = try anna.library.performChangesAndWait {
            try $0.createAsset(from: photo(3)).placeholderForCreatedAsset.localIdentifier
        }
        let benNew = try ben.library.performChangesAndWait { try $0.createAsset(from: photo(4)).placeholderForCreatedAsset.localIdentifier }
        if annaFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        for device in [anna, ben] {
            #expect(try device.asset(annaNew) != nil && device.asset(benNew) != nil)
            #expect(try device.library.requestImageData(for: benNew) == photo(4))
        }
        #expect(try anna.dump() == ben.dump())
    }

    @Test("a download cut short continues where it stopped; kept bytes that are wrong fail the hash check and the next sync starts again")
    func resumedDownload() async throws {
        let scenario = try Scenario()
        defer { withExtendedLifetime(scenario) {} }
        let (anna, ben) = (scenario.anna, scenario.ben)
        let bytes = photo(7)
        let id = try anna.library.performChangesAndWait { try $0.createAsset(from: bytes).placeholderForCreatedAsset.localIdentifier }
        try await anna.sync()
        let hash = Hex.encode(SHA256.hash(Array(bytes)))
        let folder = ben.library.replica.downloadDirectory
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let kept = folder.appendingPathComponent(".download-\(hash).partial")

        // What an interrupted download leaves: the first bytes. Here they are wrong, so the
        // continued file fails its hash (which proves only the rest was asked for), and nothing
        // of it stays.
        try Data(repeating: 0, count: bytes.count / 2).write(to: kept)
        let error = await #expect(throws: (any Error).self) { try await ben.sync() }
        #expect("\(String(describing: error))".contains("arrived with other bytes"), "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: kept.path))

        // The right first half: the rest completes it.
        try bytes.prefix(bytes.count / 2).write(to: kept)
        let report = try await ben.sync()
        #expect(report.downloadedResources == 1)
        #expect(try ben.library.requestImageData(for: id, version: .original) == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test("rename vs rename: the later rename wins whoever syncs first", arguments: [true, false])
    func renameVersusRename(winnerFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, album) = (scenario.clock, scenario.anna, scenario.ben, scenario.album)
        try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Trip (Anna)") }
        clock.advance(milliseconds: 10)
        try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Trip (Ben)") }
        if winnerFirst { try await syncBoth(ben, anna) } else { try await syncBoth(anna, ben) }
        #expect(try anna.albumTitles() == ["Trip (Ben)"])
        #expect(try ben.albumTitles() == ["Trip (Ben)"])
    }

    @Test("an offline edit made earlier but uploaded later loses", arguments: [true, false])
    func earlierEditUploadedLater(winnerFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.assets)
        try anna.library.performChangesAndWait { try $0.assetChangeRequest(for: assets[0]).setFavorite(true) }  // earlier, offline
        clock.advance(milliseconds: 3_600_000)
        try ben.library.performChangesAndWait { try $0.assetChangeRequest(for: assets[0]).setFavorite(false) }
        if winnerFirst { try await syncBoth(ben, anna) } else { try await syncBoth(anna, ben) }
        #expect(try anna.asset(assets[0])?.isFavorite == false)
        #expect(try ben.asset(assets[0])?.isFavorite == false)
    }

    @Test("favorite set on two devices converges on the last writer", arguments: [true, false])
    func favoriteOnBoth(winnerFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.assets)
        try ben.library.performChangesAndWait { try $0.assetChangeRequest(for: assets[1]).setFavorite(false) }
        clock.advance(milliseconds: 1)
        try anna.library.performChangesAndWait { try $0.assetChangeRequest(for: assets[1]).setFavorite(true) }
        if winnerFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        #expect(try anna.asset(assets[1])?.isFavorite == true && ben.asset(assets[1])?.isFavorite == true)
    }

    @Test(
        "key asset removed from its album on another device: the first asset is the cover everywhere, the choice returns with it",
        arguments: [true, false])
    func keyAssetRemovedElsewhere(chooserFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, album, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.album, scenario.assets)
        try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(assets[1]) }
        clock.advance(milliseconds: 5)
        try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets([assets[1]]) }
        if chooserFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        for device in [anna, ben] {
            let collection = try device.library.fetchAssetCollections(withLocalIdentifiers: [album])[0]
            #expect(try device.library.fetchKeyAssets(in: collection).map(\.localIdentifier) == [assets[0]], "\(device.library.device)")
        }
        // Added back on either device, the asset is the key asset again: the choice was kept.
        try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets([assets[1]]) }
        try await syncBoth(ben, anna)
        for device in [anna, ben] {
            let collection = try device.library.fetchAssetCollections(withLocalIdentifiers: [album])[0]
            #expect(try device.library.fetchKeyAssets(in: collection).map(\.localIdentifier) == [assets[1]], "\(device.library.device)")
        }
    }

    @Test("key asset chosen on two devices: the later choice wins whoever syncs first", arguments: [true, false])
    func keyAssetOnBoth(winnerFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, album, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.album, scenario.assets)
        try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(assets[0]) }
        clock.advance(milliseconds: 5)
        try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setKeyAsset(assets[1]) }
        if winnerFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        for device in [anna, ben] {
            let collection = try device.library.fetchAssetCollections(withLocalIdentifiers: [album])[0]
            #expect(try device.library.fetchKeyAssets(in: collection).map(\.localIdentifier) == [assets[1]], "\(device.library.device)")
        }
    }

    @Test("concurrent edits of one photo: the later edit wins everywhere, with its adjustment data and bytes", arguments: [true, false])
    func concurrentEdits(winnerFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.assets)
        func edit(_ device: Device, seed: UInt64, name: String) throws {
            try device.library.performChangesAndWait { changes in
                try changes.assetChangeRequest(for: assets[0]).setContentEditingOutput(
                    ContentEditingOutput(
                        renderedContent: .data(photo(seed)), adjustmentFormatIdentifier: "com.example.\(name)",
                        adjustmentFormatVersion: "1",
                        adjustmentData: Data(name.utf8)))
            }
        }
        try edit(ben, seed: 70, name: "earlier")
        clock.advance(milliseconds: 5)
        try edit(anna, seed: 71, name: "later")
        if winnerFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        for device in [anna, ben] {
            #expect(try device.library.adjustmentData(for: assets[0])?.formatIdentifier == "com.example.later", "\(device.library.device)")
            #expect(try device.library.requestImageData(for: assets[0]) == photo(71), "\(device.library.device)")
            #expect(try device.library.requestImageData(for: assets[0], version: .unadjusted) == photo(1))
        }
    }

    @Test(
        "a folder moved into itself through two devices' moves: both read the same tree, the folder moved last at the top",
        arguments: [true, false])
    func folderCycle(laterFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, album) = (scenario.clock, scenario.anna, scenario.ben, scenario.album)
        let (outer, inner) = try anna.library.performChangesAndWait { changes in
            let outer = try changes.createCollectionList(title: "Travel"), inner = try changes.createCollectionList(title: "Europe")
            try inner.addChildCollections([album])
            return (outer.localIdentifier, inner.localIdentifier)
        }
        try await syncBoth(anna, ben)
        // Offline, anna puts Europe in Travel; later, ben puts Travel in Europe.
        try anna.library.performChangesAndWait { try $0.collectionListChangeRequest(for: outer).addChildCollections([inner]) }
        clock.advance(milliseconds: 5)
        try ben.library.performChangesAndWait { try $0.collectionListChangeRequest(for: inner).addChildCollections([outer]) }
        if laterFirst { try await syncBoth(ben, anna) } else { try await syncBoth(anna, ben) }
        for device in [anna, ben] {
            let library = device.library
            #expect(try library.fetchTopLevelUserCollections().map(\.localIdentifier) == [outer], "\(library.device): Travel moved last")
            #expect(try library.fetchCollectionListsContaining(inner).map(\.localIdentifier) == [outer])
            #expect(try library.fetchCollectionListsContaining(album).map(\.localIdentifier) == [inner])
        }
    }

    @Test("add vs remove: a concurrent remove and remove-then-add keep the asset (longer history wins)", arguments: [true, false])
    func addVersusRemove(addFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (anna, ben, album, assets) = (scenario.anna, scenario.ben, scenario.album, scenario.assets)
        try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets([assets[0]]) }
        try ben.library.performChangesAndWait { changes in
            let request = try changes.albumChangeRequest(for: album)
            try request.removeAssets([assets[0]])
            try request.addAssets([assets[0]])
        }
        if addFirst { try await syncBoth(ben, anna) } else { try await syncBoth(anna, ben) }
        #expect(Set(try anna.members(album)) == Set(assets))
        #expect(try anna.members(album) == ben.members(album))
    }

    @Test("concurrent prepends stay contiguous", arguments: [true, false])
    func concurrentPrepends(annaFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (anna, ben, album, assets) = (scenario.anna, scenario.ben, scenario.album, scenario.assets)
        func prepend(_ device: Device, seeds: [UInt64]) throws -> [String] {
            try device.library.performChangesAndWait { changes in
                let created = try seeds.map { try changes.createAsset(from: photo($0)).placeholderForCreatedAsset }
                try changes.albumChangeRequest(for: album).insertAssets(created, at: IndexSet(0..<created.count))
                return created.map(\.localIdentifier)
            }
        }
        let annas = try prepend(anna, seeds: [10, 11, 12])
        let bens = try prepend(ben, seeds: [20, 21, 22])
        if annaFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        let order = try anna.members(album)
        #expect(order == (try ben.members(album)))
        #expect(order == annas + bens + assets || order == bens + annas + assets)
    }

    @Test("delete vs edit: the delete wins; recovering shows the latest edit", arguments: [true, false])
    func deleteVersusEdit(deleteFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (clock, anna, ben, album, assets) = (scenario.clock, scenario.anna, scenario.ben, scenario.album, scenario.assets)
        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        clock.advance(milliseconds: 5)
        try ben.library.performChangesAndWait { try $0.assetChangeRequest(for: assets[0]).setFavorite(true) }
        if deleteFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        for device in [anna, ben] {
            #expect(try device.asset(assets[0]) == nil)
            #expect(try device.members(album) == [assets[1]])
        }
        try ben.library.performChangesAndWait { try $0.recoverAssets([assets[0]]) }
        try await syncBoth(ben, anna)
        #expect(try anna.asset(assets[0])?.isFavorite == true)
        #expect(try anna.members(album) == assets)
    }

    @Test("same-title albums stay apart until an explicit merge, which converges everywhere", arguments: [true, false])
    func sameTitleAlbums(annaFirst: Bool) async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (anna, ben, assets) = (scenario.anna, scenario.ben, scenario.assets)
        let a = try anna.library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Beach")
            try album.addAssets([assets[0]])
            return album.localIdentifier
        }
        let b = try ben.library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Beach")
            try album.addAssets([assets[1]])
            return album.localIdentifier
        }
        if annaFirst { try await syncBoth(anna, ben) } else { try await syncBoth(ben, anna) }
        #expect(try anna.albumTitles().filter { $0 == "Beach" }.count == 2)
        let merged = try ben.library.performChangesAndWait { try $0.mergeAlbums([a, b]).localIdentifier }
        // A late change addressed to the album that merged away lands in the merged album.
        let loser = merged == a ? b : a
        try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: loser).removeAssets([assets[0], assets[1]]) }
        try await syncBoth(ben, anna)
        for device in [anna, ben] {
            #expect(try device.albumTitles().filter { $0 == "Beach" }.count == 1)
            #expect(try device.library.fetchAssetCollections(withLocalIdentifiers: [loser]).first?.localIdentifier == merged)
        }
        #expect(try anna.dump() == ben.dump())
    }

    @Test("a device clock an hour ahead is refused with a clear error, and nothing is stored")
    func clockSkew() async throws {
        let clock = TestClock()
        let server = try TestServer(clock: clock)
        let directory = try TemporaryDirectory()
        let skewedClock = TestClock(clock.read() + 3_600_000)
        let skewed = try Device("skewed-laptop", server: server, directory: directory, clock: skewedClock, seed: 3)
        try skewed.library.performChangesAndWait { _ = try $0.createAlbum(title: "From the future") }
        let error = try await #require(throws: SyncError.self) { try await skewed.sync() }
        guard case .clockSkew(let message) = error else {
            Issue.record("expected clockSkew, got \(error)")
            return
        }
        #expect(message.contains("ahead of the server clock"))
        #expect(try skewed.library.replica.outboxCount() == 1, "the event stays in the outbox")
        #expect(try server.store.chainSummary(libraryID: 1).count == 0)
    }

    @Test("clear errors: unreachable server, refused token, another library's token")
    func clearErrors() async throws {
        let clock = TestClock()
        let server = try TestServer(clock: clock, libraries: ["family", "work"])
        let directory = try TemporaryDirectory()
        let device = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let unreachable = SyncEngine(
            library: device.library, remote: try SyncRemote(libraryURL: "http://127.0.0.1:9/v1/libraries/family", token: "x"),
            transport: testTransport())
        let offline = try await #require(throws: SyncError.self) { try await unreachable.sync() }
        #expect(offline.description.contains("is the server running"))
        let badToken = SyncEngine(
            library: device.library,
            remote: try SyncRemote(libraryURL: "http://127.0.0.1:\(server.port)/v1/libraries/family", token: "plt_wrong"),
            transport: testTransport())
        let refused = try await #require(throws: SyncError.self) { try await badToken.sync() }
        #expect(refused.description.contains("refused this device's token"))
        let otherLibrary = SyncEngine(
            library: device.library,
            remote: try SyncRemote(
                libraryURL: "http://127.0.0.1:\(server.port)/v1/libraries/family",
                token: server.token(device: "anna-phone", library: "work")),
            transport: testTransport())
        let forbidden = try await #require(throws: SyncError.self) { try await otherLibrary.sync() }
        #expect(forbidden.description.contains("access refused"))
        #expect(throws: SyncError.self) { try SyncRemote(libraryURL: "ftp://x/v1/libraries/a", token: "t") }
        #expect(throws: SyncError.self) { try SyncRemote(libraryURL: "http://x/libraries", token: "t") }
    }

    @Test("the remote is saved in the library; progress is reported; observers fire for pulled changes")
    func savedRemoteProgressAndObservers() async throws {
        let scenario = try await twoDevices()
        defer { withExtendedLifetime(scenario) {} }
        let (server, anna, ben, album) = (scenario.server, scenario.anna, scenario.ben, scenario.album)
        let remote = try server.remote(device: "ben-tablet")
        try remote.save(in: ben.library)
        #expect(try SyncRemote.saved(in: ben.library) == remote)
        let observer = RecordingObserver()
        ben.library.register(observer)
        try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Renamed") }
        let pushes = Progress()
        try await anna.engine.sync { pushes.add($0) }
        let pushed = try #require(pushes.last(.pushing))
        #expect(pushed.completed == 1 && pushed.total == 1)
        #expect(pushed.bytes > 100, "the push request and response bodies")
        let events = Progress()
        let report = try await SyncEngine(library: ben.library, transport: testTransport()).sync { events.add($0) }
        #expect(report.pulledEvents == 1)
        let pulled = try #require(events.last(.pulling))
        #expect(pulled.completed == 1)
        #expect(pulled.bytes > 100, "the pull pages' bodies")
        #expect(observer.next()?.changedAlbumIdentifiers == [album])
        #expect(try ben.albumTitles() == ["Renamed"])
    }
}

final class Progress: @unchecked Sendable {
    // Safe to share: `reports` is touched only under `lock`.
    private let lock = NSLock()
    private var reports: [SyncProgress] = []

    func add(_ progress: SyncProgress) { lock.withLock { reports.append(progress) } }
    var phases: Set<SyncProgress.Phase> { lock.withLock { Set(reports.map(\.phase)) } }
    func last(_ phase: SyncProgress.Phase) -> SyncProgress? { lock.withLock { reports.last { $0.phase == phase } } }
}
