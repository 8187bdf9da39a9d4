import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore
import Testing

@testable import PhotoLedger

/// Asset keys published in packs: the pack's layout and its limits, and how a device's packs
/// change while they wait in its outbox (a purge, blob names).
@Suite("Key packs")
struct KeyPackTests {
    static let generation = (id: UInt32(0x4102_0305), key: SecretKey())
    static let name = "pack/0190a3c2-1111-7222-8333-444455556666.0"

    /// An asset key identifier (kind 2) made from `bits`.
    static func assetKeyID(_ bits: UInt32) -> UInt32 { bits << 2 | KeyKind.asset.rawValue }

    @Test(
        "a pack laid out by hand opens: the count, then each asset, key identifier and record; its seal names the generation and the entry")
    func layout() throws {
        let asset = UUID(uuidString: "0190A3C2-1111-7222-8333-444455556666")!
        let key = SecretKey()
        let plain: [UInt8] =
            [1] + asset.bytes + [0x00, 0x00, 0x01, 0x02] + key.bytes + [1] + [UInt8](repeating: 7, count: 32)
            + [UInt8](repeating: 8, count: 32)
        let associated = Array("photoledger asset key pack v1".utf8) + [0x41, 0x02, 0x03, 0x05] + Array(Self.name.utf8)
        let (nonce, ciphertext) = AEAD.seal(plain, key: AssetKeyPack.packKey(of: Self.generation.key), associatedData: associated)
        let sealed = [0x41, 0x02, 0x03, 0x05] + nonce + ciphertext
        #expect(AssetKeyPack.generation(of: sealed) == Self.generation.id)
        let pack = try AssetKeyPack(name: Self.name, unsealing: sealed, packKey: AssetKeyPack.packKey(of: Self.generation.key))
        #expect(pack.records.count == 1)
        let record = try #require(pack.records.first)
        #expect(record.asset == asset && record.keyID == 0x0102 && record.key == key)
        #expect(record.blobs == [[UInt8](repeating: 7, count: 32): [UInt8](repeating: 8, count: 32)])
        // What a library seals reads back the same way.
        let again = try AssetKeyPack(
            name: Self.name, unsealing: pack.sealed(name: Self.name, under: Self.generation),
            packKey: AssetKeyPack.packKey(of: Self.generation.key))
        #expect(again.records.map(\.asset) == [asset] && again.records.first?.blobs == record.blobs)
    }

    @Test("a pack under another name, another key or with a changed byte does not open, and says which pack")
    func wrongKeyNameOrBytes() throws {
        let records = (0..<3).map { WrappedAssetKey(asset: UUID(), keyID: Self.assetKeyID(UInt32($0 + 1)), key: SecretKey()) }
        let sealed = AssetKeyPack(records: records).sealed(name: Self.name, under: Self.generation)
        let packKey = AssetKeyPack.packKey(of: Self.generation.key)
        #expect(try AssetKeyPack(name: Self.name, unsealing: sealed, packKey: packKey).records.map(\.asset) == records.map(\.asset))
        let other = "pack/0190a3c2-1111-7222-8333-444455556666.1"
        let moved = #expect(throws: CryptoError.self) { try AssetKeyPack(name: other, unsealing: sealed, packKey: packKey) }
        #expect(moved?.message.contains(other) == true)
        #expect(throws: CryptoError.self) {
            try AssetKeyPack(name: Self.name, unsealing: sealed, packKey: AssetKeyPack.packKey(of: SecretKey()))
        }
        // The generation's key that wraps single asset keys is not the one that seals packs.
        #expect(throws: CryptoError.self) {
            try AssetKeyPack(name: Self.name, unsealing: sealed, packKey: WrappedAssetKey.wrappingKey(of: Self.generation.key))
        }
        for index in [0, 4, 30, sealed.count - 1] {
            var changed = sealed
            changed[index] ^= 1
            #expect(throws: CryptoError.self) { try AssetKeyPack(name: Self.name, unsealing: changed, packKey: packKey) }
        }
        #expect(throws: CryptoError.self) { try AssetKeyPack(name: Self.name, unsealing: Array(sealed.prefix(40)), packKey: packKey) }
        #expect(AssetKeyPack.generation(of: Array(sealed.prefix(43))) == nil)
    }

    @Test(
        "an opened pack that is damaged is refused with the reason: too many records, an asset twice, not an asset key, cut short, bytes after"
    )
    func damagedPlaintext() throws {
        let asset = UUID()
        func record(_ asset: UUID, keyID: UInt32 = Self.assetKeyID(1)) -> [UInt8] {
            asset.bytes + withUnsafeBytes(of: keyID.bigEndian, Array.init) + SecretKey().bytes + [0]
        }
        func refusal(_ plain: [UInt8]) -> String? {
            do {
                _ = try AssetKeyPack(plain: plain, name: Self.name)
                return nil
            } catch let error as CryptoError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal([1] + record(asset)) == nil)
        #expect(refusal([0x81, 0x20] + record(asset))?.contains("holds 4097 records") == true)
        #expect(refusal([2] + record(asset) + record(asset))?.contains("twice") == true)
        #expect(refusal([1] + record(asset, keyID: 0x0105))?.contains("not an asset key") == true)
        #expect(refusal([2] + record(asset))?.contains("damaged") == true)
        #expect(refusal([1] + record(asset) + [0])?.contains("bytes follow") == true)
        #expect(refusal([1] + record(asset).dropLast(5))?.contains("damaged") == true)
        #expect(refusal([])?.contains("damaged") == true)
        #expect(try AssetKeyPack(plain: [0], name: Self.name).records.isEmpty)
    }

    @Test("records are split into packs that fit: at most 4,096 records, and a plaintext the server's entries can hold")
    func split() throws {
        let small = (0..<(AssetKeyPack.maximumRecords * 2 + 5)).map {
            WrappedAssetKey(asset: UUID(), keyID: Self.assetKeyID(UInt32($0 + 1)), key: SecretKey())
        }
        #expect(AssetKeyPack.split(small).map(\.records.count) == [AssetKeyPack.maximumRecords, AssetKeyPack.maximumRecords, 5])
        #expect(AssetKeyPack.split(small).flatMap(\.records).map(\.asset) == small.map(\.asset))
        // Records of 6,000 blobs each (384 KB): two fit one pack.
        let large = (0..<5).map { index in
            WrappedAssetKey(
                asset: UUID(), keyID: Self.assetKeyID(UInt32(index + 1)), key: SecretKey(),
                blobs: Dictionary(uniqueKeysWithValues: (0..<6000).map { _ in (SecretKey().bytes, SecretKey().bytes) }))
        }
        let packs = AssetKeyPack.split(large)
        #expect(packs.map(\.records.count) == [2, 2, 1])
        for pack in packs {
            let sealed = pack.sealed(name: Self.name, under: Self.generation)
            #expect(sealed.count <= 1 << 20)
            #expect(
                try AssetKeyPack(name: Self.name, unsealing: sealed, packKey: AssetKeyPack.packKey(of: Self.generation.key)).records.count
                    == pack.records.count)
        }
        #expect(AssetKeyPack.split([]).isEmpty)
    }

    /// The records of pack `name` queued in `library`'s outbox, opened with its ring.
    func queuedPack(_ library: PhotoLibrary, _ name: String) throws -> AssetKeyPack? {
        guard let value = try library.pendingKeyEntries().first(where: { $0.name == name })?.value,
            let ring = library.encryption.snapshot.ring,
            let generation = AssetKeyPack.generation(of: value), let key = ring.key(generation)
        else { return nil }
        return try AssetKeyPack(name: name, unsealing: value, packKey: AssetKeyPack.packKey(of: key))
    }

    @Test(
        "a change block's new keys wait in the outbox as its packs; a purge before they went up seals the pack again without the purged key"
    )
    func queuedPackLosesAPurgedKey() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        _ = try library.enableEncryption()
        let assets = try library.createAssets(3)
        let ids = try assets.map { try #require(LocalIdentifier($0)).uuid }
        let block = try #require(try library.allEvents().last?.changeBlock)
        let name = KeyStoreName.pack(block: block, index: 0)
        #expect(try queuedPack(library, name)?.records.map(\.asset) == ids)
        #expect(try library.pendingKeyEntries().filter { $0.name.hasPrefix("asset/") }.isEmpty)

        try library.performChangesAndWait { try $0.deleteAssets([assets[1]]) }
        try library.performChangesAndWait { try $0.purgeAssets([assets[1]]) }
        let pack = try #require(try queuedPack(library, name))
        #expect(Set(pack.records.map(\.asset)) == [ids[0], ids[2]])
        // Nothing else goes to the server for the purged key but the deletion of its entry.
        #expect(
            try library.pendingKeyEntries().map(\.name).filter { $0.hasPrefix("asset/") || $0.hasPrefix("pack/") }.sorted() == [
                KeyStoreName.asset(ids[1]), name,
            ])
        #expect(
            try library.readDatabase {
                try $0.firstRow("SELECT key IS NULL AND pack IS NULL FROM e2e_asset_keys WHERE asset = ?", [ids[1].bytes]) { $0.int64(0) }
            } == 1)

        // Purging the others too leaves a pack without keys: it is deleted (it may have reached the server unanswered).
        try library.performChangesAndWait { try $0.deleteAssets([assets[0], assets[2]]) }
        try library.performChangesAndWait { try $0.purgeAssets([assets[0], assets[2]]) }
        let entry = try #require(try library.pendingKeyEntries().first { $0.name == name })
        #expect(entry.value == nil)
    }

    /// The member list of pack `name` in `library`, nil when the pack has none.
    func members(_ library: PhotoLibrary, _ name: String) throws -> [UUID]? {
        try library.readDatabase { db in
            try db.firstRow("SELECT members FROM e2e_packs WHERE name = ?", [name]) {
                $0.isNull(0) ? nil : PhotoLibrary.memberList($0.blob(0))
            }
        } ?? nil
    }

    @Test(
        "a pack lists its members on the device that made it and on the device that took it; a purge on a device that took it replaces it from the list"
    )
    func memberLists() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory)
        _ = try anna.enableEncryption()
        let assets = try anna.createAssets(5)
        let ids = try assets.map { try #require(LocalIdentifier($0)).uuid }
        let name = KeyStoreName.pack(block: try #require(try anna.allEvents().last?.changeBlock), index: 0)
        #expect(try members(anna, name) == ids.sorted { $0.precedes($1) })

        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, name: "ben")
        try anna.approveEnrolment(of: "ben-tablet", publicKey: try ben.prepareEnrolment())
        let entries = try anna.pendingKeyEntries().compactMap { entry in entry.value.map { (name: entry.name, value: $0) } }
        #expect(try ben.absorbKeyStore(entries).assetKeys == 5)
        #expect(try members(ben, name) == ids.sorted { $0.precedes($1) })
        // Taken again (the entries read once more): the list stays one entry per asset.
        try ben.withDatabase { try $0.execute("DELETE FROM e2e_asset_keys WHERE asset = ?", [ids[0].bytes]) }
        try ben.readDatabase { try ben.encryption.load($0) }
        _ = try ben.absorbKeyStore(entries)
        #expect(try members(ben, name) == ids.sorted { $0.precedes($1) })

        // Ben purges one: the pack's other four keys go up on their own, the pack is deleted.
        try ben.applyRemoteEvents(try anna.allEvents())
        try ben.performChangesAndWait { try $0.deleteAssets([assets[2]]) }
        try ben.performChangesAndWait { try $0.purgeAssets([assets[2]]) }
        let pending = try ben.pendingKeyEntries()
        #expect(pending.first { $0.name == name }.map { $0.value == nil } == true)
        #expect(
            Set(pending.filter { $0.value != nil && $0.name.hasPrefix("asset/") }.map(\.name))
                == Set(ids.filter { $0 != ids[2] }.map(KeyStoreName.asset)))
        #expect(
            try members(ben, name) == nil && ben.readDatabase { try $0.firstRow("SELECT count(*) FROM e2e_packs") { $0.int64(0) } } == 0)
    }

    @Test("a pack recorded before member lists (migration 22) is found by its keys' rows: a purge seals it again without the purged key")
    func packWithoutMemberList() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        _ = try library.enableEncryption()
        let assets = try library.createAssets(3)
        let ids = try assets.map { try #require(LocalIdentifier($0)).uuid }
        let name = KeyStoreName.pack(block: try #require(try library.allEvents().last?.changeBlock), index: 0)
        try library.withDatabase { try $0.execute("UPDATE e2e_packs SET members = NULL") }
        try library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        #expect(Set(try #require(try queuedPack(library, name)).records.map(\.asset)) == [ids[1], ids[2]])
    }

    @Test("a block that makes and purges an asset queues a pack without its key; a pack left without keys is deleted")
    func madeAndPurgedInOneBlock() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        _ = try library.enableEncryption()
        let earlier = try library.createAssets(1)[0]
        let earlierPack = KeyStoreName.pack(block: try #require(try library.allEvents().last?.changeBlock), index: 0)
        let (made, other, block) = try library.performChangesAndWait { changes -> (String, String, UUID) in
            let made = try changes.createAsset(imageCreation()).placeholderForCreatedAsset.localIdentifier
            let other = try changes.createAsset(imageCreation()).placeholderForCreatedAsset.localIdentifier
            try changes.deleteAssets([made, earlier])
            try changes.purgeAssets([made, earlier])
            return (made, other, changes.changeBlock)
        }
        let pack = try #require(try queuedPack(library, KeyStoreName.pack(block: block, index: 0)))
        #expect(pack.records.map(\.asset) == [try #require(LocalIdentifier(other)).uuid])
        #expect(try library.pendingKeyEntries().first { $0.name == earlierPack }.map { $0.value == nil } == true)
        #expect(try library.fetchAssets().map(\.localIdentifier) == [other])
        #expect(try library.pendingKeyEntries().contains { $0.name == KeyStoreName.asset(try #require(LocalIdentifier(made)).uuid) })
    }

    @Test("blob names join a queued pack, sealed again once; keys whose blobs no longer fit one pack go on their own")
    func blobNamesInQueuedPacks() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        _ = try library.enableEncryption()
        let ids = try library.createAssets(3).map { try #require(LocalIdentifier($0)).uuid }
        let block = try #require(try library.allEvents().last?.changeBlock)
        let name = KeyStoreName.pack(block: block, index: 0)
        let ring = try #require(library.encryption.snapshot.ring)
        // As the upload of each asset's resources names 6,000 blobs (384 KB of names each): two
        // keys fit the pack, the third goes on its own, with its blobs.
        let maps = ids.map { _ in Dictionary(uniqueKeysWithValues: (0..<6000).map { _ in (SecretKey().bytes, SecretKey().bytes) }) }
        try library.withDatabase { db in
            for (id, map) in zip(ids, maps) {
                try db.execute("UPDATE e2e_asset_keys SET blobs = ? WHERE asset = ?", [PhotoLibrary.blobColumn(map), id.bytes])
            }
            try PhotoLibrary.resealQueuedPack(name, ring: ring, in: db)
        }
        let pack = try #require(try queuedPack(library, name))
        #expect(pack.records.count == 2)
        for record in pack.records { #expect(record.blobs == maps[ids.firstIndex(of: record.asset)!]) }
        let alone = try #require(ids.first { id in !pack.records.contains { $0.asset == id } })
        let entry = try #require(try library.pendingKeyEntries().first { $0.name == KeyStoreName.asset(alone) }?.value)
        let record = try WrappedAssetKey(asset: alone, unsealing: entry, with: ring.current.key)
        #expect(record.blobs == maps[ids.firstIndex(of: alone)!])
        #expect(
            try library.readDatabase { try $0.firstRow("SELECT pack FROM e2e_asset_keys WHERE asset = ?", [alone.bytes]) { $0.isNull(0) } }
                == true)
    }
}
