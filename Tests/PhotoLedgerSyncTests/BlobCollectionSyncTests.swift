import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedgerServer
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// A JPEG of one colour, different for each `seed`.
private func photo(_ seed: Int) throws -> Data {
    let image = RGBImage(width: 96, height: 64, red: UInt8(20 + seed * 40), green: 90, blue: UInt8(200 - seed * 30))
    return Data(try StillEncoder.encode([image], as: "jpeg"))
}

@Suite("Server blob garbage collection, from a device's sync")
struct BlobCollectionSyncTests {
    @Test("a sync declares its assets' blobs; after a purge, the server collects the purged asset's blob and keeps the others")
    func purgedAssetsBlobIsCollected() async throws {
        let clock = TestClock()
        let server = try TestServer(clock: clock)
        let directory = try TemporaryDirectory()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let (gone, staying) = try anna.library.performChangesAndWait { changes in
            (
                try changes.createAsset(from: try photo(1)).placeholderForCreatedAsset.localIdentifier,
                try changes.createAsset(from: try photo(2)).placeholderForCreatedAsset.localIdentifier
            )
        }
        let hashes = try [gone, staying].map { try anna.library.resourceHash(for: $0, version: .original).hash }
        let sent = try await anna.sync()
        #expect(sent.uploadedResources == 2)
        let blobs = try BlobDirectory(root: server.directory.file("blobs").path)
        let family = try #require(try server.store.authenticate(tokenHash: DeviceToken.hash(try server.token(device: "admin-probe"))))

        // Nothing is purged: a collection without grace period collects nothing.
        clock.advance(milliseconds: 1000)
        var report = try BlobCollection.collect(
            store: server.store, blobs: blobs, library: "family", gracePeriod: 0, now: clock.read(), dryRun: false)
        #expect(report.collected.isEmpty)

        try anna.library.performChangesAndWait { try $0.deleteAssets([gone]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([gone]) }
        try await anna.sync()
        // Within the grace period, the blob stays.
        report = try BlobCollection.collect(
            store: server.store, blobs: blobs, library: "family", gracePeriod: 3600, now: clock.read(), dryRun: false)
        #expect(report.collected.isEmpty)
        clock.advance(milliseconds: 1000)
        report = try BlobCollection.collect(
            store: server.store, blobs: blobs, library: "family", gracePeriod: 0.5, now: clock.read(), dryRun: false)
        #expect(report.collected.map { Hex.encode($0.hash) } == [hashes[0]])
        #expect(report.deleted == 1)
        #expect(try server.store.blobSize(libraryID: family.libraryID, hash: Hex.decode(hashes[0])!) == nil)
        #expect(try server.store.blobSize(libraryID: family.libraryID, hash: Hex.decode(hashes[1])!) != nil)
        #expect(try blobs.content(of: hashes[0], from: 0) == nil)

        // A new device gets the library whole: the asset that stays, its bytes downloaded.
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: clock, seed: 2)
        let received = try await ben.sync()
        #expect(received.downloadedResources == 1)
        #expect(try ben.asset(staying) != nil && ben.library.resources.contains(hashes[1]))
    }
}
