import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// A store with the family library (``ContractFixture``), and the steps of a blob collection
/// test: blobs the library holds, declared references, pushed creations and purges.
struct CollectionFixture {
    let contract: ContractFixture
    /// The family library's identifier.
    let library: Int64
    /// The family library's writing device.
    var anna = EventFactory()
    var store: any ServerStore { contract.store }

    init(_ backend: StoreBackend) throws {
        contract = try ContractFixture(backend)
        library = try contract.credential(0).libraryID
    }

    /// A blob's hash from a label.
    static func blob(_ label: String) -> [UInt8] { SHA256.hash(Array(label.utf8)) }

    /// Records that the library (the family library by default) holds each blob, of `size`
    /// bytes, stored at `milliseconds`.
    func hold(_ hashes: [[UInt8]], size: Int64, at milliseconds: UInt64 = 20, library: Int64? = nil) throws {
        for hash in hashes {
            #expect(
                try store.recordBlob(libraryID: library ?? self.library, hash: hash, size: size, at: milliseconds, ifStored: { true })
                    == true)
        }
    }

    /// Declares, at `milliseconds`, that the events about each object refer to the blobs (in the
    /// family library by default).
    func declare(_ references: [(object: UUID, hash: [UInt8])], at milliseconds: UInt64 = 20, library: Int64? = nil) throws {
        try store.recordBlobReferences(
            libraryID: library ?? self.library, references.map { BlobReference(object: $0.object, hash: $0.hash) }, at: milliseconds)
    }

    /// An asset's creation, not pushed yet.
    mutating func creation() -> Event { anna.make(type: "asset.created") }

    /// Pushes the purge of `object`.
    mutating func purge(_ object: UUID) throws -> [PushResult.Status] {
        var purge = anna.make(type: "asset.purged")
        purge.object = object
        return try contract.push([purge])
    }

    /// Collects the family library's blobs stored before `cutoff`.
    func collect(before cutoff: UInt64, dryRun: Bool = false) throws -> [[UInt8]] {
        try store.collectBlobs(library: "family", storedBefore: cutoff, dryRun: dryRun).map(\.hash)
    }

    /// The size of the blob the family library holds, or nil.
    func size(_ hash: [UInt8]) throws -> Int64? { try store.blobSize(libraryID: library, hash: hash) }
}

/// Blob garbage collection (``ServerStore/collectBlobs(library:storedBefore:dryRun:)``) on every
/// store backend, and its sweep of a blob directory.
@Suite("Server store contract: blob garbage collection")
struct BlobCollectionContractTests {
    static func blob(_ label: String) -> [UInt8] { CollectionFixture.blob(label) }

    @Test(
        "a purged asset's blobs are collected after the grace period; a live asset's, one both share, a snapshot's and an undeclared one stay",
        arguments: StoreBackend.all)
    func purgedAssetsBlobs(backend: StoreBackend) throws {
        var fixture = try CollectionFixture(backend)
        let (kept, purged) = (fixture.creation(), fixture.creation())
        _ = try fixture.contract.push([kept, purged])
        let (mine, theirs, shared, undeclared, snapshot) = (
            Self.blob("kept"), Self.blob("purged"), Self.blob("shared"), Self.blob("undeclared"), Self.blob("snapshot")
        )
        try fixture.hold([mine, theirs, shared, undeclared, snapshot], size: 10)
        try fixture.declare([
            (kept.object, mine), (purged.object, theirs), (kept.object, shared), (purged.object, shared), (purged.object, snapshot),
        ])
        #expect(try fixture.collect(before: 1000) == [], "nothing is purged yet")

        #expect(try fixture.purge(purged.object) == [.stored(serverSequence: 3)])
        // A snapshot after the purge, whose blob only the purged asset's declaration names: kept
        // because the snapshot is.
        let events = try fixture.contract.all()
        _ = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 3, chainHash: events[2].chainHash, hash: snapshot), for: try fixture.contract.credential(0), at: 25)
        #expect(try fixture.collect(before: 20) == [], "stored within the grace period")
        #expect(try fixture.collect(before: 1000, dryRun: true) == [theirs])
        #expect(try fixture.size(theirs) == 10, "a dry run changes nothing")
        #expect(try fixture.collect(before: 1000) == [theirs])
        #expect(try fixture.size(theirs) == nil)
        for hash in [mine, shared, undeclared, snapshot] { #expect(try fixture.size(hash) == 10) }
        #expect(try fixture.store.retiredBlobs(limit: 10).contains(theirs))
        #expect(try fixture.collect(before: 1000) == [], "collected once")
    }

    @Test(
        "an upload whose events are not pushed stays through the grace period and goes after it; declared again or pushed, it stays",
        arguments: StoreBackend.all)
    func uploadInFlight(backend: StoreBackend) throws {
        var fixture = try CollectionFixture(backend)
        let pending = fixture.creation()
        let abandoned = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000DEAD")!
        let (waiting, lost) = (Self.blob("waiting"), Self.blob("lost"))
        try fixture.hold([waiting, lost], size: 5)
        try fixture.declare([(pending.object, waiting), (abandoned, lost)])
        #expect(try fixture.collect(before: 20, dryRun: true) == [], "declared and stored within the grace period")
        #expect(Set(try fixture.collect(before: 21, dryRun: true)) == [waiting, lost], "no event came within it")
        // Declared again (the device retries its sync): a new grace period.
        try fixture.declare([(pending.object, waiting)], at: 50)
        #expect(try fixture.collect(before: 40) == [lost])
        // Its events pushed, the blob stays whatever the time.
        _ = try fixture.contract.push([pending])
        #expect(try fixture.collect(before: 10_000) == [])
        #expect(try fixture.size(waiting) == 5)
    }

    @Test(
        "a declaration that names a reference twice records it once; declared again with an earlier time, it keeps the later one",
        arguments: StoreBackend.all)
    func repeatedDeclarations(backend: StoreBackend) throws {
        let fixture = try CollectionFixture(backend)
        let object = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000D00D")!
        let hash = Self.blob("twice")
        try fixture.hold([hash], size: 7)
        try fixture.declare([(object, hash), (object, hash)], at: 50)
        try fixture.declare([(object, hash)], at: 30)
        #expect(try fixture.collect(before: 50, dryRun: true) == [], "declared at 50: within the grace period")
        #expect(try fixture.collect(before: 51) == [hash])
    }

    @Test("a blob collected from one library stays in the blob store while another library holds it", arguments: StoreBackend.all)
    func sharedAcrossLibraries(backend: StoreBackend) throws {
        let fixture = try CollectionFixture(backend)
        let work = fixture.library + 1
        let hash = Self.blob("both")
        let abandoned = UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000BEEF")!
        try fixture.hold([hash], size: 3)
        try fixture.hold([hash], size: 3, library: work)
        try fixture.declare([(abandoned, hash)])
        let collected = try fixture.store.collectBlobs(library: nil, storedBefore: 100, dryRun: false)
        #expect(collected == [CollectedBlob(library: "family", hash: hash, size: 3)])
        #expect(try fixture.store.retiredBlobs(limit: 10).isEmpty, "the work library still holds it")
        #expect(try fixture.store.blobSize(libraryID: work, hash: hash) == 3)
        let unknown = #expect(throws: ServerStoreError.self) {
            try fixture.store.collectBlobs(library: "nowhere", storedBefore: 100, dryRun: true)
        }
        #expect(unknown?.message.contains("no library named 'nowhere'") == true)
    }

    @Test("the collection deletes the collected blobs' bytes from the blob directory, and only theirs", arguments: StoreBackend.all)
    func sweepsTheBlobDirectory(backend: StoreBackend) throws {
        var fixture = try CollectionFixture(backend)
        let directory = try TemporaryDirectory()
        let blobs = try BlobDirectory(root: directory.file("blobs").path)
        let asset = fixture.creation()
        _ = try fixture.contract.push([asset])
        let (photo, other) = (Array("photo".utf8), Array("other".utf8))
        for bytes in [photo, other] {
            #expect(try upload(bytes, as: Hex.encode(SHA256.hash(bytes)), to: blobs))
        }
        try fixture.hold([SHA256.hash(photo), SHA256.hash(other)], size: 5)
        try fixture.declare([(asset.object, SHA256.hash(photo)), (asset.object, SHA256.hash(other))])
        _ = try fixture.purge(asset.object)
        // "other" is also an asset of the work library: its bytes stay.
        try fixture.hold([SHA256.hash(other)], size: 5, library: fixture.library + 1)
        let report = try BlobCollection.collect(
            store: fixture.store, blobs: blobs, library: nil, gracePeriod: 1, now: 5_000, dryRun: false)
        #expect(report.collected.count == 2 && report.collectedBytes == 10)
        #expect(report.deleted == 1 && report.failures.isEmpty)
        #expect(try !blobs.holds(Hex.encode(SHA256.hash(photo))))
        #expect(try blobs.holds(Hex.encode(SHA256.hash(other))))
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
