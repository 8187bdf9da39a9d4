import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedgerServer
import PhotoMedia
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Passes requests to `base`; when a batch of events is pushed, notes which assets it creates
/// whose keys neither the server's key store holds yet nor the batch carries (an asset's key is
/// in the entry `entry` names: its pack, or an entry of its own), how many asset key entries the
/// server holds, and how many the batch carries; counts the asset key entries written to the
/// key store's own route.
final class KeyOrderWatcher: HTTPTransport, @unchecked Sendable {
    let base: any HTTPTransport
    let store: SQLiteServerStore
    let entry: @Sendable (UUID) throws -> String
    // Safe to share: the notes are touched only under `lock`.
    private let lock = NSLock()
    private var missing: [UUID] = []
    private var held: [Int] = []
    private var carried: [Int] = []
    private var written = 0
    private var writeRequests = 0

    init(_ base: any HTTPTransport, store: SQLiteServerStore, library: PhotoLibrary) {
        self.base = base
        self.store = store
        self.entry = { asset in
            try library.readDatabase { try PhotoLibrary.pack(of: asset, in: $0) } ?? KeyStoreName.asset(asset)
        }
    }

    static func isAssetKeyEntry(_ name: String) -> Bool { name.hasPrefix("asset/") || name.hasPrefix("pack/") }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        if request.method == .post, request.url.path.hasSuffix("/events") {
            let keyed = request.headers["Content-Type"] == EventBatch.keyedContentType
            let push = keyed ? try EventBatch.decodeKeyed(request.body.bytes) : try EventBatch.decode(request.body.bytes)
            let names = Set(try store.keyEntries(libraryID: 1, after: 0).entries.map(\.name).filter(Self.isAssetKeyEntry))
            let sent = Set(push.keys.filter { $0.value != nil }.map(\.name))
            let created = try push.events.compactMap { received -> (UUID, String)? in
                guard case .valid(let wire) = received, wire.event.type == "asset.created" else { return nil }
                return (wire.event.object, try entry(wire.event.object))
            }
            lock.withLock {
                missing += created.filter { !names.contains($0.1) && !sent.contains($0.1) }.map(\.0)
                held.append(names.count)
                carried.append(push.keys.count)
            }
        } else if request.method == .post, request.url.path.hasSuffix("/keys") {
            let changes =
                request.headers["Content-Type"] == KeyStoreBody.contentType
                ? try KeyStoreBody.decodeChanges(request.body.bytes).changes : []
            lock.withLock {
                written += changes.filter { Self.isAssetKeyEntry($0.name) }.count
                writeRequests += 1
            }
        }
        return try await base.send(request)
    }

    /// Assets created by a pushed batch whose keys the server did not hold when the batch was
    /// sent, and the batch did not carry.
    var assetsWithoutKeys: [UUID] { lock.withLock { missing } }
    /// The asset key entries (packs and keys of their own) the server held as each batch was sent.
    var assetKeysAtPushes: [Int] { lock.withLock { held } }
    /// The key changes each batch carried.
    var keysCarried: [Int] { lock.withLock { carried } }
    /// The asset key entries written through the key store's route (in its binary form).
    var assetKeysWritten: Int { lock.withLock { written } }
    /// The requests that wrote to the key store's route.
    var keyStoreRequests: Int { lock.withLock { writeRequests } }
}

/// The key store of a server from before key packs: the `pack/` changes of a binary request are
/// answered `forbidden` as names it does not know; the other changes go to the server.
final class NoKeyPacks: HTTPTransport, @unchecked Sendable {
    private let base: any HTTPTransport
    // Safe to share: the count is touched only under `lock`.
    private let lock = NSLock()
    private var refused = 0

    init(base: any HTTPTransport) { self.base = base }

    /// The packs refused.
    var refusals: Int { lock.withLock { refused } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        guard request.method == .post, request.url.path.hasSuffix("/keys"), request.headers["Content-Type"] == KeyStoreBody.contentType
        else { return try await base.send(request) }
        let changes = try KeyStoreBody.decodeChanges(request.body.bytes).changes
        let kept = changes.filter { !$0.name.hasPrefix("pack/") }
        var answer = KeyChangesResponse(results: [])
        if !kept.isEmpty {
            var forwarded = request
            forwarded.body = .bytes(KeyStoreBody.encode(KeyChangesRequest(changes: kept)))
            let response = try await base.send(forwarded)
            answer = try KeyStoreBody.decodeResults(response.body.bytes)
        }
        var results = answer.results.makeIterator()
        answer.results = changes.map { change in
            guard change.name.hasPrefix("pack/") else { return results.next()! }
            lock.withLock { refused += 1 }
            return .init(name: change.name, status: .forbidden, reason: "'\(change.name)' is not an entry of the key store")
        }
        return SyncTransport.HTTPResponse(
            status: 200, headers: ["Content-Type": KeyStoreBody.contentType], body: .bytes(KeyStoreBody.encode(answer)))
    }
}

/// A server that takes no keys with a push (an older server): a keyed batch is answered 415.
final class NoKeyedBatches: HTTPTransport, @unchecked Sendable {
    // Safe to share: the count is touched only under `lock`.
    private let lock = NSLock()
    private let base: any HTTPTransport
    private var refused = 0

    init(base: any HTTPTransport) { self.base = base }

    /// The keyed batches refused.
    var refusals: Int { lock.withLock { refused } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        guard request.headers["Content-Type"] == EventBatch.keyedContentType else { return try await base.send(request) }
        lock.withLock { refused += 1 }
        return SyncTransport.HTTPResponse(
            status: 415, headers: ["Content-Type": "application/json"],
            body: .bytes(Array(#"{"error":{"code":"unsupportedMediaType","message":"the body must be JSON"}}"#.utf8)))
    }
}

/// The key store of a server that reads JSON only, after `binaryAnswers` binary changes (an
/// older server in place of the one before): binary changes are answered 415, and reads are
/// answered in JSON whatever the `Accept`. Counts the changes of each request by its form.
final class JSONOnlyKeyStore: HTTPTransport, @unchecked Sendable {
    // Safe to share: the counts are touched only under `lock`.
    private let lock = NSLock()
    private let base: any HTTPTransport
    private var binaryAnswers: Int
    private var refused = 0
    private var binary: [Int] = []
    private var json: [Int] = []

    init(base: any HTTPTransport, binaryAnswers: Int = 0) {
        self.base = base
        self.binaryAnswers = binaryAnswers
    }

    var refusals: Int { lock.withLock { refused } }
    /// The changes of each binary request answered, and of each JSON one.
    var requests: (binary: [Int], json: [Int]) { lock.withLock { (binary, json) } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        guard request.url.path.hasSuffix("/keys") else { return try await base.send(request) }
        var request = request
        if request.method == .post, request.headers["Content-Type"] == KeyStoreBody.contentType {
            let count = try KeyStoreBody.decodeChanges(request.body.bytes).changes.count
            let refuse = lock.withLock {
                guard binaryAnswers == 0 else {
                    binaryAnswers -= 1
                    binary.append(count)
                    return false
                }
                refused += 1
                return true
            }
            if refuse {
                return SyncTransport.HTTPResponse(
                    status: 415, headers: ["Content-Type": "application/json"],
                    body: .bytes(Array(#"{"error":{"code":"unsupportedMediaType","message":"the body must be JSON"}}"#.utf8)))
            }
        } else if request.method == .post {
            let body =
                request.headers["Content-Encoding"] == "gzip"
                ? try Gzip.decompress(request.body.bytes, limit: 64 << 20) : request.body.bytes
            let count = try KeyChangesRequest.decode(body).changes.count
            lock.withLock { json.append(count) }
        }
        if lock.withLock({ binaryAnswers == 0 }) { request.headers["Accept"] = nil }
        return try await base.send(request)
    }
}

@Suite("Encrypted pushes")
struct EncryptedPushTests {
    @Test(
        "asset keys go up with the push batches of their assets: in the batch itself, or just before it when the batch carries no keys; an enrolled device then reads everything",
        arguments: [true, false])
    func assetKeysTravelWithTheirBatches(keyed: Bool) async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let watcher = KeyOrderWatcher(testTransport(), store: world.server.store, library: anna.library)
        var options = SyncEngine.Options()
        options.pushBatchSize = 50
        options.sendsKeysWithBatches = keyed
        let engine = SyncEngine(
            library: anna.library, remote: try world.server.remote(device: "anna-phone"), transport: watcher, options: options)
        // Four blocks of 30 assets: a pack each. The first batch holds the first block and part
        // of the second, the second batch the rest of the second, the third and part of the fourth.
        for _ in 0..<4 {
            try anna.library.performChangesAndWait { changes in
                for _ in 0..<30 { _ = try changes.createImageRecord(width: 400, height: 300, creationDate: nil) }
            }
        }
        #expect(try anna.library.pendingKeyEntries().count == 4 + 4)
        let report = try await engine.sync()
        #expect(report.pushedEvents == 120 && report.encryptionNotes.isEmpty)
        #expect(watcher.assetsWithoutKeys.isEmpty)
        let held = watcher.assetKeysAtPushes
        if keyed {
            // Each batch carried the packs of its blocks not sent before, stored with it: none went by the key store.
            #expect(watcher.keysCarried == [2, 2, 0] && held == [0, 2, 4], "\(watcher.keysCarried) \(held)")
            #expect(watcher.assetKeysWritten == 0)
        } else {
            // Batch by batch: when the first batch went, the last block's pack had not gone yet.
            #expect(held.count == 3 && held[0] >= 2 && held[0] <= 3)
            #expect(watcher.keysCarried == [0, 0, 0] && watcher.assetKeysWritten == 4)
        }
        // One request to the key store in the whole sync (the device's public key, its ring, the
        // library's identity and recovery copy), not one per batch.
        #expect(watcher.keyStoreRequests == (keyed ? 1 : 3))
        #expect(try anna.library.pendingKeyEntries().isEmpty)
        #expect(
            try world.server.store.keyEntries(libraryID: 1, after: 0).entries.filter { KeyOrderWatcher.isAssetKeyEntry($0.name) }.count == 4
        )

        let ben = try world.device("ben-tablet", seed: 2)
        try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
        try await engine.sync()
        let pulled = try await ben.sync()
        #expect(pulled.pulledEvents == 120 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.statistics().quarantined.isEmpty)
        #expect(try ben.library.fetchAssets().count == 120)
    }

    @Test(
        "the blobs a push declares are the ones its events' payloads name: creations, edits (one superseded), a revert, renditions"
    )
    func declaredReferencesMatchPayloads() async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let files = try (0..<3).map { index in
            let url = world.directory.file("photo-\(index).jpg")
            try photo(UInt64(index + 1)).write(to: url)
            return url
        }
        let assets = try await anna.library.performChanges { changes in
            try changes.importAssets(fromFilesAt: files).map { outcome in
                guard case .created(let request) = outcome else { throw PhotoLibraryError(.internalError, "not imported") }
                return request.placeholderForCreatedAsset.localIdentifier
            }
        }
        for seed: UInt64 in [7, 8] {
            let edit = ContentEditingOutput(
                renderedContent: .data(Data(JPEGEncoder().encode(RGBImage.scene(width: 200, height: 100, seed: seed)))),
                adjustmentFormatIdentifier: "com.example.crop", adjustmentFormatVersion: "1", adjustmentData: Data("crop \(seed)".utf8))
            try anna.library.performChangesAndWait { try $0.assetChangeRequest(for: assets[0]).setContentEditingOutput(edit) }
        }
        try anna.library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: assets[1]).revertAssetContentToOriginal()
            try changes.assetChangeRequest(for: assets[2]).setFavorite(true)
        }
        _ = try await anna.library.imageManager.requestImage(
            for: assets[2], targetSize: CGSize(width: 256, height: 256), contentMode: .aspectFill)
        #expect(try anna.library.replica.recordRenditions() > 0)

        let events = try anna.library.replica.outbox(limit: 1000).map(\.event)
        let references = try anna.library.replica.blobReferences(of: events)
        // The asset rows answer for the creations, the last edit and the revert; the superseded
        // edit and the renditions are read from their payloads.
        let edits = events.filter { $0.type == EventType.assetContentEdited.rawValue }
        let folded = try anna.library.replica.foldedReferences(of: events)
        #expect(
            edits.count == 3
                && Set(folded.keys)
                    == Set(events.filter { $0.type == EventType.assetCreated.rawValue }.map(\.id) + edits.dropFirst().map(\.id))
        )
        #expect(folded[edits[2].id] == [])
        // What the payloads name, read as the fold reads them, by object.
        var expected: [UUID: Set<String>] = [:]
        var renditions = Set<String>()
        let context = anna.library.foldContext
        for event in events {
            let stamp = WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
            var hashes: [String] = []
            switch context.verdict(on: event, stamp: stamp) {
            case .fold(.assetCreated(let creation), _): hashes = creation.resources.map { Hex.encode($0.sha256) }
            case .fold(.assetContentEdited(let edit), _):
                hashes = [edit.rendered, edit.adjustment].compactMap { $0.map { Hex.encode($0.sha256) } }
            case .fold(.renditionRecorded(let rendition), _): hashes = [Hex.encode(rendition.sha256)]
            default: continue
            }
            let keyID = try #require(event.seal?.keyID)
            let names = try anna.library.encryptedBlobNames(for: hashes.map { (event.object, $0, keyID) })
            #expect(names.count == Set(hashes).count)
            expected[event.object, default: []].formUnion(names)
            if event.type == EventType.assetRenditionRecorded.rawValue { renditions.formUnion(names) }
        }
        #expect(expected.count == 3 && expected.values.reduce(0) { $0 + $1.count } >= 3 + 4 + 1)
        #expect(references.byObject == expected)
        #expect(!renditions.isEmpty && references.renditions == renditions)
        #expect(references.resources == expected.values.reduce(into: Set<String>()) { $0.formUnion($1) }.subtracting(renditions))

        // The server is told the same, and a device enrolled afterwards reads everything.
        let report = try await anna.sync()
        #expect(report.encryptionNotes.isEmpty && report.uploadedResources == references.resources.count)
        #expect(report.uploadedRenditions == renditions.count)
        let ben = try world.device("ben-tablet", seed: 2)
        try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
        try await anna.sync()
        let pulled = try await ben.sync()
        #expect(pulled.quarantinedEvents.isEmpty && pulled.downloadedResources > 0)
        #expect(try ben.library.viewsForTests() == anna.library.viewsForTests())
    }

    @Test("the key store goes in its binary form, a push batch's keys in one request; a server that refuses it gets JSON from then on")
    func keyStoreFallsBackToJSON() async throws {
        for binaryAnswers in [Int.max, 1] {
            let world = try SyncWorld()
            let anna = try world.device("anna-phone", seed: 1, encrypted: true)
            let server = JSONOnlyKeyStore(base: testTransport(), binaryAnswers: binaryAnswers)
            var options = SyncEngine.Options()
            options.pushBatchSize = 1005
            options.sendsKeysWithBatches = false  // the asset keys by the key store's route
            let engine = SyncEngine(
                library: anna.library, remote: try world.server.remote(device: "anna-phone"), transport: server, options: options)
            // A block each: 1,005 packs, more than one request of the JSON form takes.
            for _ in 0..<1005 {
                try anna.library.performChangesAndWait { changes in
                    _ = try changes.createImageRecord(width: 40, height: 30, creationDate: nil)
                }
            }
            let report = try await engine.sync()
            #expect(report.pushedEvents == 1005 && report.encryptionNotes.isEmpty)
            #expect(try anna.library.pendingKeyEntries().isEmpty)
            let requests = server.requests
            if binaryAnswers == 1 {
                // The asset keys' request was refused, then sent as JSON in parts the JSON form allows.
                #expect(server.refusals == 1 && requests.binary.count == 1)
                #expect(requests.json == [1000, 5])
            } else {
                #expect(server.refusals == 0 && requests.json.isEmpty)
                #expect(requests.binary.contains(1005), "\(requests.binary)")
            }
            #expect(try world.server.store.keyEntries(libraryID: 1, after: 0).entries.filter { $0.name.hasPrefix("pack/") }.count == 1005)

            let ben = try world.device("ben-tablet", seed: 2)
            try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
            try await engine.sync()
            let pulled = try await ben.sync()
            #expect(pulled.pulledEvents == 1005 && pulled.quarantinedEvents.isEmpty)
            #expect(try ben.library.fetchAssets().count == 1005)
        }
    }
}

extension EncryptedPushTests {
    @Test(
        "a server from before key packs refuses them: their keys go up on their own in the same sync, and an enrolled device reads everything"
    )
    func serverWithoutKeyPacks() async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let older = NoKeyPacks(base: testTransport())
        var options = SyncEngine.Options()
        options.pushBatchSize = 50
        options.sendsKeysWithBatches = false  // the keys by the key store's route
        let engine = SyncEngine(
            library: anna.library, remote: try world.server.remote(device: "anna-phone"), transport: older, options: options)
        for _ in 0..<3 {
            try anna.library.performChangesAndWait { changes in
                for _ in 0..<40 { _ = try changes.createImageRecord(width: 400, height: 300, creationDate: nil) }
            }
        }
        let report = try await engine.sync()
        #expect(report.pushedEvents == 120 && report.encryptionNotes.isEmpty, "\(report.encryptionNotes)")
        #expect(older.refusals == 3)
        #expect(try anna.library.pendingKeyEntries().isEmpty)
        let names = try world.server.store.keyEntries(libraryID: 1, after: 0).entries.map(\.name)
        #expect(names.filter { $0.hasPrefix("asset/") }.count == 120 && !names.contains { $0.hasPrefix("pack/") })
        // The keys name no pack now: a purge deletes an entry of its own.
        #expect(
            try anna.library.readDatabase { try $0.firstRow("SELECT count(*) FROM e2e_asset_keys WHERE pack IS NOT NULL") { $0.int64(0) } }
                == 0)

        let ben = try world.device("ben-tablet", seed: 2)
        try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
        try await engine.sync()
        let pulled = try await ben.sync()
        #expect(pulled.pulledEvents == 120 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.fetchAssets().count == 120)
    }

    @Test("a server that takes no keys with a push gets each batch's keys by the key store, just before the batch, from its refusal on")
    func olderServerGetsKeysByTheKeyStore() async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let older = NoKeyedBatches(base: testTransport())
        let watcher = KeyOrderWatcher(older, store: world.server.store, library: anna.library)
        var options = SyncEngine.Options()
        options.pushBatchSize = 50
        let engine = SyncEngine(
            library: anna.library, remote: try world.server.remote(device: "anna-phone"), transport: watcher, options: options)
        // Four blocks of 30 assets: a pack each (see assetKeysTravelWithTheirBatches).
        for _ in 0..<4 {
            try anna.library.performChangesAndWait { changes in
                for _ in 0..<30 { _ = try changes.createImageRecord(width: 400, height: 300, creationDate: nil) }
            }
        }
        let report = try await engine.sync()
        #expect(report.pushedEvents == 120 && report.encryptionNotes.isEmpty)
        // The first batch went keyed and was refused; it and every later one went after its keys.
        #expect(older.refusals == 1)
        // (A block's pack may go once more with the next batch's, written while the one before travels.)
        #expect(watcher.keysCarried == [2, 0, 0, 0] && (4...6).contains(watcher.assetKeysWritten), "\(watcher.assetKeysWritten)")
        // (The keys of the batch after the one in flight may go up while it travels.)
        let held = watcher.assetKeysAtPushes
        #expect(held.count == 4 && held[0] == 0 && held[1] >= 2 && held[3] == 4, "\(held)")
        #expect(watcher.assetsWithoutKeys.isEmpty)
        #expect(try anna.library.pendingKeyEntries().isEmpty)
        #expect(
            try world.server.store.keyEntries(libraryID: 1, after: 0).entries.filter { KeyOrderWatcher.isAssetKeyEntry($0.name) }.count == 4
        )

        let ben = try world.device("ben-tablet", seed: 2)
        try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
        try await engine.sync()
        let pulled = try await ben.sync()
        #expect(pulled.pulledEvents == 120 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.fetchAssets().count == 120)
    }
}

/// Passes requests to `base`, holding each read of the key store until a pull page was asked
/// for (for at most many turns of the scheduler), and notes whether one was.
final class PageBeforeKeys: HTTPTransport, @unchecked Sendable {
    // Safe to share: the state is touched only under `lock`.
    private let lock = NSLock()
    private let base: any HTTPTransport
    private var pageAsked = false
    private var reads: [Bool] = []

    init(base: any HTTPTransport) { self.base = base }

    /// For each read of the key store, whether a page had been asked for when it went on.
    var keyReads: [Bool] { lock.withLock { reads } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        if request.method == .get, request.url.path.hasSuffix("/events") { lock.withLock { pageAsked = true } }
        if request.method == .get, request.url.path.hasSuffix("/keys") {
            var turns = 0
            while !lock.withLock({ pageAsked }), turns < 10_000 {
                await Task.yield()
                turns += 1
            }
            lock.withLock { reads.append(pageAsked) }
        }
        return try await base.send(request)
    }
}

@Suite("Encrypted pulls")
struct EncryptedPullTests {
    /// Anna makes an encrypted library of 40 assets and approves Ben, who has not synced yet.
    func approvedDevice() async throws -> (SyncWorld, Device) {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        try anna.library.performChangesAndWait { changes in
            for _ in 0..<40 { _ = try changes.createImageRecord(width: 400, height: 300, creationDate: nil) }
        }
        let ben = try world.device("ben-tablet", seed: 2)
        try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
        try await anna.sync()
        return (world, ben)
    }

    @Test("a device with nothing to push asks for its first page while it reads the key store, and folds it with the keys")
    func firstPageWhileReadingKeys() async throws {
        let (world, ben) = try await approvedDevice()
        let watcher = PageBeforeKeys(base: testTransport())
        let engine = SyncEngine(library: ben.library, remote: try world.server.remote(device: "ben-tablet"), transport: watcher)
        let pulled = try await engine.sync()
        #expect(watcher.keyReads.first == true, "\(watcher.keyReads)")
        #expect(pulled.pulledEvents == 40 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.statistics().quarantined.isEmpty)
        #expect(try ben.library.fetchAssets().count == 40)
    }

    @Test(
        "the keys a sync takes are stored while its first page folds: writes after them wait for their rows, and the read position moves with them"
    )
    func keyRowsWrittenInBackground() async throws {
        let (world, ben) = try await approvedDevice()
        defer { withExtendedLifetime(world) {} }  // its server serves Ben
        let read = try await ben.engine.readKeyStore(after: 0)
        let absorbed = try ben.library.replica.absorbKeyStore(
            read.entries.map { (name: $0.name, value: $0.value) }, through: read.last, writingKeysInBackground: true)
        #expect(absorbed.enrolled && absorbed.assetKeys == 40)
        // The read position counts at once; a write made now comes after the keys' rows.
        #expect(try ben.library.replica.keyStoreCursor() == read.last)
        let (rows, cursor) = try ben.library.withDatabase { db in
            (
                try db.firstRow("SELECT count(*) FROM e2e_asset_keys WHERE key IS NOT NULL") { $0.int64(0) },
                try db.firstRow("SELECT key_cursor FROM e2e_state") { $0.int64(0) }
            )
        }
        #expect(rows == 40 && cursor == read.last)
        try ben.library.replica.finishKeyWrite()
        let pulled = try await ben.sync()
        #expect(pulled.pulledEvents == 40 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.fetchAssets().count == 40)
    }

    @Test("keys whose rows cannot be written are not used: the sync fails saying so, nothing folds with them, and the next sync takes them")
    func keyRowsThatFailToWrite() async throws {
        let (world, ben) = try await approvedDevice()
        defer { withExtendedLifetime(world) {} }  // its server serves Ben
        // The disk refuses the keys' rows (a trigger stands in for it).
        try ben.library.withDatabase { db in
            try db.execute(
                "CREATE TRIGGER refuse_keys BEFORE INSERT ON e2e_asset_keys BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        }
        let failure = await #expect(throws: PhotoLibraryError.self) { try await ben.sync() }
        #expect(failure?.message.contains("could not store the asset keys that arrived from the server's key store") == true)
        #expect(failure?.message.contains("database or disk is full") == true)
        #expect(ben.library.encryption.snapshot.assetKeys.all.isEmpty)
        #expect(try ben.library.replica.keyStoreCursor() == 0)
        #expect(try ben.library.fetchAssets().isEmpty && ben.library.statistics().quarantined.isEmpty)

        try ben.library.withDatabase { try $0.execute("DROP TRIGGER refuse_keys") }
        let pulled = try await ben.sync()
        #expect(pulled.pulledEvents == 40 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.fetchAssets().count == 40)
        #expect(try ben.library.statistics().quarantined.isEmpty)
        #expect(try ben.library.verifyViews().isIntact)
    }
}
