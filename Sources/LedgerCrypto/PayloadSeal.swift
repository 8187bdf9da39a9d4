import Foundation
import LedgerCore

/// Sealing of event payloads: XChaCha20-Poly1305 under a subkey of a library key generation or
/// of an asset key, with the event's envelope (`Event.envelopeBytes`, which names the key and
/// the nonce) as associated data. The server checks the envelope and both hash chains cover the
/// ciphertext; only holders of the key read the payload, and a sealed payload cannot be moved to
/// another envelope.
public enum PayloadSeal {
    /// The subkey that seals payloads under `key` (a library key generation or an asset key).
    public static func payloadKey(of key: SecretKey) -> SecretKey { key.derive(payloadContext) }

    /// The derivation context of payload keys.
    static let payloadContext: StaticString = "payload1"

    /// An asset's key under a library key generation: the keyed hash (BLAKE2b, keyed with the
    /// asset key) of the generation key. It needs both: a device revoked before the generation
    /// was made cannot compute it from the asset key it kept, and destroying the asset key
    /// (crypto-shredding) destroys every one of them.
    public static func assetEpochKey(assetKey: SecretKey, generationKey: SecretKey) -> SecretKey {
        try! SecretKey(bytes: KeyedHash.hash(Array("photoledger asset epoch v1".utf8) + generationKey.bytes, key: assetKey))  // 32 bytes
    }

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
        return try payloadKey.withBytes { try open(event, seal, key: $0) }
    }

    /// The plain payload of a sealed event, opened with the ``payloadKey(of:)`` of `key`,
    /// derived for this one open and not kept (an asset's creation is the only event sealed
    /// with its asset's own key).
    ///
    /// - Throws: ``CryptoError`` when the key is not the one it was sealed with, or the event was
    ///   changed.
    public static func open(_ event: Event, payloadKeyOf key: SecretKey) throws -> [UInt8] {
        guard let seal = event.seal else { return event.payload }
        return try key.withDerived(payloadContext) { try open(event, seal, key: $0) }
    }

    /// Opens `event`'s payload with the payload key at `key`: the envelope, nonce and
    /// ciphertext read in place.
    private static func open(_ event: Event, _ seal: Event.Seal, key: UnsafePointer<UInt8>) throws -> [UInt8] {
        try event.withEnvelopeBytes { envelope in
            try seal.withNonce { nonce in
                try event.payload.withUnsafeBytes { ciphertext in
                    try AEAD.open(ciphertext, key: key, nonce: nonce, associatedData: envelope)
                }
            }
        }
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

    /// The associated data of a record's seal: a label, the asset's 16 bytes, the key's and the
    /// generation's identifiers (4 bytes each, big-endian). Made with one allocation: a large
    /// library's records are opened by the ten thousand.
    static func context(_ asset: UUID, _ keyID: UInt32, generation: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(contextLabel.count + 24)
        bytes += contextLabel
        withUnsafeBytes(of: asset.uuid) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: keyID.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: generation.bigEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The label that starts a record's associated data.
    private static let contextLabel = Array("photoledger asset key v1".utf8)

    /// The record sealed under `generation` of the library key: the generation's identifier (4
    /// bytes), the key's identifier (4 bytes), a nonce, the ciphertext.
    public func sealed(under generation: (id: UInt32, key: SecretKey)) -> [UInt8] {
        let (nonce, ciphertext) = AEAD.seal(
            plainRecord, key: generation.key.derive("assetkey"), associatedData: Self.context(asset, keyID, generation: generation.id))
        return withUnsafeBytes(of: generation.id.bigEndian, Array.init) + withUnsafeBytes(of: keyID.bigEndian, Array.init) + nonce
            + ciphertext
    }

    /// The key and the blob names, as sealed.
    private var plainRecord: [UInt8] {
        var writer = ByteWriter(capacity: 48 + blobs.count * 64)
        writePlainRecord(to: &writer)
        return writer.bytes
    }

    /// Writes the key and the blob names (a record's sealed part; a pack's records each hold one).
    func writePlainRecord(to writer: inout ByteWriter) {
        writer.write(raw: key.bytes)
        writer.write(varint: UInt64(blobs.count))
        for (plain, name) in blobs.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            writer.write(raw: plain)
            writer.write(raw: name)
        }
    }

    /// The bytes ``writePlainRecord(to:)`` writes for this record.
    var plainRecordLength: Int {
        var varint = 1
        while blobs.count >> (7 * varint) > 0 { varint += 1 }
        return SecretKey.length + varint + blobs.count * 64
    }

    static let identityLabel = "photoledger add-only asset key v1"

    /// The record sealed to the library identity's public key by an add-only device, which holds
    /// no library key: only holders of the identity's secret key (the key ring) open it, and the
    /// device that sealed it cannot open it again.
    ///
    /// An ephemeral X25519 key pair is made for the record; the key that seals it is hashed from
    /// the ephemeral key's and the writer's agreements with the identity key, and all three public
    /// keys, so the record is both confidential (ephemeral) and made by the writer (static). The
    /// writer's ``AddOnlyGrant`` travels with it: a reader takes the key only from a writer the
    /// library approved, so no one else (the server included) can pass a key of its own off for
    /// an asset. Layout: four zero bytes (no generation), the key's identifier, the ephemeral
    /// public key, the writer's public key (32 bytes each), the grant's length (2 bytes) and the
    /// grant, a nonce, the ciphertext (XChaCha20-Poly1305, the header as associated data with the
    /// asset, as for ``sealed(under:)``).
    ///
    /// - Throws: ``CryptoError`` for an unusable public key or a grant over 64 KiB.
    public func sealed(toIdentity libraryPublicKey: [UInt8], writer: BoxKeyPair, grant: [UInt8]) throws -> [UInt8] {
        guard grant.count <= Int(UInt16.max) else { throw CryptoError("the add-only grant is too large") }
        let ephemeral = BoxKeyPair()
        let key = KeyAgreement.key(
            Self.identityLabel,
            [
                try KeyAgreement.shared(ephemeral.secretKey, libraryPublicKey), try KeyAgreement.shared(writer.secretKey, libraryPublicKey),
                ephemeral.publicKey, writer.publicKey, libraryPublicKey,
            ])
        var header = [UInt8](repeating: 0, count: 4)
        header += withUnsafeBytes(of: keyID.bigEndian, Array.init)
        header += ephemeral.publicKey
        header += writer.publicKey
        header += withUnsafeBytes(of: UInt16(grant.count).bigEndian, Array.init)
        header += grant
        let (nonce, ciphertext) = AEAD.seal(plainRecord, key: key, associatedData: Self.context(asset, keyID, generation: 0) + header)
        return header + nonce + ciphertext
    }

    /// Whether a sealed record was sealed to the library's identity (by an add-only device)
    /// rather than under a library key generation.
    public static func isSealedToIdentity(_ sealed: [UInt8]) -> Bool { identifiers(of: sealed)?.generation == 0 }

    /// Opens the record of `asset` that an add-only device sealed to the library's identity
    /// (``sealed(toIdentity:writer:grant:)``), after checking the writer's grant. Returns the
    /// record and the name the grant was made for.
    ///
    /// - Throws: ``CryptoError`` for a record sealed to another identity, of another asset, from a
    ///   writer this library did not approve, or damaged bytes.
    public static func open(asset: UUID, sealedToIdentity sealed: [UInt8], identity: BoxKeyPair) throws -> (
        record: WrappedAssetKey, writer: String
    ) {
        let fixed = 8 + 64 + 2
        guard sealed.count >= fixed + AEAD.nonceLength + AEAD.overhead, let (generation, keyID) = identifiers(of: sealed), generation == 0
        else { throw CryptoError("the wrapped key of asset \(asset) is not a record sealed to the library's identity") }
        let ephemeral = Array(sealed[8..<40])
        let writer = Array(sealed[40..<72])
        let grantLength = Int(sealed[72]) << 8 | Int(sealed[73])
        guard sealed.count >= fixed + grantLength + AEAD.nonceLength + AEAD.overhead else {
            throw CryptoError("the wrapped key of asset \(asset) is cut off")
        }
        let grant = Array(sealed[fixed..<fixed + grantLength])
        guard let grantee = AddOnlyGrant.grantee(of: grant, devicePublicKey: writer, identity: identity) else {
            throw CryptoError("the wrapped key of asset \(asset) comes from a device this library did not approve to add assets")
        }
        let header = Array(sealed.prefix(fixed + grantLength))
        let nonceStart = fixed + grantLength
        let plain: [UInt8]
        do {
            let key = KeyAgreement.key(
                identityLabel,
                [
                    try KeyAgreement.shared(identity.secretKey, ephemeral), try KeyAgreement.shared(identity.secretKey, writer), ephemeral,
                    writer, identity.publicKey,
                ])
            plain = try AEAD.open(
                Array(sealed[(nonceStart + AEAD.nonceLength)...]), key: key,
                nonce: Array(sealed[nonceStart..<nonceStart + AEAD.nonceLength]),
                associatedData: context(asset, keyID, generation: 0) + header)
        } catch {
            throw CryptoError(
                "the wrapped key of asset \(asset) does not open with the library's identity (sealed to another library, another asset's, or damaged)"
            )
        }
        return (try WrappedAssetKey(asset: asset, keyID: keyID, plainRecord: plain), grantee)
    }

    /// Opens a record sealed to one of the ring's identities (the current one, or one a
    /// revocation replaced: records sealed before it stay readable), newest first.
    ///
    /// - Throws: ``CryptoError`` when none of them opens it (see
    ///   ``open(asset:sealedToIdentity:identity:)``).
    public static func open(asset: UUID, sealedToIdentity sealed: [UInt8], ring: KeyRing) throws -> (
        record: WrappedAssetKey, writer: String
    ) {
        var failure: (any Error)?
        for identity in ring.identities.reversed() {
            do { return try open(asset: asset, sealedToIdentity: sealed, identity: identity) } catch { failure = error }
        }
        throw failure ?? CryptoError("the key ring holds no identity")
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
                sealed[(8 + AEAD.nonceLength)...], key: wrappingKey, nonce: sealed[8..<(8 + AEAD.nonceLength)],
                associatedData: Self.context(asset, keyID, generation: generation))
        } catch {
            throw CryptoError(
                "the wrapped key of asset \(asset) does not open with library key \(generation) (another asset's, or damaged)")
        }
        try self.init(asset: asset, keyID: keyID, plainRecord: plain)
    }

    /// Reads the opened bytes of a record (`package` for the fuzz target of key store records).
    package init(asset: UUID, keyID: UInt32, plainRecord plain: [UInt8]) throws {
        var reader = ByteReader(plain)
        try self.init(asset: asset, keyID: keyID, reading: &reader)
        guard reader.isAtEnd else { throw CryptoError("the wrapped key of asset \(asset) is damaged: bytes follow its record") }
    }

    /// Reads a record's key and blob names from `reader` (see ``writePlainRecord(to:)``).
    init(asset: UUID, keyID: UInt32, reading reader: inout ByteReader) throws {
        do {
            let key = try reader.withRaw(count: SecretKey.length) { SecretKey(copying: $0) }
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
