import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Several devices make random changes offline and sync on random schedules through a faulty
/// network (lost requests, lost responses after commit, duplicates, old requests replayed out of
/// order) and a server that restarts; after everyone syncs with a healthy network, every device
/// has identical projections, and no event is lost or duplicated.
@Suite("Multi-replica sync simulation")
struct SyncSimulationTests {
    /// Schedules to run: sixteen by default, a thousand in CI (`PHOTOLEDGER_SIMULATION_SCHEDULES` sets it). They run
    /// one at a time (`.serialized`, as the other randomized suites with many cases): a thousand at once in a parallel run
    /// would open more files than the process may.
    static let schedules = TestIntensity.count(local: 16, full: 1000, variable: "PHOTOLEDGER_SIMULATION_SCHEDULES")

    /// Schedules of an end-to-end encrypted library: four by default, a hundred in CI.
    static let encryptedSchedules = TestIntensity.count(local: 4, full: 100, variable: "PHOTOLEDGER_SIMULATION_SCHEDULES")

    @Test("devices converge after random changes and syncs through faults", .serialized, arguments: 0..<schedules)
    func converge(schedule: Int) async throws {
        try await simulate(schedule: schedule, encrypted: false)
    }

    @Test(
        "devices of an encrypted library converge after random changes, purges among them, and syncs through faults", .serialized,
        arguments: 0..<encryptedSchedules)
    func convergeEncrypted(schedule: Int) async throws {
        try await simulate(schedule: 50_000 + schedule, encrypted: true)
    }

    /// One schedule: devices (enrolled in an encrypted library by the first when `encrypted`)
    /// make random changes and sync through faults, then sync twice over a healthy network.
    func simulate(schedule: Int, encrypted: Bool) async throws {
        var random = SeededRandomNumberGenerator(seed: UInt64(77_000 + schedule))
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let storePath = directory.file("server.sqlite").path
        let blobs = directory.file("blobs").path
        var store = try SQLiteServerStore(path: storePath)
        try store.createLibrary(named: "family", uuid: nil, at: clock.read())
        func makeServer(_ store: SQLiteServerStore) throws -> SyncServer {
            var configuration = SyncServer.Configuration(store: store, blobDirectory: blobs)
            configuration.clock = { clock.read() }
            configuration.logger = DiscardingLogger()
            return try SyncServer(configuration: configuration)
        }
        let wire = InProcessTransport(server: try makeServer(store))
        let deviceCount = Int.random(in: 3...5, using: &random)
        var devices: [(library: PhotoLibrary, faulty: SyncEngine, healthy: SyncEngine)] = []
        for index in 0..<deviceCount {
            var options = PhotoLibrary.Options()
            options.clock = { clock.read() }
            options.randomSeed = UInt64(schedule * 10 + index)
            options.preauthorized = true
            let name = DeviceID("device-\(index)")
            let library = try PhotoLibrary(url: directory.file("\(name).sqlite"), device: name, options: options)
            let token = try DeviceToken.generate()
            try store.registerToken(hash: DeviceToken.hash(token), library: "family", device: name, scope: .readWrite, at: clock.read())
            let remote = try SyncRemote(libraryURL: "http://sim.invalid/v1/libraries/family", token: token)
            var engineOptions = SyncEngine.Options()
            engineOptions.pushBatchSize = Int.random(in: 2...20, using: &random)
            engineOptions.pullPageSize = Int.random(in: 3...30, using: &random)
            let faulty = SyncEngine(
                library: library, remote: remote,
                transport: FaultyTransport(wrapping: wire, seed: UInt64(schedule * 100 + index), faultRate: 4), options: engineOptions)
            devices.append((library, faulty, SyncEngine(library: library, remote: remote, transport: wire, options: engineOptions)))
        }
        if encrypted {
            // The first device makes the library encrypted and approves the others, which take
            // the ring at their first sync.
            _ = try devices[0].library.enableEncryption()
            for device in devices.dropFirst() {
                try devices[0].library.approveEnrolment(of: device.library.device, publicKey: try device.library.prepareEnrolment())
            }
            for device in devices { try await device.healthy.sync() }
            #expect(devices.allSatisfy { $0.library.encryptionStatus == .enrolled }, "schedule \(schedule): every device enrolled")
        }
        // An app on the first device holds fetch results and applies each change's details.
        let app = devices[0].library
        let observer = CollectingObserver()
        app.register(observer)
        var photos = try app.fetchAssets()
        var everything = try app.fetchAssets(options: FetchOptions(includeHiddenAssets: true))
        var albums = try app.fetchAssetCollections(with: .album)
        var topLevel = try app.fetchTopLevelUserCollections()
        for _ in 0..<40 {
            clock.advance(milliseconds: UInt64.random(in: 0...50, using: &random))
            let device = devices.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6: try RandomChanges.apply(on: device.library, random: &random)
            case 9:
                // The server restarts: its store is closed and opened again.
                store = try SQLiteServerStore(path: storePath)
                wire.replace(with: try makeServer(store))
            default:
                _ = try? await device.faulty.sync()
            }
        }
        // Quiescence: everyone syncs twice over a healthy network.
        for _ in 0..<2 { for device in devices { try await device.healthy.sync() } }

        app.observers.queue.sync {}
        for change in observer.changes {
            photos = change.changeDetails(for: photos)?.fetchResultAfterChanges ?? photos
            everything = change.changeDetails(for: everything)?.fetchResultAfterChanges ?? everything
            albums = change.changeDetails(for: albums)?.fetchResultAfterChanges ?? albums
            topLevel = change.changeDetails(for: topLevel)?.fetchResultAfterChanges ?? topLevel
        }
        #expect(photos.allObjects == (try app.fetchAssets()).allObjects, "schedule \(schedule): All Photos from change details")
        #expect(everything.allObjects == (try app.fetchAssets(options: FetchOptions(includeHiddenAssets: true))).allObjects)
        #expect(albums.allObjects == (try app.fetchAssetCollections(with: .album)).allObjects)
        #expect(topLevel.allObjects == (try app.fetchTopLevelUserCollections()).allObjects)

        let reference = try dump(devices[0].library)
        let objects = try Device.createdObjects(devices[0].library)
        for device in devices.dropFirst() {
            #expect(try dump(device.library) == reference, "schedule \(schedule): \(device.library.device) converged")
            // Every device tells the same story: `history` of every object, entry for entry.
            for object in objects {
                #expect(
                    try TrustTests.history(device.library, object) == TrustTests.history(devices[0].library, object),
                    "schedule \(schedule): \(device.library.device) tells the same history of \(object)")
            }
        }
        let allEvents = try Set(devices.flatMap { try eventIDs($0.library) })
        let summary = try store.chainSummary(libraryID: 1)
        #expect(Int(summary.count) == allEvents.count, "the server holds every event once")
        for device in devices {
            #expect(try eventIDs(device.library).count == allEvents.count, "nothing lost or duplicated on \(device.library.device)")
            #expect(try device.library.replica.outboxCount() == 0)
            #expect(try device.library.verify().intactCount == allEvents.count)
            if encrypted {
                // Every device holds the same keys (the purged assets' destroyed everywhere): the
                // same events wait sealed on each.
                #expect(
                    try device.library.statistics().quarantined == devices[0].library.statistics().quarantined,
                    "schedule \(schedule): \(device.library.device)")
                #expect(
                    Set(device.library.encryption.snapshot.assetKeys.all.keys)
                        == Set(devices[0].library.encryption.snapshot.assetKeys.all.keys),
                    "schedule \(schedule): \(device.library.device) holds the same asset keys")
            }
            // The views are the fold of the log (`verify --deep`).
            let views = try device.library.verifyViews()
            #expect(views.isIntact, "schedule \(schedule): \(device.library.device): \(views)")
        }
    }

    func dump(_ library: PhotoLibrary) throws -> [String: [[SQLValue]]] {
        try library.readDatabase { db in
            var dump: [String: [[SQLValue]]] = [:]
            for table in ["assets", "asset_resources", "referenced_resources", "albums", "album_members", "collection_lists"] {
                dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
            }
            // The folder tree each device reads from its registers.
            dump["tree"] = try PhotoLibrary.photoCollections(.collectionsInList(nil, FetchOptions()), db: db, access: .full, now: 0).map {
                [SQLValue.text($0.localIdentifier)]
            }
            // Each folder's order, and the bursts' representatives, as each device reads them.
            for list in try PhotoLibrary.collectionLists(.collectionLists(nil, FetchOptions()), db: db) {
                dump["folder " + list.localIdentifier] = try PhotoLibrary.photoCollections(
                    .collectionsInList(list.id, FetchOptions()), db: db, access: .full, now: 0
                ).map { [SQLValue.text($0.localIdentifier)] }
            }
            dump["representatives"] = try PhotoLibrary.assets(
                .assetsInSmartAlbum(.smartAlbumBursts, FetchOptions()), db: db, access: .full, now: 0
            ).identifiers.map { [SQLValue.text($0.uuidString)] }
            let tree = try CollectionTree(db)
            dump["parents"] = tree.folders.keys.sorted { $0.uuidString < $1.uuidString }.map { id in
                [SQLValue.text(id.uuidString), SQLValue.text(tree.folders[id]!.parent?.uuidString ?? "top")]
            }
            return dump
        }
    }

    func eventIDs(_ library: PhotoLibrary) throws -> [UUID] {
        try library.readDatabase { db in try db.rows("SELECT event_id FROM events") { UUID(bytes: $0.blob(0))! } }
    }
}

/// Collects every change notification, in the order they arrive.
final class CollectingObserver: PhotoLibraryChangeObserver, @unchecked Sendable {
    // Safe to share: `received` is touched only under `lock`.
    private let lock = NSLock()
    private var received: [PhotoLibraryChange] = []

    func photoLibraryDidChange(_ change: PhotoLibraryChange) { lock.withLock { received.append(change) } }

    /// The notifications so far.
    var changes: [PhotoLibraryChange] { lock.withLock { received } }
}
