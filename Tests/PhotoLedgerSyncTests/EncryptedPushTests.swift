import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Passes requests to `base`; when a batch of events is pushed, notes which assets it creates
/// whose keys the server's key store does not hold yet, and how many asset keys it holds.
final class KeyOrderWatcher: HTTPTransport, @unchecked Sendable {
    let base: any HTTPTransport
    let store: SQLiteServerStore
    private let lock = NSLock()
    private var missing: [UUID] = []
    private var held: [Int] = []

    init(_ base: any HTTPTransport, store: SQLiteServerStore) {
        self.base = base
        self.store = store
    }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        if request.method == .post, request.url.path.hasSuffix("/events") {
            let push = try EventBatch.decode(request.body.bytes)
            let names = Set(try store.keyEntries(libraryID: 1, after: 0).entries.map(\.name).filter { $0.hasPrefix("asset/") })
            let created = push.events.compactMap { received -> UUID? in
                guard case .valid(let wire) = received, wire.event.type == "asset.created" else { return nil }
                return wire.event.object
            }
            lock.withLock {
                missing += created.filter { !names.contains(KeyStoreName.asset($0)) }
                held.append(names.count)
            }
        }
        return try await base.send(request)
    }

    /// Assets created by a pushed batch whose keys the server did not hold when the batch was sent.
    var assetsWithoutKeys: [UUID] { lock.withLock { missing } }
    /// The asset keys the server held as each batch was sent.
    var assetKeysAtPushes: [Int] { lock.withLock { held } }
}

@Suite("Encrypted pushes")
struct EncryptedPushTests {
    @Test("asset keys go up with the push batches of their assets, each before its batch; an enrolled device then reads everything")
    func assetKeysTravelWithTheirBatches() async throws {
        let world = try SyncWorld()
        let anna = try world.device("anna-phone", seed: 1, encrypted: true)
        let watcher = KeyOrderWatcher(testTransport(), store: world.server.store)
        var options = SyncEngine.Options()
        options.pushBatchSize = 50
        let engine = SyncEngine(
            library: anna.library, remote: try world.server.remote(device: "anna-phone"), transport: watcher, options: options)
        try anna.library.performChangesAndWait { changes in
            for _ in 0..<120 { _ = try changes.createImageRecord(width: 400, height: 300, creationDate: nil) }
        }
        #expect(try anna.library.pendingKeyEntries().count == 124)
        let report = try await engine.sync()
        #expect(report.pushedEvents == 120 && report.encryptionNotes.isEmpty)
        #expect(watcher.assetsWithoutKeys.isEmpty)
        // Batch by batch: when the first batch went, the third batch's keys had not gone yet.
        let held = watcher.assetKeysAtPushes
        #expect(held.count == 3 && held[0] >= 50 && held[0] <= 100)
        #expect(try anna.library.pendingKeyEntries().isEmpty)
        #expect(try world.server.store.keyEntries(libraryID: 1, after: 0).entries.filter { $0.name.hasPrefix("asset/") }.count == 120)

        let ben = try world.device("ben-tablet", seed: 2)
        try anna.library.approveEnrolment(of: "ben-tablet", publicKey: try ben.library.prepareEnrolment())
        try await engine.sync()
        let pulled = try await ben.sync()
        #expect(pulled.pulledEvents == 120 && pulled.quarantinedEvents.isEmpty)
        #expect(try ben.library.statistics().quarantined.isEmpty)
        #expect(try ben.library.fetchAssets().count == 120)
    }
}
