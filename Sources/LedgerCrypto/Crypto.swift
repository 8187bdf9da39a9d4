import CSodium
import Foundation
import LedgerCore
import Synchronization

/// A failure of a cryptographic operation: a wrong, missing or damaged key, or damaged
/// ciphertext. Opening never says which, so nothing is learned from the failure itself.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What could not be done.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// libsodium, initialized once before first use.
enum Sodium {
    static let ready: Bool = sodium_init() >= 0

    static func require() {
        precondition(ready, "libsodium could not initialize (no source of randomness)")
    }

    /// `count` random bytes from the system's source. Small requests (nonces, key identifiers)
    /// are served from a pool filled 4 KiB at a time, so sealing each event costs no system call;
    /// every byte is handed out once.
    static func random(_ count: Int) -> [UInt8] {
        require()
        guard count <= 64 else {
            var bytes = [UInt8](repeating: 0, count: count)
            randombytes_buf(&bytes, count)
            return bytes
        }
        return pool.withLock { pool in
            if pool.used + count > pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
                pool.used = 0
            }
            defer {
                pool.bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress! + pool.used, count) }
                pool.used += count
            }
            return Array(pool.bytes[pool.used..<pool.used + count])
        }
    }

    private static let pool = Mutex((bytes: [UInt8](repeating: 0, count: 4096), used: 4096))
}

/// A 32-byte secret key. Its bytes are wiped when the key is released.
///
/// They are not locked against swapping one key at a time: an encrypted library holds a key per
/// asset, and locking each costs several system calls (a large pull took twice as long). Keep
/// swap encrypted at the system level.
public final class SecretKey: Sendable, Equatable {
    /// The length of every secret key, in bytes.
    public static let length = 32

    // Safe to share: the bytes are written once, in init, and only read afterwards; freed in deinit.
    nonisolated(unsafe) private let storage: UnsafeMutableRawBufferPointer

    /// A new random key.
    public convenience init() {
        Sodium.require()
        self.init(unchecked: Sodium.random(Self.length))
    }

    /// A key with these bytes.
    ///
    /// - Throws: ``CryptoError`` when there are not exactly 32 of them.
    public convenience init(bytes: [UInt8]) throws {
        guard bytes.count == Self.length else { throw CryptoError("a key has \(Self.length) bytes, not \(bytes.count)") }
        self.init(unchecked: bytes)
    }

    private init(unchecked bytes: [UInt8]) {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.length, alignment: 16)
        storage.copyBytes(from: bytes)
    }

    /// A key with the 32 bytes at `bytes` (copied; the caller wipes its own copy).
    init(copying bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == Self.length, "a key has \(Self.length) bytes")
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.length, alignment: 16)
        storage.copyMemory(from: bytes)
    }

    deinit {
        sodium_memzero(storage.baseAddress!, Self.length)
        storage.deallocate()
    }

    /// The key's bytes (to wrap it, or store it where the device keeps its keys).
    public var bytes: [UInt8] { Array(storage) }

    func withBytes<T>(_ body: (UnsafePointer<UInt8>) throws -> T) rethrows -> T {
        try body(storage.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// A subkey for one purpose: `context` is 8 characters naming the purpose, `id` tells
    /// subkeys of one purpose apart (libsodium's `crypto_kdf`).
    public func derive(_ context: StaticString, id: UInt64 = 0) -> SecretKey {
        withDerived(context, id: id) { SecretKey(copying: UnsafeRawBufferPointer(start: $0, count: Self.length)) }
    }

    /// Lends the subkey ``derive(_:id:)`` makes to `body`, derived into a temporary buffer that
    /// is wiped afterwards: a key used once (an asset's payload key, opening its creation)
    /// costs no allocation.
    func withDerived<T>(_ context: StaticString, id: UInt64 = 0, _ body: (UnsafePointer<UInt8>) throws -> T) rethrows -> T {
        precondition(context.utf8CodeUnitCount == 8 && context.hasPointerRepresentation, "a key derivation context has 8 characters")
        let name = UnsafeRawPointer(context.utf8Start).assumingMemoryBound(to: CChar.self)
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.length) { subkey in
            defer { sodium_memzero(subkey.baseAddress!, Self.length) }
            withBytes { key in _ = crypto_kdf_derive_from_key(subkey.baseAddress!, Self.length, id, name, key) }
            return try body(UnsafePointer(subkey.baseAddress!))
        }
    }

    /// Constant-time comparison.
    public static func == (lhs: SecretKey, rhs: SecretKey) -> Bool {
        lhs.withBytes { a in rhs.withBytes { b in sodium_memcmp(a, b, length) == 0 } }
    }
}

/// Authenticated encryption with associated data: XChaCha20-Poly1305 (IETF). The 24-byte nonce
/// is random, so nonces never repeat under one key in practice.
public enum AEAD {
    /// The nonce length, in bytes.
    public static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    /// What sealing adds to the plaintext's length, in bytes.
    public static let overhead = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// Seals `plaintext` with `key`, binding `associatedData` (which travels in the clear): a
    /// random nonce and the ciphertext.
    public static func seal(_ plaintext: [UInt8], key: SecretKey, associatedData: [UInt8] = []) -> (nonce: [UInt8], ciphertext: [UInt8]) {
        let nonce = Sodium.random(nonceLength)
        return (nonce, seal(plaintext, key: key, nonce: nonce, associatedData: associatedData))
    }

    /// Seals with a given nonce (it must never repeat under `key`).
    public static func seal(_ plaintext: [UInt8], key: SecretKey, nonce: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        precondition(nonce.count == nonceLength, "an XChaCha20-Poly1305 nonce has \(nonceLength) bytes")
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + overhead)
        var length: UInt64 = 0
        key.withBytes { key in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &ciphertext, &length, plaintext, UInt64(plaintext.count), associatedData, UInt64(associatedData.count), nil, nonce, key)
        }
        return ciphertext
    }

    /// Opens what ``seal(_:key:associatedData:)`` sealed.
    ///
    /// - Throws: ``CryptoError`` for a wrong key, a wrong nonce or associated data, or damaged
    ///   ciphertext.
    public static func open(_ ciphertext: [UInt8], key: SecretKey, nonce: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        try open(ciphertext[...], key: key, nonce: nonce[...], associatedData: associatedData)
    }

    /// Opens `ciphertext` sealed with `nonce`, both parts of larger buffers (read in place, not
    /// copied).
    ///
    /// - Throws: ``CryptoError`` when the key, nonce or associated data do not match, or the
    ///   bytes were altered.
    public static func open(_ ciphertext: ArraySlice<UInt8>, key: SecretKey, nonce: ArraySlice<UInt8>, associatedData: [UInt8] = [])
        throws -> [UInt8]
    {
        try key.withBytes { key in
            try ciphertext.withUnsafeBytes { ciphertext in
                try nonce.withUnsafeBytes { nonce in
                    try associatedData.withUnsafeBytes { associatedData in
                        try open(ciphertext, key: key, nonce: nonce, associatedData: associatedData)
                    }
                }
            }
        }
    }

    /// Opens `ciphertext` with the 32 key bytes at `key`, every input read in place.
    ///
    /// - Throws: ``CryptoError`` when the key, nonce or associated data do not match, or the
    ///   bytes were altered.
    static func open(
        _ ciphertext: UnsafeRawBufferPointer, key: UnsafePointer<UInt8>, nonce: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer
    ) throws -> [UInt8] {
        guard nonce.count == nonceLength, ciphertext.count >= overhead else { throw CryptoError("the sealed bytes are malformed") }
        var opened = false
        // At least one byte of capacity: an empty plaintext still gets a buffer to point to.
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(1, ciphertext.count - overhead)) { plaintext, initialized in
            var length: UInt64 = 0
            let result = crypto_aead_xchacha20poly1305_ietf_decrypt(
                plaintext.baseAddress, &length, nil, ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self),
                UInt64(ciphertext.count), associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                nonce.baseAddress!.assumingMemoryBound(to: UInt8.self), key)
            opened = result == 0
            initialized = opened ? Int(length) : 0
        }
        guard opened else { throw CryptoError("the sealed bytes do not open with this key") }
        return plaintext
    }
}

/// An X25519 key pair: anyone may seal to its public key; only the holder of the secret key opens.
public final class BoxKeyPair: Sendable {
    /// The public key, 32 bytes.
    public let publicKey: [UInt8]
    /// The secret key.
    public let secretKey: SecretKey

    /// A new random key pair.
    public init() {
        Sodium.require()
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        var secret = [UInt8](repeating: 0, count: Int(crypto_box_SECRETKEYBYTES))
        crypto_box_keypair(&publicKey, &secret)
        self.publicKey = publicKey
        self.secretKey = try! SecretKey(bytes: secret)  // crypto_box_SECRETKEYBYTES is SecretKey.length
        sodium_memzero(&secret, secret.count)
    }

    /// The key pair of a stored secret key (its public key is computed from it).
    public init(secretKey: SecretKey) {
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        secretKey.withBytes { _ = crypto_scalarmult_base(&publicKey, $0) }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}

/// Anonymous sealed boxes (X25519 + XSalsa20-Poly1305): a message only the holder of a public
/// key's secret key can open, from a sender who cannot open it again.
public enum SealedBox {
    /// What sealing adds to the message's length, in bytes.
    public static let overhead = Int(crypto_box_sealbytes())

    /// Seals `message` to `publicKey`.
    public static func seal(_ message: [UInt8], to publicKey: [UInt8]) throws -> [UInt8] {
        Sodium.require()
        guard publicKey.count == Int(crypto_box_PUBLICKEYBYTES) else { throw CryptoError("a public key has 32 bytes") }
        var sealed = [UInt8](repeating: 0, count: message.count + overhead)
        guard crypto_box_seal(&sealed, message, UInt64(message.count), publicKey) == 0 else {
            throw CryptoError("the message could not be sealed")
        }
        return sealed
    }

    /// Opens a sealed box with `keyPair`.
    ///
    /// - Throws: ``CryptoError`` when it was sealed to another key, or is damaged.
    public static func open(_ sealed: [UInt8], with keyPair: BoxKeyPair) throws -> [UInt8] {
        guard sealed.count >= overhead else { throw CryptoError("the sealed box is malformed") }
        var message = [UInt8](repeating: 0, count: sealed.count - overhead)
        let result = keyPair.secretKey.withBytes { secret in
            crypto_box_seal_open(&message, sealed, UInt64(sealed.count), keyPair.publicKey, secret)
        }
        guard result == 0 else { throw CryptoError("the sealed box does not open with this key") }
        return message
    }
}

/// Keyed hashing (BLAKE2b): names that only holders of the key can compute or recognise.
public enum KeyedHash {
    /// The 32-byte keyed hash of `message`.
    public static func hash(_ message: [UInt8], key: SecretKey) -> [UInt8] {
        Sodium.require()
        var output = [UInt8](repeating: 0, count: 32)
        key.withBytes { key in _ = crypto_generichash(&output, 32, message, UInt64(message.count), key, SecretKey.length) }
        return output
    }
}

/// Authenticated boxes (X25519 + XSalsa20-Poly1305, libsodium's `crypto_box_easy`): a message
/// from the holder of one key pair to the holder of another. Opening proves that it was sealed
/// by the holder of the sender's secret key (or by the recipient itself).
public enum AuthenticatedBox {
    static let nonceLength = Int(crypto_box_NONCEBYTES)

    /// Seals `message` from `sender` to `recipientPublicKey`: a random nonce, then the ciphertext.
    ///
    /// - Throws: ``CryptoError`` for a public key that is not 32 bytes or a degenerate one.
    public static func seal(_ message: [UInt8], to recipientPublicKey: [UInt8], from sender: BoxKeyPair) throws -> [UInt8] {
        Sodium.require()
        guard recipientPublicKey.count == Int(crypto_box_PUBLICKEYBYTES) else { throw CryptoError("a public key has 32 bytes") }
        let nonce = Sodium.random(nonceLength)
        var sealed = [UInt8](repeating: 0, count: message.count + Int(crypto_box_MACBYTES))
        let result = sender.secretKey.withBytes { secret in
            crypto_box_easy(&sealed, message, UInt64(message.count), nonce, recipientPublicKey, secret)
        }
        guard result == 0 else { throw CryptoError("the message could not be sealed for this public key") }
        return nonce + sealed
    }

    /// Opens what `senderPublicKey`'s holder sealed for `recipient`.
    ///
    /// - Throws: ``CryptoError`` when another key sealed it, it was sealed for another key, or it is damaged.
    public static func open(_ sealed: [UInt8], from senderPublicKey: [UInt8], with recipient: BoxKeyPair) throws -> [UInt8] {
        guard senderPublicKey.count == Int(crypto_box_PUBLICKEYBYTES), sealed.count >= nonceLength + Int(crypto_box_MACBYTES) else {
            throw CryptoError("the authenticated box is malformed")
        }
        var message = [UInt8](repeating: 0, count: sealed.count - nonceLength - Int(crypto_box_MACBYTES))
        let nonce = Array(sealed.prefix(nonceLength))
        let ciphertext = Array(sealed.dropFirst(nonceLength))
        let result = recipient.secretKey.withBytes { secret in
            crypto_box_open_easy(&message, ciphertext, UInt64(ciphertext.count), nonce, senderPublicKey, secret)
        }
        guard result == 0 else { throw CryptoError("the authenticated box does not open with these keys") }
        return message
    }
}

/// X25519 key agreement: the secret shared by a secret key and another party's public key.
public enum KeyAgreement {
    /// The 32 bytes X25519 gives for `secret` and `publicKey`.
    ///
    /// - Throws: ``CryptoError`` for a public key that is not 32 bytes, or one of low order (the
    ///   shared secret would be all zero).
    public static func shared(_ secret: SecretKey, _ publicKey: [UInt8]) throws -> [UInt8] {
        Sodium.require()
        guard publicKey.count == Int(crypto_scalarmult_BYTES) else { throw CryptoError("a public key has 32 bytes") }
        var shared = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
        let result = secret.withBytes { crypto_scalarmult(&shared, $0, publicKey) }
        guard result == 0 else { throw CryptoError("the public key is not usable for key agreement (low order)") }
        return shared
    }

    /// A 32-byte key hashed (BLAKE2b) from `parts`, in order, each with its length, under the
    /// label `context` (so keys made for different purposes never coincide).
    public static func key(_ context: String, _ parts: [[UInt8]]) -> SecretKey {
        Sodium.require()
        var input = Array(context.utf8)
        for part in parts {
            input += withUnsafeBytes(of: UInt32(part.count).bigEndian, Array.init)
            input += part
        }
        var output = [UInt8](repeating: 0, count: SecretKey.length)
        _ = crypto_generichash(&output, SecretKey.length, input, UInt64(input.count), nil, 0)
        sodium_memzero(&input, input.count)
        let key = try! SecretKey(bytes: output)  // SecretKey.length bytes
        sodium_memzero(&output, output.count)
        return key
    }
}
