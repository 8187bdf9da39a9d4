import Foundation
import LedgerCore

/// Sealing of event payloads: XChaCha20-Poly1305 under a subkey of a library key generation or
/// of an asset key, with the event's envelope (``Event/envelopeBytes``, which names the key and
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
/// the names of the asset's encrypted resource blobs.
public struct WrappedAssetKey: Sendable {
    /// The asset key's identifier.
    public var keyID: UInt32
    /// The asset key.
    public var key: SecretKey
    /// The encrypted blob of each resource: plaintext SHA-256 → blob name (SHA-256 of the ciphertext).
    public var blobs: [[UInt8]: [UInt8]]

    /// Creates a record.
    public init(keyID: UInt32, key: SecretKey, blobs: [[UInt8]: [UInt8]] = [:]) {
        self.keyID = keyID
        self.key = key
        self.blobs = blobs
    }

    static func context(_ keyID: UInt32) -> [UInt8] { Array("photoledger asset key v1".utf8) + withUnsafeBytes(of: keyID.bigEndian, Array.init) }

    /// The record sealed under `generation` of the library key: the generation's identifier (4
    /// bytes), a nonce, the ciphertext.
    public func sealed(under generation: (id: UInt32, key: SecretKey)) -> [UInt8] {
        var writer = ByteWriter(capacity: 48 + blobs.count * 64)
        writer.write(raw: key.bytes)
        writer.write(varint: UInt64(blobs.count))
        for (plain, name) in blobs.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            writer.write(raw: plain)
            writer.write(raw: name)
        }
        let (nonce, ciphertext) = AEAD.seal(writer.bytes, key: generation.key.derive("assetkey"), associatedData: Self.context(keyID))
        return withUnsafeBytes(of: generation.id.bigEndian, Array.init) + nonce + ciphertext
    }

    /// The library key generation a sealed record names.
    public static func generation(of sealed: [UInt8]) -> UInt32? {
        guard sealed.count > 4 + AEAD.nonceLength else { return nil }
        return sealed.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// Opens a record sealed by ``sealed(under:)``.
    ///
    /// - Throws: ``CryptoError`` for a wrong generation key or damaged bytes.
    public init(keyID: UInt32, unsealing sealed: [UInt8], with generationKey: SecretKey) throws {
        guard sealed.count > 4 + AEAD.nonceLength else { throw CryptoError("the wrapped asset key \(keyID) is too short") }
        let plain = try AEAD.open(
            Array(sealed.dropFirst(4 + AEAD.nonceLength)), key: generationKey.derive("assetkey"),
            nonce: Array(sealed[4..<(4 + AEAD.nonceLength)]), associatedData: Self.context(keyID))
        var reader = ByteReader(plain)
        do {
            let key = try SecretKey(bytes: try reader.readRaw(count: SecretKey.length))
            let count = try reader.readVarint()
            guard count <= 10_000 else { throw CryptoError("the wrapped asset key \(keyID) names \(count) blobs") }
            var blobs: [[UInt8]: [UInt8]] = [:]
            for _ in 0..<count { blobs[try reader.readRaw(count: 32)] = try reader.readRaw(count: 32) }
            self.init(keyID: keyID, key: key, blobs: blobs)
        } catch let error as CryptoError {
            throw error
        } catch {
            throw CryptoError("the wrapped asset key \(keyID) is damaged: \(error)")
        }
    }
}
