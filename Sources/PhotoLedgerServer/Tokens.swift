import Foundation
import LedgerCore

/// Device tokens: 32 random bytes from the system, shown once as `plt_<base64url>`, stored only
/// as their SHA-256.
public enum DeviceToken {
    /// The prefix of every token, so that leaked tokens are easy to recognise and scan for.
    public static let prefix = "plt_"

    /// A new random token.
    ///
    /// - Throws: ``ServerStoreError`` when the system's random source cannot be read.
    public static func generate() throws -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let source = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        defer { if source >= 0 { close(source) } }
        let count = source < 0 ? -1 : bytes.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
        guard count == 32 else { throw ServerStoreError("cannot read random bytes from the system (/dev/urandom)") }
        return prefix + base64URL(bytes)
    }

    /// The SHA-256 under which a token is stored and looked up.
    public static func hash(_ token: String) -> [UInt8] { SHA256.hash(Array(token.utf8)) }

    /// The token carried by an `Authorization` header value (`Bearer <token>`), or nil.
    public static func bearer(from header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
