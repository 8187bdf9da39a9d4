import Foundation
import FuzzSupport
import LedgerCore
import LedgerCrypto
import SyncProtocol

/// The records of an encrypted library's key store, as a device reads them from the server
/// (which cannot open them, and may be hostile): asset keys wrapped under a library key
/// generation (`WrappedAssetKey(asset:unsealing:wrappingKey:)`), asset keys an add-only device
/// sealed to the library's identity with its grant (`WrappedAssetKey.open(asset:sealedToIdentity:identity:)`),
/// add-only grants (`AddOnlyGrant.isValid`, `.grantee(of:)`), key rings (`KeyRing(serialized:)`),
/// packs of asset keys (`AssetKeyPack`, sealed and opened) and the opened bytes of a record; and
/// the key store's messages in their binary form
/// (`KeyStoreBody`: changes, their results, entries), in which the server sends them.
///
/// The first byte chooses the reading. Bytes as they arrive: nothing traps, and what opens
/// seals and opens again as the same record. A record made from the input and sealed both ways:
/// it opens as itself, and once its binding is altered (another asset, another key identifier
/// or generation in its header, another generation key) or any byte of it changed, it never
/// opens. A binary key store message that decodes reads back from its own encoding and, within
/// the JSON form's limits, from its JSON form.
@main
enum KeysTarget: FuzzTarget {
    /// Fixed keys, so that every run reads the same: the library key generation, a second one
    /// (after a rotation), the library's identity, another library's, an add-only device and
    /// another device.
    static let generation = (id: UInt32(0x1234_5671), key: fixedKey(1))
    static let otherGeneration = (id: UInt32(0x0BAD_CAF1), key: fixedKey(2))
    static let identity = BoxKeyPair(secretKey: fixedKey(3))
    static let otherIdentity = BoxKeyPair(secretKey: fixedKey(4))
    static let writer = BoxKeyPair(secretKey: fixedKey(5))
    static let stranger = BoxKeyPair(secretKey: fixedKey(6))
    static let writerName = "anna-phone"
    /// The writer's grant from the library, and one from another library.
    static let grant = try! AddOnlyGrant.make(identity: identity, devicePublicKey: writer.publicKey, device: writerName)
    static let foreignGrant = try! AddOnlyGrant.make(identity: otherIdentity, devicePublicKey: writer.publicKey, device: writerName)
    /// The subkeys of the two generations that wrap asset keys, derived once: every refusal
    /// opens with them (`WrappedAssetKey(asset:unsealing:with:)` derives the same subkey per call;
    /// the readings of the input's bytes go through it).
    static let wrapping = WrappedAssetKey.wrappingKey(of: generation.key)
    static let otherWrapping = WrappedAssetKey.wrappingKey(of: otherGeneration.key)
    static let asset = UUID(uuid: (0x01, 0x93, 0x7A, 0x10, 0, 0, 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x42))
    /// The subkeys of the generation that seal packs, and the entry a pack is read as.
    static let packKey = AssetKeyPack.packKey(of: generation.key)
    static let otherPackKey = AssetKeyPack.packKey(of: otherGeneration.key)
    static let packName = "pack/01937a10-0000-7000-8000-000000000042.0"

    static func fixedKey(_ seed: UInt8) -> SecretKey { try! SecretKey(bytes: (0..<32).map { UInt8($0) &* 31 &+ seed }) }

    static func seeds() -> [Seed] {
        let record = WrappedAssetKey(
            asset: asset, keyID: 0x0ABC_DEF2, key: fixedKey(7), blobs: [[UInt8](repeating: 1, count: 32): [UInt8](repeating: 2, count: 32)])
        let ring = try! KeyRing(serialized: [1] + fixedKey(8).bytes + [1] + [0x12, 0x34, 0x56, 0x71] + fixedKey(9).bytes)
        var structured = FuzzInputWriter()
        structured.byte(4)
        structured.raw(asset.bytes)
        structured.raw([0x0A, 0xBC, 0xDE, 0xF2])
        structured.raw(fixedKey(7).bytes)
        structured.byte(2)
        structured.raw([UInt8](repeating: 3, count: 128))
        structured.byte(0)
        structured.uint16(0)
        return [
            Seed(name: "wrapped", bytes: [0] + record.sealed(under: generation)),
            Seed(
                name: "sealed-to-identity", bytes: [1] + (try! record.sealed(toIdentity: identity.publicKey, writer: writer, grant: grant))),
            Seed(name: "grant", bytes: [2] + grant),
            Seed(name: "ring", bytes: [3] + ring.serialized),
            Seed(name: "record", bytes: structured.bytes),
            Seed(name: "plain-record", bytes: [5] + fixedKey(7).bytes + [1] + [UInt8](repeating: 4, count: 64)),
            Seed(
                name: "key-changes",
                bytes: [6]
                    + KeyStoreBody.encode(
                        KeyChangesRequest(changes: [
                            KeyChange(name: "library/public", value: identity.publicKey, createOnly: true),
                            KeyChange(name: "asset/\(asset.uuidString.lowercased())", value: record.sealed(under: generation)),
                            KeyChange(name: "grant/anna-phone", value: nil),
                        ]))),
            Seed(
                name: "key-results",
                bytes: [7]
                    + KeyStoreBody.encode(
                        KeyChangesResponse(
                            results: [
                                .init(name: "ring/anna-phone", status: .stored),
                                .init(name: "device/ben", status: .forbidden, reason: "not yours"),
                                .init(name: "asset/x", status: .conflict), .init(name: "grant/cleo", status: .deleted),
                            ], from: 41, through: 43))),
            Seed(
                name: "key-entries",
                bytes: [8]
                    + KeyStoreBody.encode(
                        KeyEntriesResponse(
                            entries: [
                                KeyEntry(name: "grant/anna-phone", value: grant), KeyEntry(name: "ring/anna-phone", value: ring.serialized),
                            ],
                            last: 42))),
            Seed(
                name: "pack",
                bytes: [9]
                    + AssetKeyPack(records: [
                        record,
                        WrappedAssetKey(
                            asset: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), keyID: 0x0123_4566,
                            key: fixedKey(10)),
                    ])
                    .sealed(name: packName, under: generation)),
            Seed(name: "pack-plain", bytes: [10, 1] + asset.bytes + [0x0A, 0xBC, 0xDE, 0xF2] + fixedKey(7).bytes + [0]),
        ]
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        var fuzz = FuzzInput(input)
        let kind = fuzz.byte() % 11
        let bytes = fuzz.rest()
        switch kind {
        case 9: return (try? AssetKeyPack(name: packName, unsealing: bytes, packKey: packKey)) != nil
        case 10: return (try? AssetKeyPack(plain: bytes, name: packName)) != nil
        case 6: return (try? KeyStoreBody.decodeChanges(bytes)) != nil
        case 7: return (try? KeyStoreBody.decodeResults(bytes)) != nil
        case 8: return (try? KeyStoreBody.decodeEntries(bytes)) != nil
        case 0: return (try? WrappedAssetKey(asset: asset, unsealing: bytes, with: generation.key)) != nil
        case 1: return (try? WrappedAssetKey.open(asset: asset, sealedToIdentity: bytes, identity: identity)) != nil
        case 2: return AddOnlyGrant.grantee(of: bytes, devicePublicKey: writer.publicKey, identity: identity) != nil
        case 3: return (try? KeyRing(serialized: bytes)) != nil
        case 4: return true
        default: return (try? WrappedAssetKey(asset: asset, keyID: 1, plainRecord: bytes)) != nil
        }
    }

    static func run(_ input: [UInt8]) {
        var fuzz = FuzzInput(input)
        let kind = fuzz.byte() % 11
        if kind == 4 {
            checkRecord(&fuzz)
            return
        }
        let bytes = fuzz.rest()
        switch kind {
        case 0:
            guard let record = try? WrappedAssetKey(asset: asset, unsealing: bytes, with: generation.key) else { return }
            require(WrappedAssetKey.identifiers(of: bytes)?.keyID == record.keyID, "a record opens with another key identifier")
            checkSealing(record)
        case 1:
            guard let (record, name) = try? WrappedAssetKey.open(asset: asset, sealedToIdentity: bytes, identity: identity) else { return }
            require(name == writerName, "a record opens as written by '\(name)', whom the library did not approve")
            checkSealing(record)
        case 2:
            let name = AddOnlyGrant.grantee(of: bytes, devicePublicKey: writer.publicKey, identity: identity)
            let valid = AddOnlyGrant.isValid(bytes, libraryPublicKey: identity.publicKey, device: writer, device: writerName)
            require(name == nil || name == writerName, "a grant approves '\(name ?? "")', for whom the library made none")
            // The device cannot check the grant's tag (only the identity computes it); a grant
            // the reader takes, the device takes too.
            require(name == nil || valid, "the reader takes a grant the device refuses")
            require(
                AddOnlyGrant.grantee(of: bytes, devicePublicKey: stranger.publicKey, identity: identity) == nil,
                "a grant approves another device's key")
        case 3:
            guard let ring = try? KeyRing(serialized: bytes) else { return }
            require((try? KeyRing(serialized: ring.serialized))?.serialized == ring.serialized, "a key ring does not read back")
        case 6:
            guard let request = try? KeyStoreBody.decodeChanges(bytes) else { return }
            require((try? KeyStoreBody.decodeChanges(KeyStoreBody.encode(request))) == request, "key changes do not read back")
            if request.changes.count <= KeyChangesRequest.maximumChanges {
                require((try? KeyChangesRequest.decode(request.encoded())) == request, "key changes do not read back from JSON")
            }
        case 7:
            guard let response = try? KeyStoreBody.decodeResults(bytes) else { return }
            require((try? KeyStoreBody.decodeResults(KeyStoreBody.encode(response))) == response, "key change results do not read back")
            require((try? KeyChangesResponse.decode(response.encoded())) == response, "key change results do not read back from JSON")
        case 8:
            guard let response = try? KeyStoreBody.decodeEntries(bytes) else { return }
            require((try? KeyStoreBody.decodeEntries(KeyStoreBody.encode(response))) == response, "key entries do not read back")
            require((try? KeyEntriesResponse.decode(response.encoded())) == response, "key entries do not read back from JSON")
        case 9:
            guard let pack = try? AssetKeyPack(name: packName, unsealing: bytes, packKey: packKey) else { return }
            require(AssetKeyPack.generation(of: bytes) != nil, "a pack opens without a generation in its header")
            require(
                (try? AssetKeyPack(name: packName, unsealing: bytes, packKey: otherPackKey)) == nil,
                "a pack opens with another generation's key")
            checkPack(pack)
        case 10:
            guard let pack = try? AssetKeyPack(plain: bytes, name: packName) else { return }
            require(pack.records.count <= AssetKeyPack.maximumRecords, "a pack holds \(pack.records.count) records")
            require(Set(pack.records.map(\.asset)).count == pack.records.count, "a pack names an asset twice")
            require(pack.records.allSatisfy { KeyKind.of($0.keyID) == .asset }, "a pack holds a key that is not an asset key")
            checkPack(pack)
        default:
            guard let record = try? WrappedAssetKey(asset: asset, keyID: 1, plainRecord: bytes) else { return }
            require(record.blobs.count <= 10_000, "a record names \(record.blobs.count) blobs")
            checkSealing(record)
        }
    }

    /// A record built from the input, sealed under the generation and to the identity, then
    /// altered as the input says.
    private static func checkRecord(_ fuzz: inout FuzzInput) {
        let recordAsset = UUID(bytes: padded(fuzz.bytes(upTo: 16), to: 16))!
        let keyID = fuzz.bytes(upTo: 4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let key = try! SecretKey(bytes: padded(fuzz.bytes(upTo: 32), to: 32))
        var blobs: [[UInt8]: [UInt8]] = [:]
        for _ in 0..<fuzz.byte() % 8 {
            let pair = padded(fuzz.bytes(upTo: 64), to: 64)
            blobs[Array(pair[0..<32])] = Array(pair[32..<64])
        }
        let record = WrappedAssetKey(asset: recordAsset, keyID: keyID, key: key, blobs: blobs)
        let alteration = fuzz.byte()
        let position = Int(fuzz.uint16())
        checkSealing(record, alteration: alteration, position: position)
    }

    /// Seals `record` both ways: each opens as the record, and never once its binding or any
    /// byte is altered (the alteration `alteration` at `position`; 0 alters nothing more).
    private static func checkSealing(_ record: WrappedAssetKey, alteration: UInt8 = 0, position: Int = 0) {
        let wrapped = record.sealed(under: generation)
        let opened = try? WrappedAssetKey(asset: record.asset, unsealing: wrapped, wrappingKey: wrapping)
        require(opened.map { same($0, record) } == true, "a wrapped record does not open as itself")
        let sealed = try! record.sealed(toIdentity: identity.publicKey, writer: writer, grant: grant)
        let fromWriter = try? WrappedAssetKey.open(asset: record.asset, sealedToIdentity: sealed, identity: identity)
        require(fromWriter.map { same($0.record, record) && $0.writer == writerName } == true, "a sealed record does not open as itself")

        // The binding: another asset, another generation key, the other reading, another identity.
        let elsewhere = UUID(bytes: record.asset.bytes.enumerated().map { $0 == 15 ? $1 ^ 1 : $1 })!
        refuse(wrapped, asset: elsewhere, "a wrapped record opens as another asset's")
        require(
            (try? WrappedAssetKey(asset: record.asset, unsealing: wrapped, wrappingKey: otherWrapping)) == nil,
            "a wrapped record opens with another generation key")
        refuse(sealed, asset: elsewhere, "a sealed record opens as another asset's")
        require(
            (try? WrappedAssetKey.open(asset: record.asset, sealedToIdentity: wrapped, identity: identity)) == nil,
            "a wrapped record opens as sealed to the identity")
        require(
            (try? WrappedAssetKey.open(asset: record.asset, sealedToIdentity: sealed, identity: otherIdentity)) == nil,
            "a record sealed to one library opens with another's identity")
        // A writer whose grant another library made is not approved here.
        let foreign = try! record.sealed(toIdentity: identity.publicKey, writer: writer, grant: foreignGrant)
        refuse(foreign, asset: record.asset, "a record with another library's grant opens")

        // The header's generation and key identifier, then any byte.
        for sealedBytes in [wrapped, sealed] {
            let change = alteration == 0 ? UInt8(1) : alteration
            for index in [position % 4, 4 + position % 4, position % sealedBytes.count] {
                var altered = sealedBytes
                altered[index] ^= change
                refuse(altered, asset: record.asset, "a record with byte \(index) altered opens")
            }
        }
    }

    /// Seals `pack` as its entry: it opens as itself, not under another name, and not with any
    /// of a few bytes changed.
    private static func checkPack(_ pack: AssetKeyPack) {
        let sealed = pack.sealed(name: packName, under: generation)
        let opened = try? AssetKeyPack(name: packName, unsealing: sealed, packKey: packKey)
        require(
            opened.map { $0.records.count == pack.records.count && zip($0.records, pack.records).allSatisfy(same) } == true,
            "a pack does not open as itself")
        require(
            (try? AssetKeyPack(name: packName + "1", unsealing: sealed, packKey: packKey)) == nil, "a pack opens under another entry's name"
        )
        for index in [0, 3, 4, sealed.count / 2, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x80
            require(
                (try? AssetKeyPack(name: packName, unsealing: altered, packKey: packKey)) == nil, "a pack with byte \(index) altered opens")
        }
    }

    /// Requires that `bytes` open as a record of `asset` in neither reading.
    private static func refuse(_ bytes: [UInt8], asset: UUID, _ message: String) {
        require((try? WrappedAssetKey(asset: asset, unsealing: bytes, wrappingKey: wrapping)) == nil, message)
        require((try? WrappedAssetKey.open(asset: asset, sealedToIdentity: bytes, identity: identity)) == nil, message)
    }

    private static func same(_ a: WrappedAssetKey, _ b: WrappedAssetKey) -> Bool {
        a.asset == b.asset && a.keyID == b.keyID && a.key == b.key && a.blobs == b.blobs
    }

    /// `bytes` with zeros after them up to `count`.
    private static func padded(_ bytes: [UInt8], to count: Int) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: max(0, count - bytes.count))
    }
}
