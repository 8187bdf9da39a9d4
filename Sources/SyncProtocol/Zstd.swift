import CZstd

/// A Zstandard frame that could not be compressed or decompressed.
public struct ZstdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    public var description: String { "zstd: \(message)" }
}

/// Zstandard compression of response bodies (`Content-Encoding: zstd`, RFC 8878): at its fastest
/// level it compresses JSON pages several times faster than gzip's fastest level, smaller, and
/// decompresses about ten times faster. libcurl decodes it transparently for clients that
/// advertise it; gzip stays for every other client.
public enum Zstd {
    /// Compresses `bytes` into one frame that records its content size (level 1 is fast; up to 19).
    public static func compress(_ bytes: [UInt8], level: Int32 = 1) throws -> [UInt8] {
        let bound = ZSTD_compressBound(bytes.count)
        var failure: Int?
        let output = [UInt8](unsafeUninitializedCapacity: bound) { buffer, initialized in
            let written = bytes.withUnsafeBytes { input in
                ZSTD_compress(buffer.baseAddress, bound, input.baseAddress, input.count, level)
            }
            if ZSTD_isError(written) != 0 {
                failure = written
                initialized = 0
            } else {
                initialized = written
            }
        }
        if let failure { throw ZstdError(String(cString: ZSTD_getErrorName(failure))) }
        return output
    }

    /// Whether `bytes` start with the Zstandard frame magic number.
    public static func isZstd(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && bytes[0] == 0x28 && bytes[1] == 0xB5 && bytes[2] == 0x2F && bytes[3] == 0xFD
    }

    /// Decompresses one or more frames; throws when the output would exceed `limit` bytes or the
    /// data is not valid Zstandard.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws -> [UInt8] {
        guard let stream = ZSTD_createDStream() else { throw ZstdError("out of memory") }
        defer { ZSTD_freeDStream(stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 128 * 1024)
        try bytes.withUnsafeBytes { source in
            var input = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
            var last = 0
            repeat {
                let produced = try chunk.withUnsafeMutableBytes { target -> Int in
                    var out = ZSTD_outBuffer(dst: target.baseAddress, size: target.count, pos: 0)
                    last = ZSTD_decompressStream(stream, &out, &input)
                    if ZSTD_isError(last) != 0 { throw ZstdError(String(cString: ZSTD_getErrorName(last))) }
                    return out.pos
                }
                guard output.count + produced <= limit else {
                    throw ZstdError("the decompressed data is larger than the limit of \(limit) bytes")
                }
                output.append(contentsOf: chunk[0..<produced])
                if produced == 0 && input.pos == input.size && last != 0 { throw ZstdError("the data is truncated") }
            } while input.pos < input.size || last != 0
        }
        return output
    }
}
