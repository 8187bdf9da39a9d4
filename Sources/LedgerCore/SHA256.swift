import CCrypto

/// The SHA-256 implementation, fetched from libcrypto's provider once. (`EVP_sha256()` makes
/// OpenSSL 3 look the implementation up again at every digest start, which costs as much as
/// hashing a few hundred bytes.)
nonisolated(unsafe) private let sha256Algorithm: OpaquePointer = {
    guard let algorithm = EVP_MD_fetch(nil, "SHA2-256", nil) else {
        fatalError("libcrypto has no SHA-256 implementation")
    }
    return algorithm
}()

/// SHA-256 through OpenSSL's libcrypto, one-shot or streaming.
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    /// Starts a new digest.
    public init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, sha256Algorithm, nil) == 1 else {
            fatalError("libcrypto could not start a SHA-256 digest (out of memory)")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Finishes the digest and returns its 32 bytes.
    public consuming func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        digest.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        return digest
    }

    /// Finishes the digest, returns its 32 bytes, and starts a new digest on the same context.
    public mutating func finalizeAndReset() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        digest.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        EVP_DigestInit_ex(context, sha256Algorithm, nil)
        return digest
    }

    /// Finishes the digest into `digest` (made 32 bytes long when it is not), and starts a new
    /// digest on the same context: for a loop that hashes many values without allocating.
    public mutating func finalizeAndReset(into digest: inout [UInt8]) {
        if digest.count != 32 { digest = [UInt8](repeating: 0, count: 32) }
        var length: UInt32 = 0
        digest.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        EVP_DigestInit_ex(context, sha256Algorithm, nil)
    }

    /// The SHA-256 of `bytes`.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        digest.withUnsafeMutableBufferPointer { output in
            var length: UInt32 = 0
            _ = EVP_Digest(bytes.baseAddress, bytes.count, output.baseAddress, &length, sha256Algorithm, nil)
        }
        return digest
    }

    /// The SHA-256 of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }
}

/// Lowercase hexadecimal text of bytes, and back.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// The bytes as lowercase hex.
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of hex text, or nil when it is not an even number of hex digits.
    public static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Compares two byte arrays in time that depends only on their lengths (for secrets).
public func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
    return difference == 0
}
