import Foundation
import LedgerCore

/// Encryption of resource files in chunks, streamed from file to file, so a large video never
/// sits whole in memory.
///
/// Layout: the magic `PLE1`, the chunk size (4 bytes, big-endian), then each chunk sealed with
/// XChaCha20-Poly1305 (its 24-byte nonce, then the ciphertext and tag). The associated data of a chunk is its index (8 bytes) and whether it is
/// the last one (1 byte), so chunks cannot be reordered, dropped or cut off at a chunk boundary.
///
/// The nonces are not random: each is the keyed hash of the plaintext's content identifier
/// (its SHA-256) and the chunk's index, under a subkey of the resource key. Encrypting the same
/// bytes under the same key therefore gives the same ciphertext (an upload that is retried or
/// repeated names the same blob), while two different plaintexts never share a nonce (their
/// content identifiers differ). Nothing but equality of whole files under one key is revealed.
public enum ResourceCipher {
    /// The plaintext bytes in one chunk.
    public static let chunkSize = 256 * 1024
    static let magic: [UInt8] = Array("PLE1".utf8)
    static let headerLength = 8

    /// The size of the encryption of `plaintextSize` bytes.
    public static func encryptedSize(of plaintextSize: Int64) -> Int64 {
        let chunks = max(1, (plaintextSize + Int64(chunkSize) - 1) / Int64(chunkSize))
        return Int64(headerLength) + plaintextSize + chunks * Int64(AEAD.nonceLength + AEAD.overhead)
    }

    /// Encrypts the file at `source` into `destination` with `key`; `contentID` is the
    /// plaintext's SHA-256. Returns the SHA-256 of the written ciphertext and its size.
    ///
    /// - Throws: ``CryptoError`` when a file cannot be read or written.
    public static func encrypt(fileAt source: URL, to destination: URL, key: SecretKey, contentID: [UInt8]) throws -> (
        sha256: [UInt8], size: Int64
    ) {
        let input = try open(source, forWriting: false)
        defer { fclose(input) }
        let output = try open(destination, forWriting: true)
        var closed = false
        defer { if !closed { fclose(output) } }
        let nonceKey = key.derive("rsnonce1")
        let sealKey = key.derive("rsseal01")
        var digest = SHA256()
        var written: Int64 = 0
        func emit(_ bytes: [UInt8]) throws {
            guard fwrite(bytes, 1, bytes.count, output) == bytes.count else {
                throw CryptoError("could not write the encrypted file \(destination.path): \(String(cString: strerror(errno)))")
            }
            digest.update(bytes)
            written += Int64(bytes.count)
        }
        var header = magic
        header += withUnsafeBytes(of: UInt32(chunkSize).bigEndian, Array.init)
        try emit(header)
        var current = try read(input, source)
        var index: UInt64 = 0
        while true {
            let next = current.count == chunkSize ? try read(input, source) : []
            let last = next.isEmpty
            let associated = chunkAssociatedData(index: index, last: last)
            let nonce = Array(KeyedHash.hash(contentID + associated, key: nonceKey).prefix(AEAD.nonceLength))
            try emit(nonce + AEAD.seal(current, key: sealKey, nonce: nonce, associatedData: associated))
            if last { break }
            current = next
            index += 1
        }
        closed = true
        guard fclose(output) == 0 else { throw CryptoError("could not write the encrypted file \(destination.path)") }
        return (digest.finalizeAndReset(), written)
    }

    /// Decrypts what ``encrypt(fileAt:to:key:contentID:)`` wrote. Returns the SHA-256 of the
    /// plaintext written.
    ///
    /// - Throws: ``CryptoError`` for a wrong key, damaged, reordered or truncated ciphertext (the
    ///   destination is removed then), or a file that cannot be read or written.
    public static func decrypt(fileAt source: URL, to destination: URL, key: SecretKey) throws -> [UInt8] {
        let input = try open(source, forWriting: false)
        defer { fclose(input) }
        let output = try open(destination, forWriting: true)
        var succeeded = false
        defer {
            fclose(output)
            if !succeeded { try? FileManager.default.removeItem(at: destination) }
        }
        var header = [UInt8](repeating: 0, count: headerLength)
        guard fread(&header, 1, headerLength, input) == headerLength, Array(header.prefix(4)) == magic else {
            throw CryptoError("\(source.lastPathComponent) is not an encrypted resource (no PLE1 header)")
        }
        let size = header[4...].reduce(0) { $0 << 8 | Int($1) }
        guard size > 0, size <= 64 << 20 else { throw CryptoError("\(source.lastPathComponent) names a chunk size of \(size) bytes") }
        let sealKey = key.derive("rsseal01")
        var digest = SHA256()
        let sealedChunk = AEAD.nonceLength + size + AEAD.overhead
        var current = try read(input, source, count: sealedChunk)
        var index: UInt64 = 0
        while true {
            let next = current.count == sealedChunk ? try read(input, source, count: sealedChunk) : []
            let last = next.isEmpty
            let associated = chunkAssociatedData(index: index, last: last)
            let plain = try openChunk(current, key: sealKey, associatedData: associated, index: index)
            guard fwrite(plain, 1, plain.count, output) == plain.count else {
                throw CryptoError("could not write \(destination.path): \(String(cString: strerror(errno)))")
            }
            digest.update(plain)
            if last { break }
            current = next
            index += 1
        }
        succeeded = true
        return digest.finalize()
    }

    static func chunkAssociatedData(index: UInt64, last: Bool) -> [UInt8] {
        withUnsafeBytes(of: index.bigEndian, Array.init) + [last ? 1 : 0]
    }

    /// Opens one chunk: its nonce, then its ciphertext and tag.
    private static func openChunk(_ sealed: [UInt8], key: SecretKey, associatedData: [UInt8], index: UInt64) throws -> [UInt8] {
        guard sealed.count >= AEAD.nonceLength + AEAD.overhead else {
            throw CryptoError("the encrypted resource is cut off in chunk \(index)")
        }
        let nonce = Array(sealed.prefix(AEAD.nonceLength))
        do {
            return try AEAD.open(Array(sealed.dropFirst(AEAD.nonceLength)), key: key, nonce: nonce, associatedData: associatedData)
        } catch {
            throw CryptoError("chunk \(index) of the encrypted resource does not open with this key (a wrong key, or damaged bytes)")
        }
    }

    private static func open(_ url: URL, forWriting: Bool) throws -> UnsafeMutablePointer<FILE> {
        guard let file = fopen(url.path, forWriting ? "wb" : "rb") else {
            throw CryptoError("could not open \(url.path): \(String(cString: strerror(errno)))")
        }
        return file
    }

    private static func read(_ file: UnsafeMutablePointer<FILE>, _ url: URL, count: Int = chunkSize) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = fread(&buffer, 1, count, file)
        if got < count && ferror(file) != 0 { throw CryptoError("could not read \(url.path): \(String(cString: strerror(errno)))") }
        buffer.removeSubrange(got...)
        return buffer
    }
}
