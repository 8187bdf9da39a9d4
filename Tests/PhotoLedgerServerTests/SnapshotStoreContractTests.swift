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
        #expect(try fixture.store.recordBlob(libraryID: library, hash: blob, size: 14, at: 20))
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
}
