import Foundation
import LedgerCore

/// Sealing of event payloads: XChaCha20-Poly1305 under a subkey of a library key generation or
/// of an asset key, with the event's envelope (`Event.envelopeBytes`, which names the key and
/// the nonce) as associated data. The server checks the envelope and both hash chains cover the
/// ciphertext; only holders of the key read the payload, and a sealed payload cannot be moved to
/// another envelope.
public enum PayloadSeal {
    /// The subkey that seals payloads under `key` (a library key generation or an asset key).
    public static func payloadKey(of key: SecretKey) -> SecretKey { key.derive("payload1") }

    /// `event` with its plain payload sealed by `payloadKey` (see ``payloadKey(of:)``) under the
    /// identifier `keyID`.
    public static func seal(_ event: Event, keyID: UInt32, payloadKey: SecretKey) -> Event {
        var sealed = event
        let nonce = Sodium.random(AEAD.nonceLength)
        sealed.seal = Event.Seal(keyID: keyID, nonce: nonce)
        sealed.payload = []
        sealed.payload = AEAD.seal(event.payload, key: payloadKey, nonce: nonce, associatedData: sealed.envelopeBytes)
        return sealed
    }

    /// The plain payload of a sealed event.
    ///
    /// - Throws: ``CryptoError`` when the key is not the one it was sealed with, or the event was
    ///   changed.
    public static func open(_ event: Event, payloadKey: SecretKey) throws -> [UInt8] {
        guard let seal = event.seal else { return event.payload }
        return try AEAD.open(event.payload, key: payloadKey, nonce: seal.nonce, associatedData: event.envelopeBytes)
    }
}

/// An asset key as the server's key store keeps it: sealed under a library key generation, with
/// the names of the asset's encrypted resource blobs. The record is bound to its asset and key
/// identifier (both are associated data), so it cannot be passed off as another asset's key.
///
/// Asset keys are found by their asset, not by identifier alone: the 30 random bits of an
/// identifier are not unique across a library of millions of assets, the asset is.
public struct WrappedAssetKey: Sendable {
    /// The asset the key belongs to.
    public var asset: UUID
    /// The asset key's identifier (as event seals name it).
    public var keyID: UInt32
    /// The asset key.
    public var key: SecretKey
    /// The encrypted blob of each resource: plaintext SHA-256 → blob name (SHA-256 of the ciphertext).
    public var blobs: [[UInt8]: [UInt8]]

    /// Creates a record.
    public init(asset: UUID, keyID: UInt32, key: SecretKey, blobs: [[UInt8]: [UInt8]] = [:]) {
        self.asset = asset
        self.keyID = keyID
        self.key = key
        self.blobs = blobs
    }

    static func context(_ asset: UUID, _ keyID: UInt32, generation: UInt32) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.write(raw: Array("photoledger asset key v1".utf8))
        writer.write(uuid: asset)
        writer.write(raw: withUnsafeBytes(of: keyID.bigEndian, Array.init))
        writer.write(raw: withUnsafeBytes(of: generation.bigEndian, Array.init))
        return writer.bytes
    }

    /// The record sealed under `generation` of the library key: the generation's identifier (4
    /// bytes), the key's identifier (4 bytes), a nonce, the ciphertext.
    public func sealed(under generation: (id: UInt32, key: SecretKey)) -> [UInt8] {
        var writer = ByteWriter(capacity: 48 + blobs.count * 64)
        writer.write(raw: key.bytes)
        writer.write(varint: UInt64(blobs.count))
        for (plain, name) in blobs.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            writer.write(raw: plain)
            writer.write(raw: name)
        }
        let (nonce, ciphertext) = AEAD.seal(
            writer.bytes, key: generation.key.derive("assetkey"), associatedData: Self.context(asset, keyID, generation: generation.id))
        return withUnsafeBytes(of: generation.id.bigEndian, Array.init) + withUnsafeBytes(of: keyID.bigEndian, Array.init) + nonce
            + ciphertext
    }

    /// The library key generation and the key identifier a sealed record names.
    public static func identifiers(of sealed: [UInt8]) -> (generation: UInt32, keyID: UInt32)? {
        guard sealed.count > 8 + AEAD.nonceLength + AEAD.overhead else { return nil }
        let generation = sealed.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let keyID = sealed[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return (generation, keyID)
    }

    /// The subkey of a library key generation that wraps asset keys (derive it once to open
    /// many records with ``init(asset:unsealing:wrappingKey:)``).
    public static func wrappingKey(of generationKey: SecretKey) -> SecretKey { generationKey.derive("assetkey") }

    /// Opens the record of `asset` sealed by ``sealed(under:)``.
    ///
    /// - Throws: ``CryptoError`` for a wrong generation key, a record of another asset, or
    ///   damaged bytes.
    public init(asset: UUID, unsealing sealed: [UInt8], with generationKey: SecretKey) throws {
        try self.init(asset: asset, unsealing: sealed, wrappingKey: Self.wrappingKey(of: generationKey))
    }

    /// Opens the record of `asset` with the ``wrappingKey(of:)`` of the generation it names.
    ///
    /// - Throws: ``CryptoError`` for a wrong key, a record of another asset, or damaged bytes.
    public init(asset: UUID, unsealing sealed: [UInt8], wrappingKey: SecretKey) throws {
        guard let (generation, keyID) = Self.identifiers(of: sealed) else {
            throw CryptoError("the wrapped key of asset \(asset) is too short")
        }
        let plain: [UInt8]
        do {
            plain = try AEAD.open(
                Array(sealed.dropFirst(8 + AEAD.nonceLength)), key: wrappingKey,
                nonce: Array(sealed[8..<(8 + AEAD.nonceLength)]), associatedData: Self.context(asset, keyID, generation: generation))
        } catch {
            throw CryptoError(
                "the wrapped key of asset \(asset) does not open with library key \(generation) (another asset's, or damaged)")
        }
        var reader = ByteReader(plain)
        do {
            let key = try SecretKey(bytes: try reader.readRaw(count: SecretKey.length))
            let count = try reader.readVarint()
            guard count <= 10_000 else { throw CryptoError("the wrapped key of asset \(asset) names \(count) blobs") }
            var blobs: [[UInt8]: [UInt8]] = [:]
            for _ in 0..<count { blobs[try reader.readRaw(count: 32)] = try reader.readRaw(count: 32) }
            self.init(asset: asset, keyID: keyID, key: key, blobs: blobs)
        } catch let error as CryptoError {
            throw error
        } catch {
            throw CryptoError("the wrapped key of asset \(asset) is damaged: \(error)")
        }
    }
}
