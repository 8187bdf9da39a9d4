import CSodium
import Foundation
import LedgerCore

/// The keys of many assets in one entry of the server's key store: the assets one change block
/// made on a device that holds the key ring, sealed together under a library key generation.
///
/// A large import makes tens of thousands of assets. With one entry each, the server checks and
/// stores every entry, the device forgets every one from its outbox, and a new device reads,
/// opens and stores every one before its first page applies. A pack is one entry for up to
/// ``maximumRecords`` assets: one seal, one row on the server, one open.
///
/// Each asset keeps a random key of its own, so crypto-shredding still destroys one asset's key
/// alone: a purge of an asset whose key is in a pack publishes the keys of the pack's other
/// assets as entries of their own (``WrappedAssetKey``), then deletes the pack, in the push that
/// carries the purge.
///
/// Layout: the generation's identifier (4 bytes, big-endian), a nonce, the ciphertext
/// (XChaCha20-Poly1305 under a subkey of the generation, with a label, the generation's
/// identifier and the entry's name as associated data: a pack cannot be passed off under another
/// name). The plaintext: the number of records (varint), then per record the asset (16 bytes),
/// its key's identifier (4 bytes, big-endian), the key and its blobs' names as a
/// ``WrappedAssetKey`` record holds them.
public struct AssetKeyPack: Sendable {
    /// The asset keys, one per asset.
    public var records: [WrappedAssetKey]

    /// The most records a pack holds.
    public static let maximumRecords = 4096
    /// The most bytes a pack's plaintext holds (the server keeps entries of up to 1 MiB).
    public static let maximumPlainBytes = 768 * 1024

    /// Creates a pack of `records` (at most ``maximumRecords``, each asset once, within
    /// ``maximumPlainBytes``: see ``split(_:)``).
    public init(records: [WrappedAssetKey]) { self.records = records }

    /// `records` in packs that each fit the limits, in their order.
    public static func split(_ records: [WrappedAssetKey]) -> [AssetKeyPack] {
        var packs: [AssetKeyPack] = []
        var current: [WrappedAssetKey] = []
        var bytes = 0
        for record in records {
            let length = 20 + record.plainRecordLength
            if !current.isEmpty, current.count == maximumRecords || bytes + length > maximumPlainBytes - 8 {
                packs.append(AssetKeyPack(records: current))
                current = []
                bytes = 0
            }
            current.append(record)
            bytes += length
        }
        if !current.isEmpty { packs.append(AssetKeyPack(records: current)) }
        return packs
    }

    /// The subkey of a library key generation that seals packs.
    public static func packKey(of generationKey: SecretKey) -> SecretKey { generationKey.derive("keypack1") }

    /// The pack sealed under `generation` as the entry named `name`.
    public func sealed(name: String, under generation: (id: UInt32, key: SecretKey)) -> [UInt8] {
        let (nonce, ciphertext) = AEAD.seal(
            plain, key: Self.packKey(of: generation.key), associatedData: Self.context(name: name, generation: generation.id))
        return withUnsafeBytes(of: generation.id.bigEndian, Array.init) + nonce + ciphertext
    }

    /// The library key generation a sealed pack names, or nil when it is too short to be one.
    public static func generation(of sealed: [UInt8]) -> UInt32? {
        guard sealed.count >= 4 + AEAD.nonceLength + AEAD.overhead else { return nil }
        return sealed.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// Opens the pack of entry `name` with the ``packKey(of:)`` of the generation it names.
    ///
    /// - Throws: ``CryptoError`` for a wrong key, a pack of another name, or damaged bytes.
    public init(name: String, unsealing sealed: [UInt8], packKey: SecretKey) throws {
        guard let generation = Self.generation(of: sealed) else { throw CryptoError("the key pack '\(name)' is too short") }
        var plain: [UInt8]
        do {
            plain = try AEAD.open(
                sealed[(4 + AEAD.nonceLength)...], key: packKey, nonce: sealed[4..<(4 + AEAD.nonceLength)],
                associatedData: Self.context(name: name, generation: generation))
        } catch {
            throw CryptoError("the key pack '\(name)' does not open with library key \(generation) (another entry's, or damaged)")
        }
        defer { Self.wipe(&plain) }
        try self.init(plain: plain, name: name)
    }

    /// Overwrites opened bytes (they hold keys) before they are released.
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { sodium_memzero(base, $0.count) } }
    }

    /// Reads an opened pack (`package` for the fuzz target of key store records).
    ///
    /// - Throws: ``CryptoError`` for damaged bytes: a count over ``maximumRecords``, an asset
    ///   named twice, an identifier that is not an asset key's, a record cut short, bytes after
    ///   the last record.
    package init(plain: [UInt8], name: String) throws {
        var reader = ByteReader(plain)
        do {
            let count = try reader.readVarint()
            guard count <= UInt64(Self.maximumRecords) else { throw CryptoError("the key pack '\(name)' holds \(count) records") }
            var records: [WrappedAssetKey] = []
            records.reserveCapacity(Int(count))
            var seen = Set<UUID>(minimumCapacity: Int(count))
            for _ in 0..<count {
                let asset = try reader.withRaw(count: 16) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
                let keyID = try reader.withRaw(count: 4) { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) }
                guard KeyKind.of(keyID) == .asset else {
                    throw CryptoError("the key pack '\(name)' holds key \(keyID) for asset \(asset), which is not an asset key")
                }
                guard seen.insert(asset).inserted else { throw CryptoError("the key pack '\(name)' names asset \(asset) twice") }
                records.append(try WrappedAssetKey(asset: asset, keyID: keyID, reading: &reader))
            }
            guard reader.isAtEnd else { throw CryptoError("the key pack '\(name)' is damaged: bytes follow its last record") }
            self.init(records: records)
        } catch let error as CryptoError {
            throw error
        } catch {
            throw CryptoError("the key pack '\(name)' is damaged: \(error)")
        }
    }

    /// The plaintext: the count, then each record.
    var plain: [UInt8] {
        var writer = ByteWriter(capacity: 8 + records.reduce(0) { $0 + 20 + $1.plainRecordLength })
        writer.write(varint: UInt64(records.count))
        for record in records {
            withUnsafeBytes(of: record.asset.uuid) { writer.write(raw: $0) }
            writer.write(raw: withUnsafeBytes(of: record.keyID.bigEndian, Array.init))
            record.writePlainRecord(to: &writer)
        }
        return writer.bytes
    }

    /// The associated data of a pack's seal: a label, the generation's identifier, the entry's name.
    static func context(name: String, generation: UInt32) -> [UInt8] {
        Array("photoledger asset key pack v1".utf8) + withUnsafeBytes(of: generation.bigEndian, Array.init) + Array(name.utf8)
    }
}
