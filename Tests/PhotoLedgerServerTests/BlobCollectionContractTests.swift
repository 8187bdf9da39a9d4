import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// Blob garbage collection (``ServerStore/collectBlobs(library:storedBefore:dryRun:)``) on every
/// store backend, and its sweep of a blob directory.
@Suite("Server store contract: blob garbage collection")
struct BlobCollectionContractTests {
    /// A blob's hash from a label.
    static func blob(_ label: String) -> [UInt8] { SHA256.hash(Array(label.utf8)) }

    /// Whether the blob store holds the blob's bytes.
    static func holds(_ blobs: BlobDirectory, _ name: String) throws -> Bool {
        guard let content = try blobs.content(of: name, from: 0) else { return false }
        if case .file(let descriptor, _, _) = content { close(descriptor) }
        return true
    }

    /// The family library's identifier.
    static func family(_ fixture: ContractFixture) throws -> Int64 { try fixture.credential(0).libraryID }

    /// Collects the family library's blobs stored before `cutoff`.
    static func collect(_ fixture: ContractFixture, before cutoff: UInt64, dryRun: Bool = false) throws -> [[UInt8]] {
        try fixture.store.collectBlobs(library: "family", storedBefore: cutoff, dryRun: dryRun).map(\.hash)
    }

    @Test(
        "a purged asset's blobs are collected after the grace period; a live asset's, one both share, a snapshot's and an undeclared one stay",
        arguments: StoreBackend.all)
    func purgedAssetsBlobs(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try Self.family(fixture)
        var anna = EventFactory()
        let kept = anna.make(type: "asset.created")
        let purged = anna.make(type: "asset.created")
        _ = try fixture.push([kept, purged])
        let (mine, theirs, shared, undeclared, snapshot) = (
            Self.blob("kept"), Self.blob("purged"), Self.blob("shared"), Self.blob("undeclared"), Self.blob("snapshot")
        )
        for hash in [mine, theirs, shared, undeclared, snapshot] {
            #expect(try fixture.store.recordBlob(libraryID: library, hash: hash, size: 10, at: 20, ifStored: { true }) == true)
        }
        try fixture.store.recordBlobReferences(
            libraryID: library,
            [
                BlobReference(object: kept.object, hash: mine), BlobReference(object: purged.object, hash: theirs),
                BlobReference(object: kept.object, hash: shared), BlobReference(object: purged.object, hash: shared),
                BlobReference(object: purged.object, hash: snapshot),
            ], at: 20)
        #expect(try Self.collect(fixture, before: 1000) == [], "nothing is purged yet")

        var purge = anna.make(type: "asset.purged")
        purge.object = purged.object
        #expect(try fixture.push([purge]) == [.stored(serverSequence: 3)])
        // A snapshot after the purge, whose blob only the purged asset's declaration names: kept
        // because the snapshot is.
        let events = try fixture.all()
        _ = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 3, chainHash: events[2].chainHash, hash: snapshot), for: try fixture.credential(0), at: 25)
        #expect(try Self.collect(fixture, before: 20) == [], "stored within the grace period")
        #expect(try Self.collect(fixture, before: 1000, dryRun: true) == [theirs])
        #expect(try fixture.store.blobSize(libraryID: library, hash: theirs) == 10, "a dry run changes nothing")
        #expect(try Self.collect(fixture, before: 1000) == [theirs])
        #expect(try fixture.store.blobSize(libraryID: library, hash: theirs) == nil)
        for hash in [mine, shared, undeclared, snapshot] { #expect(try fixture.store.blobSize(libraryID: library, hash: hash) == 10) }
        #expect(try fixture.store.retiredBlobs(limit: 10).contains(theirs))
        #expect(try Self.collect(fixture, before: 1000) == [], "collected once")
    }

    @Test(
        "an upload whose events are not pushed stays through the grace period and goes after it; declared again or pushed, it stays",
        arguments: StoreBackend.all)
    func uploadInFlight(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try Self.family(fixture)
        var anna = EventFactory()
        let pending = anna.make(type: "asset.created")
        let abandoned = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000DEAD")!
        let (waiting, lost) = (Self.blob("waiting"), Self.blob("lost"))
        for hash in [waiting, lost] {
            #expect(try fixture.store.recordBlob(libraryID: library, hash: hash, size: 5, at: 20, ifStored: { true }) == true)
        }
        try fixture.store.recordBlobReferences(
            libraryID: library, [BlobReference(object: pending.object, hash: waiting), BlobReference(object: abandoned, hash: lost)],
            at: 20)
        #expect(try Self.collect(fixture, before: 20, dryRun: true) == [], "declared and stored within the grace period")
        #expect(Set(try Self.collect(fixture, before: 21, dryRun: true)) == [waiting, lost], "no event came within it")
        // Declared again (the device retries its sync): a new grace period.
        try fixture.store.recordBlobReferences(libraryID: library, [BlobReference(object: pending.object, hash: waiting)], at: 50)
        #expect(try Self.collect(fixture, before: 40) == [lost])
        // Its events pushed, the blob stays whatever the time.
        _ = try fixture.push([pending])
        #expect(try Self.collect(fixture, before: 10_000) == [])
        #expect(try fixture.store.blobSize(libraryID: library, hash: waiting) == 5)
    }

    @Test("a blob collected from one library stays in the blob store while another library holds it", arguments: StoreBackend.all)
    func sharedAcrossLibraries(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try Self.family(fixture)
        let work = library + 1
        let hash = Self.blob("both")
        let abandoned = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000BEEF")!
        #expect(try fixture.store.recordBlob(libraryID: library, hash: hash, size: 3, at: 20, ifStored: { true }) == true)
        #expect(try fixture.store.recordBlob(libraryID: work, hash: hash, size: 3, at: 20, ifStored: { true }) == true)
        try fixture.store.recordBlobReferences(libraryID: library, [BlobReference(object: abandoned, hash: hash)], at: 20)
        let collected = try fixture.store.collectBlobs(library: nil, storedBefore: 100, dryRun: false)
        #expect(collected == [CollectedBlob(library: "family", hash: hash, size: 3)])
        #expect(try fixture.store.retiredBlobs(limit: 10).isEmpty, "the work library still holds it")
        #expect(try fixture.store.blobSize(libraryID: work, hash: hash) == 3)
        #expect(throws: ServerStoreError.self) { try fixture.store.collectBlobs(library: "nowhere", storedBefore: 100, dryRun: true) }
    }

    @Test("the collection deletes the collected blobs' bytes from the blob directory, and only theirs", arguments: StoreBackend.all)
    func sweepsTheBlobDirectory(backend: StoreBackend) throws {
        let fixture = try ContractFixture(backend)
        let library = try Self.family(fixture)
        let directory = try TemporaryDirectory()
        let blobs = try BlobDirectory(root: directory.file("blobs").path)
        var anna = EventFactory()
        let asset = anna.make(type: "asset.created")
        _ = try fixture.push([asset])
        var names: [String] = []
        for label in ["photo", "other"] {
            let bytes = Array(label.utf8)
            let name = Hex.encode(SHA256.hash(bytes))
            let upload = try blobs.beginUpload(of: name, limit: 1 << 20)
            let failure = bytes.withUnsafeBytes { buffer -> BlobUploadFailure? in
                do throws(BlobUploadFailure) { try upload.append(buffer) } catch { return error }
                return nil
            }
            #expect(failure == nil)
            #expect(try upload.commit(as: name))
            names.append(name)
            #expect(
                try fixture.store.recordBlob(
                    libraryID: library, hash: SHA256.hash(bytes), size: Int64(bytes.count), at: 20, ifStored: { true }) == true)
        }
        try fixture.store.recordBlobReferences(
            libraryID: library,
            [
                BlobReference(object: asset.object, hash: SHA256.hash(Array("photo".utf8))),
                BlobReference(object: asset.object, hash: SHA256.hash(Array("other".utf8))),
            ],
            at: 20)
        var purge = anna.make(type: "asset.purged")
        purge.object = asset.object
        _ = try fixture.push([purge])
        // "other" is also an asset of the work library: its bytes stay.
        #expect(
            try fixture.store.recordBlob(
                libraryID: library + 1, hash: SHA256.hash(Array("other".utf8)), size: 5, at: 20, ifStored: { true }) == true)
        let report = try BlobCollection.collect(
            store: fixture.store, blobs: blobs, library: nil, gracePeriod: 1, now: 5_000, dryRun: false)
        #expect(report.collected.count == 2 && report.collectedBytes == 10)
        #expect(report.deleted == 1 && report.failures.isEmpty)
        #expect(try !Self.holds(blobs, names[0]))
        #expect(try Self.holds(blobs, names[1]))
    }
}

@Suite("Blob references over HTTP")
struct BlobReferenceRouteTests {
    @Test("writers declare their events' blobs; a readOnly token may not, a malformed name is refused with where it is")
    func declarations() async throws {
        let fixture = try ServerFixture()
        let object = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000CAFE")!
        let hash = Hex.encode(SHA256.hash(Array("declared".utf8)))
        let body = BlobReferencesRequest(references: [.init(object: object, hashes: [hash])]).encoded()
        let path = SyncRoutes.blobReferences(library: "family")
        for device in ["anna-phone", "kiosk"] {
            let reply = try await fixture.client(device).send("POST", path, body: body)
            #expect(reply.status == 200)
            #expect(try reply.decode(BlobReferencesResponse.self).recorded == 1)
        }
        let refused = try await fixture.client("frame").send("POST", path, body: body)
        #expect(refused.status == 403 && refused.errorMessage.contains("declaring the blobs of events"))
        let malformed = BlobReferencesRequest(references: [.init(object: object, hashes: [hash, "ABC"])]).encoded()
        let bad = try await fixture.client().send("POST", path, body: malformed)
        #expect(bad.status == 400 && bad.errorMessage.contains("references[0].hashes[1]"), "\(bad.errorMessage)")
        #expect(try await fixture.client().send("GET", path).status == 405)
    }
}
