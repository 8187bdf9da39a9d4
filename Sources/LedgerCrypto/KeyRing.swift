import CSodium
import Foundation
import LedgerCore

/// What a key identifier names: its two low bits (the rest is a random 30-bit generation).
public enum KeyKind: UInt32, Sendable, Hashable, CaseIterable {
    /// A generation of the library key: seals album events and purges, wraps asset keys.
    case library = 1
    /// The key of one asset: seals the asset's creation and resources; destroying it shreds them.
    case asset = 2
    /// The key of one asset under one library key generation (``PayloadSeal/assetEpochKey(assetKey:generationKey:)``):
    /// seals the asset's later events (and their resources) while that generation is current,
    /// so a device revoked before it cannot open them even though it holds the asset key. Its
    /// identifier is the generation's with these two low bits: it needs no key of its own.
    case assetEpoch = 3

    /// A new random identifier of this kind: `(random 30 bits << 2) | kind`, never 0.
    public func newIdentifier() -> UInt32 {
        let random = Sodium.random(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return ((random >> 2) | 1) << 2 | rawValue
    }

    /// The kind of `identifier`, or nil for one this build does not know.
    public static func of(_ identifier: UInt32) -> KeyKind? { KeyKind(rawValue: identifier & 3) }

    /// Whether `identifier` names a key of one asset (its own, or its key under a generation):
    /// destroying the asset key shreds what either sealed.
    public static func isAssetKey(_ identifier: UInt32) -> Bool { identifier & 3 >= 2 }

    /// The identifier of an asset's key under library key generation `generation`.
    public static func assetEpoch(generation: UInt32) -> UInt32 { generation & ~3 | KeyKind.assetEpoch.rawValue }

    /// The library key generation an ``assetEpoch`` identifier belongs to.
    public static func generation(ofAssetEpoch identifier: UInt32) -> UInt32 { identifier & ~3 | KeyKind.library.rawValue }
}

/// The keys a library's readers share: the generations of the library key (the last is the
/// current one, which seals new events) and the library's X25519 identities (the last is the
/// current one: devices are enrolled to its public key, short authentication codes are computed
/// from it, and add-only devices seal to it).
///
/// A revocation adds a generation and an identity: a revoked device keeps the identities it
/// held, so what add-only devices seal after the revocation goes to an identity it never had.
/// Older identities stay in the ring to open what was sealed to them before.
public struct KeyRing: Sendable {
    /// The library key generations by identifier, in the order they were made.
    public private(set) var generations: [(id: UInt32, key: SecretKey)]
    /// The library's X25519 identities, in the order they were made; the first is the one the
    /// library was made with (its `library/public` key), the last the current one.
    public private(set) var identities: [BoxKeyPair]

    /// A new ring with one generation.
    public static func generate() -> KeyRing {
        KeyRing(generations: [(KeyKind.library.newIdentifier(), SecretKey())], identities: [BoxKeyPair()])
    }

    init(generations: [(id: UInt32, key: SecretKey)], identities: [BoxKeyPair]) {
        self.generations = generations
        self.identities = identities
    }

    /// The generation that seals new events.
    public var current: (id: UInt32, key: SecretKey) { generations[generations.count - 1] }

    /// The current identity: new devices are enrolled to it, add-only devices seal to it.
    public var identity: BoxKeyPair { identities[identities.count - 1] }

    /// The identity the library was made with: every ring of one library holds it first.
    public var founding: BoxKeyPair { identities[0] }

    /// The generation `id`, or nil when this ring does not hold it.
    public func key(_ id: UInt32) -> SecretKey? { generations.last { $0.id == id }?.key }

    /// The identity whose public key is `publicKey`, or nil when this ring does not hold it.
    public func identity(publicKey: [UInt8]) -> BoxKeyPair? { identities.last { $0.publicKey == publicKey } }

    /// Adds a new generation and makes it current: returns its identifier.
    @discardableResult
    public mutating func rotate() -> UInt32 {
        let id = KeyKind.library.newIdentifier()
        generations.append((id, SecretKey()))
        return id
    }

    /// Adds a new identity and makes it current (a revocation): returns it.
    @discardableResult
    public mutating func rotateIdentity() -> BoxKeyPair {
        let identity = BoxKeyPair()
        identities.append(identity)
        return identity
    }

    /// Adds a generation made elsewhere (a ring merged after a revocation on another device).
    public mutating func add(_ generation: (id: UInt32, key: SecretKey)) {
        guard key(generation.id) == nil else { return }
        generations.append(generation)
    }

    /// Adds an identity made elsewhere (a ring merged after a revocation on another device).
    public mutating func add(identity: BoxKeyPair) {
        guard self.identity(publicKey: identity.publicKey) == nil else { return }
        identities.append(identity)
    }

    /// The ring's bytes. With one identity (a library in which no device was revoked): `01`, the
    /// identity's secret key, the number of generations, then each generation's identifier (4
    /// bytes) and key. With more: `02`, the number of identities and each one's secret key, then
    /// the generations as in `01`.
    public var serialized: [UInt8] {
        var writer = ByteWriter(capacity: 64 + identities.count * 32 + generations.count * 36)
        if identities.count == 1 {
            writer.write(byte: 1)
            writer.write(raw: identity.secretKey.bytes)
        } else {
            writer.write(byte: 2)
            writer.write(varint: UInt64(identities.count))
            for identity in identities { writer.write(raw: identity.secretKey.bytes) }
        }
        writer.write(varint: UInt64(generations.count))
        for (id, key) in generations {
            writer.write(raw: withUnsafeBytes(of: id.bigEndian, Array.init))
            writer.write(raw: key.bytes)
        }
        return writer.bytes
    }

    /// Reads ``serialized`` bytes.
    ///
    /// - Throws: ``CryptoError`` for bytes that are not a key ring.
    public init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            var identities: [BoxKeyPair] = []
            switch try reader.readByte() {
            case 1:
                identities.append(BoxKeyPair(secretKey: try SecretKey(bytes: try reader.readRaw(count: SecretKey.length))))
            case 2:
                let count = try reader.readVarint()
                guard count >= 1, count <= 100_000 else { throw CryptoError("the key ring holds \(count) identities") }
                for _ in 0..<count {
                    identities.append(BoxKeyPair(secretKey: try SecretKey(bytes: try reader.readRaw(count: SecretKey.length))))
                }
            default:
                throw CryptoError("the key ring has a version this build does not read")
            }
            let count = try reader.readVarint()
            guard count >= 1, count <= 100_000 else { throw CryptoError("the key ring holds \(count) generations") }
            var generations: [(UInt32, SecretKey)] = []
            for _ in 0..<count {
                let id = try reader.readRaw(count: 4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                guard KeyKind.of(id) == .library else { throw CryptoError("the key ring holds a key \(id) that is not a library key") }
                generations.append((id, try SecretKey(bytes: try reader.readRaw(count: SecretKey.length))))
            }
            guard reader.isAtEnd else { throw CryptoError("the key ring has trailing bytes") }
            self.init(generations: generations, identities: identities)
        } catch let error as CryptoError {
            throw error
        } catch {
            throw CryptoError("the key ring is damaged: \(error)")
        }
    }

    /// The ring sealed for a device's public key (only that device opens it).
    public func wrapped(for devicePublicKey: [UInt8]) throws -> [UInt8] {
        try SealedBox.seal(serialized, to: devicePublicKey)
    }

    /// Opens a ring sealed for `device`.
    ///
    /// - Throws: ``CryptoError`` when it was sealed for another device or is damaged.
    public init(unwrapping sealed: [UInt8], with device: BoxKeyPair) throws {
        do {
            try self.init(serialized: try SealedBox.open(sealed, with: device))
        } catch {
            throw CryptoError("the library's key ring on the server was not sealed for this device's key, or is damaged")
        }
    }

    static let recoveryContext: [UInt8] = Array("photoledger key ring, recovery v1".utf8)

    /// The ring sealed under a recovery key: a random nonce, then the ciphertext.
    public func wrapped(for recovery: RecoveryKey) -> [UInt8] {
        let (nonce, ciphertext) = AEAD.seal(serialized, key: recovery.key.derive("recovery"), associatedData: Self.recoveryContext)
        return nonce + ciphertext
    }

    /// Opens a ring sealed under a recovery key.
    ///
    /// - Throws: ``CryptoError`` when the recovery key is not this library's, or the bytes are damaged.
    public init(unwrapping sealed: [UInt8], with recovery: RecoveryKey) throws {
        guard sealed.count > AEAD.nonceLength else { throw CryptoError("the recovery copy of the key ring is damaged") }
        let plain: [UInt8]
        do {
            plain = try AEAD.open(
                Array(sealed.dropFirst(AEAD.nonceLength)), key: recovery.key.derive("recovery"),
                nonce: Array(sealed.prefix(AEAD.nonceLength)),
                associatedData: Self.recoveryContext)
        } catch {
            throw CryptoError("this recovery key does not open the library's key ring (is it the key shown when this library was made?)")
        }
        try self.init(serialized: plain)
    }
}

/// A recovery key: 32 random bytes shown once as 56 characters of Crockford base32 in groups of
/// four (the last 3 bytes a checksum, so a mistyped character is caught).
public struct RecoveryKey: Sendable {
    /// The key.
    public let key: SecretKey

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A new random recovery key.
    public static func generate() -> RecoveryKey { RecoveryKey(key: SecretKey()) }

    init(key: SecretKey) { self.key = key }

    /// The key as it is shown and typed: 14 groups of 4 characters.
    public var text: String {
        let bytes = key.bytes + Array(LedgerCore.SHA256.hash(key.bytes).prefix(3))
        var characters: [UInt8] = []
        var buffer = 0, bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                characters.append(Self.alphabet[(buffer >> bits) & 31])
            }
            buffer &= (1 << bits) - 1
        }
        var groups: [String] = []
        var index = 0
        while index < characters.count {
            groups.append(String(decoding: characters[index..<min(index + 4, characters.count)], as: UTF8.self))
            index += 4
        }
        return groups.joined(separator: "-")
    }

    /// Reads a recovery key as ``text`` shows it: case, spaces and dashes do not matter, and O, I
    /// and L read as 0, 1 and 1.
    ///
    /// - Throws: ``CryptoError`` saying what is wrong with it.
    public init(text: String) throws {
        var values: [Int] = []
        for character in text.uppercased() {
            if character == "-" || character == " " { continue }
            let normalized: Character = character == "O" ? "0" : (character == "I" || character == "L") ? "1" : character
            guard let ascii = normalized.asciiValue, let value = Self.alphabet.firstIndex(of: ascii) else {
                throw CryptoError(
                    "the recovery key contains '\(character)', which is not one of its characters (0-9, A-Z without I, L, O, U)")
            }
            values.append(value)
        }
        guard values.count == 56 else {
            throw CryptoError("the recovery key has \(values.count) characters, not 56 (14 groups of 4); check that it was copied whole")
        }
        var bytes: [UInt8] = []
        var buffer = 0, bits = 0
        for value in values {
            buffer = buffer << 5 | value
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((buffer >> bits) & 0xFF))
            }
            buffer &= (1 << bits) - 1
        }
        let key = Array(bytes.prefix(32))
        guard bytes.count == 35, Array(LedgerCore.SHA256.hash(key).prefix(3)) == Array(bytes.suffix(3)) else {
            throw CryptoError("the recovery key's checksum does not match: a character is mistyped")
        }
        self.key = try SecretKey(bytes: key)
    }
}

/// The short authentication code two devices show while one enrols the other: computed from the
/// library's identity public key and the new device's public key, so a server that substituted
/// either key makes the two screens disagree.
public enum ShortAuthenticationCode {
    /// Eight digits in two groups of four, such as `4821 0937`. An add-only device (one that may
    /// add assets but never read the library) has a code of its own for the same keys, so a
    /// server that passed its key off as a reader's makes the two screens disagree.
    public static func code(libraryPublicKey: [UInt8], devicePublicKey: [UInt8], addOnly: Bool = false) -> String {
        let label = addOnly ? "photoledger add-only enrolment v1" : "photoledger enrolment v1"
        let digest = LedgerCore.SHA256.hash(Array(label.utf8) + libraryPublicKey + devicePublicKey)
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000_000
        let digits = String(value).leftPadded(to: 8)
        return "\(digits.prefix(4)) \(digits.suffix(4))"
    }
}

/// The approval of an add-only device: an authenticated box from the library's identity to the
/// device's public key, naming both keys and the device, with a tag that only holders of the
/// identity's secret key can compute. The device takes it as proof that a holder of the library's
/// identity approved it after comparing codes (no one else can make a box that opens with that
/// identity's public key and its own secret key), and from then on seals the keys of the assets
/// it adds to that identity's public key (``WrappedAssetKey``'s
/// ``WrappedAssetKey/sealed(toIdentity:writer:grant:)``); it never receives the ring. Readers
/// check the tag of the grant carried by such a record before they take the key: the box alone
/// would not do for them, since the device itself can make a box between the two keys.
public enum AddOnlyGrant {
    static let label = Array("photoledger add-only grant v1".utf8)
    static let tagLength = 32

    static func tag(identity: BoxKeyPair, devicePublicKey: [UInt8], device: String) -> [UInt8] {
        KeyedHash.hash(label + identity.publicKey + devicePublicKey + Array(device.utf8), key: identity.secretKey.derive("grant001"))
    }

    /// The grant for `device`, whose public key is `devicePublicKey`, made with the library's identity.
    public static func make(identity: BoxKeyPair, devicePublicKey: [UInt8], device: String) throws -> [UInt8] {
        let message =
            label + identity.publicKey + devicePublicKey + tag(identity: identity, devicePublicKey: devicePublicKey, device: device)
            + Array(device.utf8)
        return try AuthenticatedBox.seal(message, to: devicePublicKey, from: identity)
    }

    /// The name in `message` when it starts with the label and these keys.
    private static func parse(_ message: [UInt8], libraryPublicKey: [UInt8], devicePublicKey: [UInt8]) -> (tag: [UInt8], name: String)? {
        let prefix = label + libraryPublicKey + devicePublicKey
        guard message.count >= prefix.count + tagLength, Array(message.prefix(prefix.count)) == prefix else { return nil }
        let tag = Array(message[prefix.count..<prefix.count + tagLength])
        return (tag, String(decoding: message.dropFirst(prefix.count + tagLength), as: UTF8.self))
    }

    /// Whether `grant` approves this device (`name`, the holder of `keyPair`) for the identity
    /// `libraryPublicKey`, as the device checks it.
    public static func isValid(_ grant: [UInt8], libraryPublicKey: [UInt8], device keyPair: BoxKeyPair, device name: String) -> Bool {
        guard let opened = try? AuthenticatedBox.open(grant, from: libraryPublicKey, with: keyPair),
            let parsed = parse(opened, libraryPublicKey: libraryPublicKey, devicePublicKey: keyPair.publicKey)
        else { return false }
        return parsed.name == name
    }

    /// The name of the device `grant` approves, when `identity` (this library's) made it for the
    /// device whose public key is `devicePublicKey`, as a reader checks it; nil otherwise.
    public static func grantee(of grant: [UInt8], devicePublicKey: [UInt8], identity: BoxKeyPair) -> String? {
        guard let opened = try? AuthenticatedBox.open(grant, from: devicePublicKey, with: identity),
            let parsed = parse(opened, libraryPublicKey: identity.publicKey, devicePublicKey: devicePublicKey),
            parsed.tag == tag(identity: identity, devicePublicKey: devicePublicKey, device: parsed.name)
        else { return nil }
        return parsed.name
    }

    static let renewalMagic = Array("PLGR".utf8)
    static let endorsementLabel = Array("photoledger identity rotation v1".utf8)

    /// The grant of an add-only device carried over to a new current identity (after a
    /// revocation rotated it): the grant made with `identity`, after one endorsement from each
    /// of the `older` identities: an authenticated box from that identity to the device, naming
    /// that identity, the new one and the device's key. The device trusts only the identity it
    /// was approved by (or last moved to), and learns the new one from the endorsement that
    /// identity made (``accept(_:trusted:device:device:)``).
    ///
    /// Layout: `PLGR`, the number of endorsements (2 bytes), each endorsement's length (2 bytes)
    /// and bytes, then the grant.
    public static func renewed(identity: BoxKeyPair, older: [BoxKeyPair], devicePublicKey: [UInt8], device: String) throws -> [UInt8] {
        let grant = try make(identity: identity, devicePublicKey: devicePublicKey, device: device)
        guard !older.isEmpty else { return grant }
        guard older.count <= Int(UInt16.max) else { throw CryptoError("too many identities to endorse a new one") }
        var renewed = renewalMagic + withUnsafeBytes(of: UInt16(older.count).bigEndian, Array.init)
        for old in older {
            let endorsement = try AuthenticatedBox.seal(
                endorsementLabel + old.publicKey + identity.publicKey + devicePublicKey, to: devicePublicKey, from: old)
            renewed += withUnsafeBytes(of: UInt16(endorsement.count).bigEndian, Array.init) + endorsement
        }
        return renewed + grant
    }

    /// What an add-only device takes from the grant entry the server holds for it: the identity
    /// it seals to from now on and the grant its records carry. `entry` is either a grant from
    /// `trusted` (the identity it was approved by, or last moved to), or a renewal
    /// (``renewed(identity:older:devicePublicKey:device:)``) whose endorsement from `trusted`
    /// names the new identity, followed by a grant from that identity. Nil for anything else
    /// (a key the server substituted, another device's grant, damaged bytes).
    public static func accept(_ entry: [UInt8], trusted: [UInt8], device keyPair: BoxKeyPair, device name: String) -> (
        libraryPublicKey: [UInt8], grant: [UInt8]
    )? {
        if isValid(entry, libraryPublicKey: trusted, device: keyPair, device: name) { return (trusted, entry) }
        guard let (endorsements, grant) = parseRenewal(entry) else { return nil }
        if isValid(grant, libraryPublicKey: trusted, device: keyPair, device: name) { return (trusted, grant) }
        let prefix = endorsementLabel + trusted
        for endorsement in endorsements {
            guard let message = try? AuthenticatedBox.open(endorsement, from: trusted, with: keyPair),
                message.count == prefix.count + 64, message.starts(with: prefix), message.suffix(32).elementsEqual(keyPair.publicKey)
            else { continue }
            let endorsed = Array(message[prefix.count..<prefix.count + 32])
            return isValid(grant, libraryPublicKey: endorsed, device: keyPair, device: name) ? (endorsed, grant) : nil
        }
        return nil
    }

    /// The grant in a grant entry: the entry itself, or the grant after a renewal's endorsements.
    public static func grant(in entry: [UInt8]) -> [UInt8] { parseRenewal(entry)?.grant ?? entry }

    /// The endorsements and the grant of a renewal, or nil for bytes that are not one.
    private static func parseRenewal(_ entry: [UInt8]) -> (endorsements: [[UInt8]], grant: [UInt8])? {
        guard entry.count > 6, entry.starts(with: renewalMagic) else { return nil }
        let count = Int(entry[4]) << 8 | Int(entry[5])
        var offset = 6
        var endorsements: [[UInt8]] = []
        for _ in 0..<count {
            guard entry.count >= offset + 2 else { return nil }
            let length = Int(entry[offset]) << 8 | Int(entry[offset + 1])
            offset += 2
            guard entry.count >= offset + length else { return nil }
            endorsements.append(Array(entry[offset..<offset + length]))
            offset += length
        }
        return (endorsements, Array(entry[offset...]))
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
