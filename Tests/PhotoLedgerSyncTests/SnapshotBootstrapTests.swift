import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerJSON
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// New devices started from a snapshot: usable at once, verified against the history later,
/// and then identical to a device that replayed the whole history.
@Suite("Snapshot bootstrap")
struct SnapshotBootstrapTests {
    /// Random histories to run.
    static let histories = TestIntensity.count(local: 6, full: 200, variable: "PHOTOLEDGER_SNAPSHOT_HISTORIES")

    /// A world of devices on one in-process server.
    final class World {
        let clock = TestClock()
        let directory: TemporaryDirectory
        let store: SQLiteServerStore
        let wire: InProcessTransport
        var random: SeededRandomNumberGenerator

        init(seed: UInt64) throws {
            directory = try TemporaryDirectory()
            random = SeededRandomNumberGenerator(seed: seed)
            store = try SQLiteServerStore(path: directory.file("server.sqlite").path)
            try store.createLibrary(named: "family", uuid: nil, at: clock.read())
            var configuration = SyncServer.Configuration(store: store, blobDirectory: directory.file("blobs").path)
            let clock = clock
            configuration.clock = { clock.read() }
            configuration.logger = DiscardingLogger()
            wire = InProcessTransport(server: try SyncServer(configuration: configuration))
        }

        /// A device with a new library; `snapshots` starts it from the server's newest snapshot
        /// and leaves the history to ``SyncEngine/fetchHistory(maximumPages:progress:)``.
        func device(
            _ name: String, seed: UInt64, scope: TokenScope = .readWrite, snapshots: Bool = false, pageSize: Int = 7
        ) throws -> (library: PhotoLibrary, engine: SyncEngine) {
            var options = PhotoLibrary.Options()
            let clock = clock
            options.clock = { clock.read() }
            options.randomSeed = seed
            options.preauthorized = true
            let library = try PhotoLibrary(url: directory.file("\(name).sqlite"), device: DeviceID(name), options: options)
            let token = try DeviceToken.generate()
            try store.registerToken(
                hash: DeviceToken.hash(token), library: "family", device: DeviceID(name), scope: scope, at: clock.read())
            var engineOptions = SyncEngine.Options()
            engineOptions.pullPageSize = pageSize
            engineOptions.bootstrapFromSnapshot = snapshots
            engineOptions.historyPagesPerSync = snapshots ? 0 : Int.max
            let remote = try SyncRemote(libraryURL: "http://sim.invalid/v1/libraries/family", token: token)
            return (library, SyncEngine(library: library, remote: remote, transport: wire, options: engineOptions))
        }

        /// `steps` random changes on random devices, with random syncs.
        func churn(_ devices: [(library: PhotoLibrary, engine: SyncEngine)], steps: Int) async throws {
            for _ in 0..<steps {
                clock.advance(milliseconds: UInt64.random(in: 1...40, using: &random))
                let device = devices.randomElement(using: &random)!
                if Int.random(in: 0..<3, using: &random) == 0 {
                    try await device.engine.sync()
                } else {
                    try RandomChanges.apply(on: device.library, random: &random)
                }
            }
            for device in devices { try await device.engine.sync() }
        }
    }

    /// Every projection row, and the history of the library as `history --json` prints it.
    static func state(_ library: PhotoLibrary) throws -> (rows: [String: [[SQLValue]]], history: String) {
        let rows = try library.readDatabase { db in
            var dump: [String: [[SQLValue]]] = [:]
            for table in Projection.tables {
                let key = try SnapshotContent.columns(of: table, in: db).key.map { "\"\($0)\"" }.joined(separator: ", ")
                dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY \(key)") { row in (0..<row.columnCount).map { row.value($0) } }
            }
            return dump
        }
        let history = AuditTrail.json(try AuditTrail.entries(in: library)).serialized()
        return (rows, history)
    }

    @Test(
        "a device started from a snapshot equals a full replay, before and after verifying it", .serialized, arguments: 0..<histories)
    func equalsFullReplay(history: Int) async throws {
        let world = try World(seed: UInt64(91_000 + history))
        let writers = try (0..<3).map { try world.device("writer-\($0)", seed: UInt64(history * 10 + $0)) }
        // At least one event before the snapshot, whatever the random changes do.
        try await writers[0].library.performChanges { changes in _ = try changes.createAlbum(title: "Start") }
        try await world.churn(writers, steps: 30)
        // One writer, up to date (a purge another writer pushed would retire an older snapshot),
        // snapshots its fold; then the library moves on.
        try await writers[0].engine.sync()
        var upload = try await writers[0].engine.uploadSnapshot()
        #expect(upload.record.position == (try writers[0].engine.cursor()))
        try await world.churn(writers, steps: 15)
        if try await writers[0].engine.latestSnapshot() == nil {
            // A purge since retired it (it may hold the purged asset): one taken after the purge.
            try await writers[0].engine.sync()
            upload = try await writers[0].engine.uploadSnapshot()
            try await writers[1].library.performChanges { changes in _ = try changes.createAlbum(title: "After") }
            try await world.churn(writers, steps: 0)
        }

        let replayer = try world.device("replayer", seed: 1)
        try await replayer.engine.sync()
        let fresh = try world.device("fresh", seed: 2, snapshots: true)
        let report = try await fresh.engine.sync()
        let status = try #require(report.snapshot)
        #expect(status.position == upload.record.position)
        #expect(!status.isVerified)
        #expect(status.fetchedThrough == 0)
        #expect(report.pulledEvents <= Int(try world.store.chainSummary(libraryID: 1).count - upload.record.position))
        // Usable at once: the views are those of the full replay.
        #expect(try Self.state(fresh.library).rows == Self.state(replayer.library).rows)
        #expect(try fresh.library.fetchAssets().allObjects == replayer.library.fetchAssets().allObjects)

        // The history arrives in pages; the snapshot is then verified.
        let verified = try #require(try await fresh.engine.fetchHistory())
        #expect(verified.isVerified)
        #expect(verified.differences.isEmpty, "history \(history): \(verified)")
        let after = try Self.state(fresh.library)
        let reference = try Self.state(replayer.library)
        #expect(after.rows == reference.rows)
        #expect(after.history == reference.history, "history \(history): history --json matches the full replay")
        #expect(try fresh.library.verify().failure == nil)
        #expect(try fresh.library.verify().intactCount == replayer.library.verify().intactCount)
        // The device goes on like any other: its changes reach the others.
        try RandomChanges.apply(on: fresh.library, random: &world.random)
        try await fresh.engine.sync()
        for writer in writers { try await writer.engine.sync() }
        try await replayer.engine.sync()
        try await fresh.engine.sync()
        let converged = try Self.state(replayer.library).rows
        #expect(try Self.state(fresh.library).rows == converged)
        for writer in writers { #expect(try Self.state(writer.library).rows == converged) }
        // A rebuild from the installed snapshot and the live log gives the same tables.
        try fresh.library.rebuild()
        #expect(try Self.state(fresh.library).rows == converged)
    }

    @Test("a poisoned snapshot is used at first, then detected and repaired by the refold of the history")
    func poisonedSnapshot() async throws {
        let world = try World(seed: 5)
        let writers = try (0..<2).map { try world.device("writer-\($0)", seed: UInt64(40 + $0)) }
        try await world.churn(writers, steps: 60)
        for writer in writers {
            try await writer.library.performChanges { changes in _ = try changes.createAlbum(title: "Trip") }
            try await writer.engine.sync()
        }
        // A readWrite peer lies about its fold: an album renamed, an asset made favorite, a row
        // that no event made.
        let liar = try world.device("liar", seed: 9)
        try await liar.engine.sync()
        let target = try #require(try liar.library.fetchAssets().firstObject)
        try liar.library.withDatabase { db in
            try db.execute("UPDATE albums SET title = 'Poisoned' WHERE title = 'Trip'")
            try db.execute("UPDATE assets SET favorite = 1 - favorite WHERE asset_id = ?", [target.id.bytes])
            try db.execute(
                "INSERT INTO albums (album_id, created, title) VALUES (?, 1, 'Ghost')",
                [UUID(uuidString: "0193A5B2-0000-7000-8000-00000000DEAD")!.bytes])
        }
        let upload = try await liar.engine.uploadSnapshot()
        #expect(upload.record.position > 14, "the history must need more than two pages of 7")
        let fresh = try world.device("fresh", seed: 3, snapshots: true)
        try await fresh.engine.sync()
        // The claim is believed until the history is here.
        #expect(try fresh.library.fetchAssetCollections(with: .album).map(\.title).contains("Poisoned"))
        #expect(try fresh.library.snapshotBootstrapStatus()?.position == upload.record.position)
        // Until the history is here, verify says what is missing and compaction waits.
        let unverified = try fresh.library.verify().failure
        #expect(
            unverified?.reason.contains("is fetched through 0 only: sync to fetch the rest") == true, "\(String(describing: unverified))")
        let compaction = #expect(throws: PhotoLibraryError.self) { try fresh.library.compact(upToServerSequence: 1) }
        #expect(compaction?.message.contains("sync until the history is fetched, then compact") == true)
        // A history fetched in several runs goes on where it stopped.
        let partly = try #require(try await fresh.engine.fetchHistory(maximumPages: 2))
        #expect(!partly.isVerified && partly.fetchedThrough == 14)
        let status = try #require(try await fresh.engine.fetchHistory())
        #expect(status.isVerified)
        let tables = Set(status.differences.map(\.table))
        #expect(tables == ["albums", "assets"], "\(status)")
        #expect(status.differences.contains { $0.object == target.id && $0.kind == .changed })
        #expect(status.differences.contains { $0.kind == .extra && $0.table == "albums" })
        #expect(status.description.contains("repaired (the refold won)"))
        // Repaired: the views are those of every honest device.
        let replayer = try world.device("replayer", seed: 4)
        try await replayer.engine.sync()
        #expect(try Self.state(fresh.library).rows == Self.state(replayer.library).rows)
        #expect(try Self.state(fresh.library).history == Self.state(replayer.library).history)
        #expect(!(try fresh.library.fetchAssetCollections(with: .album).map(\.title).contains("Poisoned")))
        // The repair survives a reopen and a rebuild; the report stays.
        try fresh.library.rebuild()
        #expect(try Self.state(fresh.library).rows == Self.state(replayer.library).rows)
        #expect(try fresh.library.snapshotBootstrapStatus()?.differences == status.differences)
    }

    @Test("only readWrite devices upload snapshots; a device not up to date cannot take one")
    func scopesAndFreshness() async throws {
        let world = try World(seed: 6)
        let writer = try world.device("writer", seed: 1)
        try await writer.library.performChanges { changes in _ = try changes.createAlbum(title: "Trip") }
        // Unsent changes: the fold is not the server's.
        await #expect(throws: PhotoLibraryError.self) { try await writer.engine.uploadSnapshot() }
        try await writer.engine.sync()
        try await writer.engine.uploadSnapshot()
        for scope in [TokenScope.readOnly, .addOnly] {
            let device = try world.device("device-\(scope.rawValue)", seed: 2, scope: scope)
            try await device.engine.sync()
            let error = await #expect(throws: SyncError.self) { try await device.engine.uploadSnapshot() }
            #expect(error?.description.contains("only a readWrite device may upload snapshots") == true)
        }
        // A new library that holds no event yet cannot take one either.
        let empty = try world.device("empty", seed: 3)
        await #expect(throws: PhotoLibraryError.self) { try await empty.engine.uploadSnapshot() }
    }

    @Test("a server without snapshots, or a library holding events, replays as before")
    func noSnapshot() async throws {
        let world = try World(seed: 7)
        let writer = try world.device("writer", seed: 1)
        try await world.churn([writer], steps: 10)
        let fresh = try world.device("fresh", seed: 2, snapshots: true)
        let report = try await fresh.engine.sync()
        #expect(report.snapshot == nil)
        #expect(try Self.state(fresh.library).rows == Self.state(writer.library).rows)
        // A snapshot made later does not replace a library that holds events.
        try await writer.engine.uploadSnapshot()
        #expect(try await fresh.engine.bootstrapFromSnapshot() == nil)
    }

    @Test("a snapshot that does not match the server's chain, or its name, is not installed")
    func forgedSnapshot() async throws {
        let world = try World(seed: 8)
        let writer = try world.device("writer", seed: 1)
        try await world.churn([writer], steps: 12)
        let snapshot = try writer.library.replica.makeSnapshot()
        let fresh = try world.device("fresh", seed: 2)
        _ = try await fresh.engine.bind()
        let (page, _) = try await fresh.engine.pullPage(since: max(0, snapshot.position - 2), limit: 2)
        let events = try fresh.engine.sequenced(page)
        let event = try #require(events.last)
        let previous = snapshot.position == 1 ? HashChain.origin : events.first!.serverChainHash
        // The wrong chain value before the event.
        #expect(throws: PhotoLibraryError.self) {
            try fresh.library.replica.installSnapshot(
                snapshot, expectedHash: snapshot.hash, sourceDevice: "writer", event: event, previousChainHash: HashChain.origin + [])
        }
        // Bytes that do not hash to the name the server recorded.
        let error = #expect(throws: PhotoLibraryError.self) {
            try fresh.library.replica.installSnapshot(
                snapshot, expectedHash: SHA256.hash([1]), sourceDevice: "writer", event: event, previousChainHash: previous)
        }
        #expect(error?.message.contains("does not hash to its name") == true)
        #expect(try fresh.library.replica.isEmpty())
        // The genuine one installs.
        try fresh.library.replica.installSnapshot(
            snapshot, expectedHash: snapshot.hash, sourceDevice: "writer", event: event, previousChainHash: previous)
        #expect(try Self.state(fresh.library).rows == Self.state(writer.library).rows)
    }

    @Test("over HTTP on loopback: upload, newest snapshot, bootstrap, refusals with their reasons")
    func loopback() async throws {
        let world = try SyncWorld(onServerClock: true)
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna", seed: 1)
        var random = SeededRandomNumberGenerator(seed: 3)
        for _ in 0..<12 { try RandomChanges.apply(on: anna.library, random: &random) }
        try await anna.sync()
        let upload = try await anna.engine.uploadSnapshot()
        #expect(upload.uploadedBytes)
        #expect(try await anna.engine.latestSnapshot() == upload.record)
        // The same fold again: the server holds the bytes already.
        #expect(try await anna.engine.uploadSnapshot().uploadedBytes == false)

        // A snapshot offer whose chain value is not the server's is refused with 409.
        let transport = CurlTransport()
        let url = URL(string: "http://127.0.0.1:\(server.port)\(SyncRoutes.snapshots(library: "family"))")!
        var headers = HTTPHeaders()
        headers["Authorization"] = "Bearer \(anna.engine.remote.token)"
        headers["Content-Type"] = SyncRoutes.jsonContentType
        let wrong = SnapshotOffer(position: upload.record.position, chainHash: [UInt8](repeating: 7, count: 32), hash: upload.record.hash)
        let refused = try await transport.send(HTTPRequest(method: .post, url: url, headers: headers, body: .bytes(wrong.encoded())))
        #expect(refused.status == 409)
        #expect(try ErrorResponse.decode(refused.body.bytes).code == "conflict")
        // An addOnly token is refused before anything is read.
        headers["Authorization"] = "Bearer \(try server.token(device: "kiosk", scope: .addOnly))"
        let forbidden = try await transport.send(HTTPRequest(method: .post, url: url, headers: headers, body: .bytes(wrong.encoded())))
        #expect(forbidden.status == 403)
        #expect(try ErrorResponse.decode(forbidden.body.bytes).message.contains("does not allow uploading snapshots") == true)

        try RandomChanges.apply(on: anna.library, random: &random)
        try await anna.sync()
        var options = SyncEngine.Options()
        options.bootstrapFromSnapshot = true
        var libraryOptions = PhotoLibrary.Options()
        libraryOptions.preauthorized = true
        let library = try PhotoLibrary(url: directory.file("ben.sqlite"), device: "ben", options: libraryOptions)
        let ben = SyncEngine(library: library, remote: try server.remote(device: "ben"), transport: testTransport(), options: options)
        let report = try await ben.sync()
        let status = try #require(report.snapshot)
        #expect(status.isVerified && status.differences.isEmpty)
        #expect(try Device.dump(library) == anna.dump())
        // The server records ben at its cursor again once the history is fetched.
        let benRecord = try #require(try server.store.devices(library: "family").first { $0.device == "ben" })
        #expect(benRecord.lastPulledSequence == (try ben.cursor()))
        #expect(try library.verify().failure == nil)
    }

    /// A new device of `server` that starts from snapshots.
    static func snapshotDevice(_ name: DeviceID, server: TestServer, directory: TemporaryDirectory) throws -> (PhotoLibrary, SyncEngine) {
        var options = SyncEngine.Options()
        options.bootstrapFromSnapshot = true
        var libraryOptions = PhotoLibrary.Options()
        libraryOptions.preauthorized = true
        let library = try PhotoLibrary(url: directory.file("\(name.rawValue).sqlite"), device: name, options: libraryOptions)
        return (
            library, SyncEngine(library: library, remote: try server.remote(device: name), transport: testTransport(), options: options)
        )
    }

    @Test("an encrypted library's snapshot is sealed: the server cannot read it; an enrolled device starts from it and verifies it")
    func encryptedSnapshot() async throws {
        let world = try SyncWorld(onServerClock: true)
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        try await anna.library.performChanges { changes in
            let assets = try (0..<3).map { _ in
                try changes.createImageRecord(width: 64, height: 48, creationDate: nil).placeholderForCreatedAsset.localIdentifier
            }
            try changes.createAlbum(title: "Secret Garden Album").addAssets(assets)
        }
        try await anna.sync()
        let upload = try await anna.engine.uploadSnapshot()
        let stored = try EncryptionSyncTests().everything(under: server.directory.url).filter {
            SHA256.hash($0.bytes) == upload.record.hash
        }
        let blob = try #require(stored.first).bytes
        #expect(blob.firstRange(of: Array("Secret Garden Album".utf8)) == nil)
        #expect(blob.firstRange(of: Array("albums".utf8)) == nil, "not even the table names are in the clear")

        // A device awaiting enrolment cannot open it and pulls nothing meanwhile.
        let (cara, engine) = try Self.snapshotDevice("cara-laptop", server: server, directory: directory)
        let waiting = try await engine.sync()
        #expect(waiting.snapshotNotes.contains { $0.contains("does not hold yet") })
        #expect(try engine.library.replica.isEmpty())
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        let report = try await engine.sync()
        let status = try #require(report.snapshot)
        #expect(status.position == upload.record.position)
        #expect(status.isVerified && status.differences.isEmpty, "\(status)")
        #expect(try cara.viewsForTests() == anna.library.viewsForTests())
    }

    @Test("a purge retires the server's snapshots before it and deletes their blobs; a new device replays, a later snapshot serves")
    func purgeRetiresSnapshot() async throws {
        let world = try SyncWorld(onServerClock: true)
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let assets = try await anna.library.performChanges { changes in
            try (0..<3).map { _ in
                try changes.createImageRecord(width: 64, height: 48, creationDate: nil).placeholderForCreatedAsset.localIdentifier
            }
        }
        try await anna.sync()
        let old = try await anna.engine.uploadSnapshot()
        func stored(_ hash: [UInt8]) throws -> Bool {
            try EncryptionSyncTests().everything(under: server.directory.url).contains { SHA256.hash($0.bytes) == hash }
        }
        #expect(try stored(old.record.hash))
        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        try await anna.sync()
        // The server no longer offers it, and its bytes are gone from the blob store.
        #expect(try await anna.engine.latestSnapshot() == nil)
        #expect(try !stored(old.record.hash))

        let (cara, engine) = try Self.snapshotDevice("cara-laptop", server: server, directory: directory)
        _ = try await engine.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        let report = try await engine.sync()
        #expect(report.snapshot == nil)
        #expect(try cara.viewsForTests() == anna.library.viewsForTests())
        #expect(try cara.fetchAssets().count == 2)
        // A snapshot taken after the purge is usable again.
        try await anna.engine.uploadSnapshot()
        let (dana, danaEngine) = try Self.snapshotDevice("dana-phone", server: server, directory: directory)
        _ = try await danaEngine.sync()
        for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
        let started = try await danaEngine.sync()
        #expect(started.snapshot?.isVerified == true && started.snapshot?.differences.isEmpty == true, "\(started)")
        #expect(try dana.viewsForTests() == anna.library.viewsForTests())
    }

    @Test("an encrypted snapshot seals each asset's rows with the asset's key: after a purge, everything left reads nothing of the asset")
    func purgedAssetUnreadableInOldSnapshot() async throws {
        let world = try SyncWorld(onServerClock: true)
        let server = world.server
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let assets = try await anna.library.performChanges { changes in
            let assets = try (0..<3).map { _ in
                try changes.createImageRecord(width: 64, height: 48, creationDate: nil).placeholderForCreatedAsset.localIdentifier
            }
            try changes.createAlbum(title: "Garden").addAssets(assets)
            return assets
        }
        try await anna.library.performChanges { changes in
            try changes.assetChangeRequest(for: assets[0]).setFavorite(true)
        }
        try await anna.sync()
        let upload = try await anna.engine.uploadSnapshot()
        // A server that keeps old snapshot bytes: these are they.
        let bytes = try #require(
            try EncryptionSyncTests().everything(under: server.directory.url).first { SHA256.hash($0.bytes) == upload.record.hash }
        ).bytes
        let old = try LibrarySnapshot(bytes: bytes)
        #expect(old.sealing == .assetKeys)
        let doomed = try #require(UUID(uuidString: String(assets[0].prefix(36))))
        let before = try anna.library.replica.readableContent(of: old)
        #expect(before.unreadable.isEmpty)
        #expect(before.content.firstRange(of: doomed.bytes) != nil, "before the purge, the asset's rows are in the snapshot")

        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        try await anna.sync()
        // Every key left (the library key, every other asset's key) reads nothing of the purged asset.
        let after = try anna.library.replica.readableContent(of: old)
        #expect(after.unreadable == [doomed])
        #expect(after.content.firstRange(of: doomed.bytes) == nil, "no row of the purged asset: not its record, resources or memberships")
        for kept in assets.dropFirst() {
            let id = try #require(UUID(uuidString: String(kept.prefix(36))))
            #expect(after.content.firstRange(of: id.bytes) != nil)
        }
        // A device offered those bytes anyway (a server that kept them) cannot start from them.
        let refusal = #expect(throws: PhotoLibraryError.self) { try anna.library.replica.content(of: old) }
        #expect(refusal?.message.contains("whose key has been destroyed since") == true, "\(String(describing: refusal))")
    }

    @Test(
        "a device started from a snapshot before a purge folds the purge, verifies the snapshot and equals the others",
        arguments: [false, true])
    func startedBeforePurge(encrypted: Bool) async throws {
        let world = try SyncWorld(onServerClock: true)
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1)
        if encrypted { _ = try anna.library.enableEncryption() }
        let assets = try await anna.library.performChanges { changes in
            let assets = try (0..<4).map { _ in
                try changes.createImageRecord(width: 64, height: 48, creationDate: nil).placeholderForCreatedAsset.localIdentifier
            }
            try changes.createAlbum(title: "Garden").addAssets(assets)
            return assets
        }
        try await anna.sync()
        try await anna.engine.uploadSnapshot()
        // Cara starts from the snapshot and leaves its history for later.
        var options = SyncEngine.Options()
        options.bootstrapFromSnapshot = true
        options.historyPagesPerSync = 0
        options.pullPageSize = 2
        var libraryOptions = PhotoLibrary.Options()
        libraryOptions.preauthorized = true
        let cara = try PhotoLibrary(url: directory.file("cara.sqlite"), device: "cara-laptop", options: libraryOptions)
        let engine = SyncEngine(
            library: cara, remote: try server.remote(device: "cara-laptop"), transport: testTransport(), options: options)
        _ = try await engine.sync()
        if encrypted {
            for request in try await anna.engine.enrolmentRequests() { try await anna.engine.approve(request) }
            _ = try await engine.sync()
        }
        #expect(try cara.snapshotBootstrapStatus()?.isVerified == false)
        #expect(try cara.fetchAssets().count == 4)

        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[1]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[1]]) }
        try await anna.sync()
        _ = try await engine.sync()
        #expect(try cara.fetchAssets().count == 3)
        let status = try #require(try await engine.fetchHistory())
        #expect(status.isVerified && status.differences.isEmpty, "\(status)")
        #expect(try cara.viewsForTests() == anna.library.viewsForTests())
        #expect(try cara.verify().failure == nil)
        try cara.rebuild()
        #expect(try cara.viewsForTests() == anna.library.viewsForTests())
    }

    @Test("sync --watch on a new device goes live from the snapshot at once and verifies the history in the background")
    func liveFromSnapshot() async throws {
        let world = try SyncWorld(onServerClock: true)
        let (server, directory) = (world.server, world.directory)
        let anna = try world.device("anna-phone", seed: 1)
        var random = SeededRandomNumberGenerator(seed: 5)
        try await anna.library.performChanges { changes in _ = try changes.createAlbum(title: "Start") }
        for _ in 0..<30 { try RandomChanges.apply(on: anna.library, random: &random) }
        try await anna.sync()
        let upload = try await anna.engine.uploadSnapshot()
        try anna.library.performChangesAndWait { changes in _ = try changes.createAlbum(title: "After the snapshot") }
        try await anna.sync()

        var options = SyncEngine.Options()
        options.bootstrapFromSnapshot = true
        options.historyPagesPerSync = 1
        options.pullPageSize = 4
        var libraryOptions = PhotoLibrary.Options()
        libraryOptions.preauthorized = true
        let ben = try PhotoLibrary(url: directory.file("ben.sqlite"), device: "ben-tablet", options: libraryOptions)
        let engine = SyncEngine(library: ben, remote: try server.remote(device: "ben-tablet"), transport: testTransport(), options: options)
        let watcher = LiveSyncTests.Watcher(engine.live(LiveSyncTests.options()))
        guard case .started(let first) = try await watcher.next(where: { _ in true }) else {
            Issue.record("the first event is not the first sync: \(watcher.seen)")
            return
        }
        // Live before any of the history is here, with the views of the whole log.
        #expect(first.snapshot?.position == upload.record.position)
        #expect(first.snapshot?.fetchedThrough == 0 && first.snapshot?.isVerified == false, "\(String(describing: first.snapshot))")
        #expect(try Self.state(ben).rows == Self.state(anna.library).rows)
        // Changes flow while the history arrives.
        let album = try anna.library.performChangesAndWait { try $0.createAlbum(title: "Live").localIdentifier }
        try await anna.sync()
        let verified = try await watcher.next { if case .historyVerified = $0 { true } else { false } }
        guard case .historyVerified(let status) = verified else { return }
        #expect(status.isVerified && status.differences.isEmpty, "\(status)")
        // The album came by a live pull, before or after the verification.
        let start = ContinuousClock.now
        while try ben.fetchAssetCollections(withLocalIdentifiers: [album]).count != 1, ContinuousClock.now - start < TestPatience.limit {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try Self.state(ben).rows == Self.state(anna.library).rows)
        #expect(try Self.state(ben).history == Self.state(anna.library).history)
        #expect(try ben.verify().failure == nil)
    }

    /// The stores the server binary runs on here: its SQLite file, and PostgreSQL when the tests
    /// have one (`Tools/test.sh` starts a throwaway cluster).
    static var serverStores: [String] { ScaleOutTests.postgresURL == nil ? ["sqlite"] : ["sqlite", "postgresql"] }

    @Test("the photoledger-server process on loopback: snapshots on its store, a device started from one", arguments: serverStores)
    func serverProcess(store: String) async throws {
        let directory = try TemporaryDirectory()
        let tool = try builtExecutable("photoledger-server")
        let scale = ScaleOutTests()
        let db = store == "sqlite" ? directory.file("server.sqlite").path : try scale.createDatabase(admin: ScaleOutTests.postgresURL!)
        _ = try scale.run(tool, ["admin", "create-library", "family", "--db", db])
        func token(_ device: String, _ scope: String = "readWrite") throws -> String {
            try scale.run(tool, ["admin", "issue-token", "--db", db, "--library", "family", "--device", device, "--scope", scope])
        }
        let server = try ServeProcess(tool, arguments: ["--db", db, "--blobs", directory.file("blobs").path])
        let url = "http://127.0.0.1:\(server.port)/v1/libraries/family"
        func device(_ name: String, scope: String = "readWrite", snapshots: Bool = false) throws -> (PhotoLibrary, SyncEngine) {
            var options = PhotoLibrary.Options()
            options.preauthorized = true
            options.randomSeed = UInt64(name.utf8.count)
            let library = try PhotoLibrary(url: directory.file("\(name).sqlite"), device: DeviceID(name), options: options)
            var engineOptions = SyncEngine.Options()
            engineOptions.bootstrapFromSnapshot = snapshots
            engineOptions.pullPageSize = 9
            let remote = try SyncRemote(libraryURL: url, token: try token(name, scope))
            return (library, SyncEngine(library: library, remote: remote, transport: testTransport(), options: engineOptions))
        }
        let (anna, annaEngine) = try device("anna")
        var random = SeededRandomNumberGenerator(seed: 11)
        for _ in 0..<25 { try RandomChanges.apply(on: anna, random: &random) }
        try await annaEngine.sync()
        let upload = try await annaEngine.uploadSnapshot()
        #expect(try await annaEngine.latestSnapshot() == upload.record)
        let (_, frameEngine) = try device("frame", scope: "readOnly")
        await #expect(throws: SyncError.self) { try await frameEngine.uploadSnapshot() }
        for _ in 0..<10 { try RandomChanges.apply(on: anna, random: &random) }
        try await annaEngine.sync()

        let (ben, benEngine) = try device("ben", snapshots: true)
        let report = try await benEngine.sync()
        #expect(report.snapshot?.position == upload.record.position)
        #expect(report.snapshot?.isVerified == true && report.snapshot?.differences.isEmpty == true)
        let (cara, caraEngine) = try device("cara")
        try await caraEngine.sync()
        #expect(try Self.state(ben).rows == Self.state(cara).rows)
        #expect(try Self.state(ben).history == Self.state(cara).history)
        #expect(try ben.verify().failure == nil)
    }
}
