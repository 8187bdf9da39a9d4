import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// The snapshot rules (``ServerStore/offerSnapshot(_:for:at:)``) on every store backend.
@Suite("Server store contract: snapshots")
struct SnapshotStoreContractTests {
    /// A library with five events and a stored blob; returns the fixture and the blob's hash.
    func prepared(_ backend: StoreBackend) throws -> (ContractFixture, [UInt8]) {
        let fixture = try ContractFixture(backend)
        var anna = EventFactory()
        _ = try fixture.push(anna.make(5))
        let blob = SHA256.hash(Array("snapshot bytes".utf8))
        let library = try fixture.credential(0).libraryID
        #expect(try fixture.store.recordBlob(libraryID: library, hash: blob, size: 14, at: 20, ifStored: { true }) == true)
        return (fixture, blob)
    }

    @Test("a readWrite device's snapshot at a held position with the server's chain value is recorded", arguments: StoreBackend.all)
    func accepted(backend: StoreBackend) throws {
        let (fixture, blob) = try prepared(backend)
        let credential = try fixture.credential(0)
        #expect(try fixture.store.latestSnapshot(libraryID: credential.libraryID) == nil)
        let events = try fixture.all()
        let offer = SnapshotOffer(position: 3, chainHash: events[2].chainHash, hash: blob)
        let record = try fixture.store.offerSnapshot(offer, for: credential, at: 30)
        #expect(
            record
                == SnapshotRecord(position: 3, chainHash: events[2].chainHash, hash: blob, size: 14, device: "anna-phone", recordedAt: 30))
        // The same offer again keeps the first record.
        #expect(try fixture.store.offerSnapshot(offer, for: credential, at: 40) == record)
        #expect(try fixture.store.latestSnapshot(libraryID: credential.libraryID) == record)
        // A later position is newer; an earlier one does not replace it.
        let later = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 5, chainHash: events[4].chainHash, hash: blob), for: credential, at: 50)
        _ = try fixture.store.offerSnapshot(SnapshotOffer(position: 1, chainHash: events[0].chainHash, hash: blob), for: credential, at: 60)
        #expect(try fixture.store.latestSnapshot(libraryID: credential.libraryID) == later)
        // Another library's snapshots are its own.
        let work = try fixture.store.libraryNames().contains("work")
        #expect(work)
        #expect(try fixture.store.latestSnapshot(libraryID: credential.libraryID + 1) == nil)
    }

    @Test("a snapshot whose chain value is not the server's at its position is refused", arguments: StoreBackend.all)
    func chainMismatch(backend: StoreBackend) throws {
        let (fixture, blob) = try prepared(backend)
        let credential = try fixture.credential(0)
        let events = try fixture.all()
        let refusal = #expect(throws: SnapshotRefusal.self) {
            try fixture.store.offerSnapshot(SnapshotOffer(position: 3, chainHash: events[3].chainHash, hash: blob), for: credential, at: 30)
        }
        #expect(refusal?.status == 409)
        #expect(refusal?.message.contains("chain value at position 3 is not this server's") == true)
        let beyond = #expect(throws: SnapshotRefusal.self) {
            try fixture.store.offerSnapshot(SnapshotOffer(position: 6, chainHash: events[4].chainHash, hash: blob), for: credential, at: 30)
        }
        #expect(beyond?.status == 409)
        #expect(beyond?.message.contains("log ends at 5") == true)
        #expect(try fixture.store.latestSnapshot(libraryID: credential.libraryID) == nil)
    }

    @Test("addOnly and readOnly devices cannot offer snapshots; a missing blob is refused", arguments: StoreBackend.all)
    func scopesAndBlob(backend: StoreBackend) throws {
        let (fixture, blob) = try prepared(backend)
        let events = try fixture.all()
        let offer = SnapshotOffer(position: 2, chainHash: events[1].chainHash, hash: blob)
        for index: UInt8 in [1, 2] {
            let refusal = #expect(throws: SnapshotRefusal.self) {
                try fixture.store.offerSnapshot(offer, for: try fixture.credential(index), at: 30)
            }
            #expect(refusal?.status == 403)
        }
        let missing = #expect(throws: SnapshotRefusal.self) {
            try fixture.store.offerSnapshot(
                SnapshotOffer(position: 2, chainHash: events[1].chainHash, hash: SHA256.hash([9])), for: try fixture.credential(0), at: 30)
        }
        #expect(missing?.status == 404)
        #expect(try fixture.store.latestSnapshot(libraryID: try fixture.credential(0).libraryID) == nil)
    }

    /// Records a blob of the first library named by the SHA-256 of `text`.
    func blob(_ fixture: ContractFixture, _ text: String) throws -> [UInt8] {
        let hash = SHA256.hash(Array(text.utf8))
        _ = try fixture.store.recordBlob(
            libraryID: try fixture.credential(0).libraryID, hash: hash, size: Int64(text.utf8.count), at: 20, ifStored: { true })
        return hash
    }

    @Test("a newer snapshot retires those beyond the kept number, with their blobs queued for deletion", arguments: StoreBackend.all)
    func retention(backend: StoreBackend) throws {
        let (fixture, _) = try prepared(backend)
        let credential = try fixture.credential(0)
        let library = credential.libraryID
        let events = try fixture.all()
        let blobs = try (1...4).map { try blob(fixture, "snapshot \($0)") }
        for position in 1...3 {
            _ = try fixture.store.offerSnapshot(
                SnapshotOffer(position: Int64(position), chainHash: events[position - 1].chainHash, hash: blobs[position - 1]),
                for: credential, at: UInt64(30 + position))
        }
        #expect(SnapshotRetention.kept == 2)
        #expect(try fixture.store.snapshots(libraryID: library).map(\.position) == [3, 2])
        // The retired snapshot's blob left the library and waits for deletion from the blob store.
        #expect(try fixture.store.blobSize(libraryID: library, hash: blobs[0]) == nil)
        #expect(try fixture.store.blobSize(libraryID: library, hash: blobs[1]) == 10)
        #expect(try fixture.store.retiredBlobs(limit: 10) == [blobs[0]])
        #expect(try fixture.store.deleteRetiredBlob(blobs[0], removing: {}))
        #expect(try fixture.store.retiredBlobs(limit: 10).isEmpty)
        // An offer older than the kept ones is retired at once; a blob uploaded again leaves the queue.
        _ = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 1, chainHash: events[0].chainHash, hash: blobs[3]), for: credential, at: 40)
        #expect(try fixture.store.snapshots(libraryID: library).map(\.position) == [3, 2])
        _ = try fixture.store.recordBlob(libraryID: library, hash: blobs[3], size: 10, at: 41, ifStored: { true })
        #expect(try fixture.store.retiredBlobs(limit: 10).isEmpty)
        // Retirement keeps a blob that a kept snapshot names.
        _ = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 4, chainHash: events[3].chainHash, hash: blobs[2]), for: credential, at: 50)
        #expect(try fixture.store.snapshots(libraryID: library).map(\.position) == [4, 3])
        #expect(try fixture.store.blobSize(libraryID: library, hash: blobs[2]) == 10)
        #expect(try fixture.store.retiredBlobs(limit: 10) == [blobs[1]])
    }

    /// A library whose first snapshot was retired: its blob (10 bytes) is queued for deletion and
    /// held by no library.
    func retiredBlob(_ backend: StoreBackend) throws -> (ContractFixture, library: Int64, hash: [UInt8]) {
        let (fixture, _) = try prepared(backend)
        let credential = try fixture.credential(0)
        let events = try fixture.all()
        let blobs = try (1...3).map { try blob(fixture, "snapshot \($0)") }
        for position in 1...3 {
            _ = try fixture.store.offerSnapshot(
                SnapshotOffer(position: Int64(position), chainHash: events[position - 1].chainHash, hash: blobs[position - 1]),
                for: credential, at: UInt64(30 + position))
        }
        #expect(try fixture.store.retiredBlobs(limit: 10) == [blobs[0]])
        return (fixture, credential.libraryID, blobs[0])
    }

    @Test(
        "a retired blob uploaded again after the deleter read the queue keeps its bytes: the deletion only takes it off the queue",
        arguments: StoreBackend.all)
    func uploadBeforeDeletion(backend: StoreBackend) throws {
        let (fixture, library, hash) = try retiredBlob(backend)
        var stored = true  // the blob store holds the bytes (the upload's commit found or put them there)
        #expect(try fixture.store.recordBlob(libraryID: library, hash: hash, size: 10, at: 60, ifStored: { stored }) == true)
        #expect(try !fixture.store.deleteRetiredBlob(hash, removing: { stored = false }))
        #expect(stored)
        #expect(try fixture.store.blobSize(libraryID: library, hash: hash) == 10)
        #expect(try fixture.store.retiredBlobs(limit: 10).isEmpty)
    }

    @Test(
        "an upload whose bytes the deletion of their retired copy removed before they were recorded is refused, and the next upload is kept",
        arguments: StoreBackend.all)
    func deletionBeforeRecord(backend: StoreBackend) throws {
        let (fixture, library, hash) = try retiredBlob(backend)
        // The upload's commit found the retired copy's bytes in the blob store; before the upload
        // records them, the deletion removes them.
        var stored = true
        #expect(try fixture.store.deleteRetiredBlob(hash, removing: { stored = false }))
        #expect(try fixture.store.recordBlob(libraryID: library, hash: hash, size: 10, at: 60, ifStored: { stored }) == nil)
        #expect(try fixture.store.blobSize(libraryID: library, hash: hash) == nil)
        #expect(try fixture.store.missingBlobs(libraryID: library, hashes: [hash]) == [hash])
        #expect(try fixture.store.retiredBlobs(limit: 10).isEmpty)
        // The device uploads the blob again: kept, and never deleted.
        stored = true
        #expect(try fixture.store.recordBlob(libraryID: library, hash: hash, size: 10, at: 61, ifStored: { stored }) == true)
        #expect(try !fixture.store.deleteRetiredBlob(hash, removing: { stored = false }))
        #expect(stored)
        #expect(try fixture.store.blobSize(libraryID: library, hash: hash) == 10)
    }

    @Test(
        "an upload recorded while the deletion of its retired copy runs waits for it, then finds its bytes gone",
        arguments: StoreBackend.all)
    func recordWaitsForDeletion(backend: StoreBackend) throws {
        let (fixture, library, hash) = try retiredBlob(backend)
        let store = fixture.store
        let race = BlobRace()
        let started = DispatchSemaphore(value: 0), recorded = DispatchSemaphore(value: 0)
        let removed = try store.deleteRetiredBlob(hash) {
            race.update { $0.removing = true }
            Thread.detachNewThread {
                started.signal()
                let outcome = Result {
                    try store.recordBlob(libraryID: library, hash: hash, size: 10, at: 60) {
                        race.update { state in
                            if state.removing { state.askedWhileRemoving = true }
                            return state.stored
                        }
                    }
                }
                race.update { $0.outcome = outcome }
                recorded.signal()
            }
            started.wait()
            // Time for the record to reach the blob's lock and wait there; the outcome does not
            // depend on it: the record cannot ask about the bytes before the removal ends.
            let finishedEarly = recorded.wait(timeout: .now() + .milliseconds(200)) == .success
            race.update {
                $0.stored = false
                $0.removing = false
                $0.finishedEarly = finishedEarly
            }
        }
        #expect(removed)
        if !race.update({ $0.finishedEarly }) { recorded.wait() }
        #expect(!race.update { $0.askedWhileRemoving })
        let outcome = try #require(race.update { $0.outcome })
        #expect(try outcome.get() == nil)
        #expect(try store.blobSize(libraryID: library, hash: hash) == nil)
        #expect(try store.retiredBlobs(limit: 10).isEmpty)
    }

    @Test("a stored purge retires every snapshot before it, and none before it is recorded after", arguments: StoreBackend.all)
    func purgeRetires(backend: StoreBackend) throws {
        let (fixture, _) = try prepared(backend)
        let credential = try fixture.credential(0)
        let library = credential.libraryID
        var events = try fixture.all()
        let first = try blob(fixture, "snapshot at 4"), second = try blob(fixture, "snapshot at 5")
        _ = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 4, chainHash: events[3].chainHash, hash: first), for: credential, at: 30)
        _ = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 5, chainHash: events[4].chainHash, hash: second), for: credential, at: 31)
        // Events of other types retire nothing.
        var anna = EventFactory(seed: 7)
        anna.sequence = 5
        #expect(try fixture.push([anna.make(type: "asset.changed")]) == [.stored(serverSequence: 6)])
        #expect(try fixture.store.snapshots(libraryID: library).count == 2)
        #expect(try fixture.push([anna.make(type: "asset.purged")]) == [.stored(serverSequence: 7)])
        #expect(try fixture.store.snapshots(libraryID: library).isEmpty)
        #expect(try fixture.store.latestSnapshot(libraryID: library) == nil)
        #expect(Set(try fixture.store.retiredBlobs(limit: 10)) == [first, second])
        #expect(try fixture.store.blobSize(libraryID: library, hash: first) == nil)
        // A device that folded the log only up to before the purge cannot offer its snapshot.
        events = try fixture.all()
        let third = try blob(fixture, "snapshot at 6")
        let refusal = #expect(throws: SnapshotRefusal.self) {
            try fixture.store.offerSnapshot(
                SnapshotOffer(position: 6, chainHash: events[5].chainHash, hash: third), for: credential, at: 40)
        }
        #expect(refusal?.status == 409)
        #expect(refusal?.message.contains("precedes the purge at position 7") == true)
        // One that folded the purge can.
        let record = try fixture.store.offerSnapshot(
            SnapshotOffer(position: 7, chainHash: events[6].chainHash, hash: third), for: credential, at: 41)
        #expect(try fixture.store.latestSnapshot(libraryID: library) == record)
    }

    @Test("the server reads a snapshot's header: only this library's snapshot at the offered position and chain value passes")
    func header() throws {
        let (fixture, _) = try prepared(.sqlite)
        let credential = try fixture.credential(0)
        let events = try fixture.all()
        let offer = SnapshotOffer(position: 3, chainHash: events[2].chainHash, hash: SHA256.hash([1]))
        func header(_ library: UUID, _ position: Int64, _ chain: [UInt8]) -> [UInt8] {
            var writer = ByteWriter()
            writer.write(raw: SnapshotHeader.magic)
            writer.write(uuid: library)
            writer.write(int: position)
            writer.write(raw: chain)
            writer.write(bool: true)
            return writer.bytes
        }
        try fixture.store.checkSnapshotHeader(header(credential.libraryUUID, 3, events[2].chainHash), of: offer, for: credential)
        for (bytes, expected) in [
            (Array("\u{89}PNG\r\n\u{1A}\n not a snapshot".utf8), "is not a PhotoLedger snapshot"),
            (header(UUID(), 3, events[2].chainHash), "not of this library at position 3"),
            (header(credential.libraryUUID, 2, events[2].chainHash), "at position 2, not of this library"),
            (header(credential.libraryUUID, 3, events[1].chainHash), "with the offered chain value"),
        ] {
            let refusal = #expect(throws: SnapshotRefusal.self) { try fixture.store.checkSnapshotHeader(bytes, of: offer, for: credential) }
            #expect(refusal?.status == 409)
            #expect(refusal?.message.contains(expected) == true, "\(refusal?.message ?? "")")
        }
    }

    @Test("the blob directory reads a blob's first bytes for the header check and deletes a retired snapshot's blob")
    func blobDirectory() throws {
        let directory = try TemporaryDirectory()
        let store = try BlobDirectory(root: directory.file("blobs").path)
        let bytes = (0..<500).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let hash = Hex.encode(SHA256.hash(bytes))
        let upload = try store.beginUpload(of: hash, limit: 1 << 20)
        try bytes.withUnsafeBytes { try upload.append($0) }
        #expect(try !store.holds(hash))
        #expect(try upload.commit(as: hash))
        #expect(try store.holds(hash))
        #expect(try store.prefix(of: hash, count: SnapshotHeader.maximumLength) == Array(bytes[..<SnapshotHeader.maximumLength]))
        #expect(try store.prefix(of: hash, count: 1000) == bytes)
        try store.remove(hash)
        #expect(try store.prefix(of: hash, count: 10) == nil)
        #expect(!FileManager.default.fileExists(atPath: store.path(for: hash)))
        #expect(try !store.holds(hash))
        try store.remove(hash)  // deleting a missing blob succeeds
    }
}

/// What the threads of ``SnapshotStoreContractTests/recordWaitsForDeletion(backend:)`` share.
final class BlobRace: @unchecked Sendable {
    struct State {
        var stored = true
        var removing = false
        var askedWhileRemoving = false
        var finishedEarly = false
        var outcome: Result<Bool?, any Error>?
    }
    private let lock = NSLock()
    private var state = State()

    func update<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }
}
