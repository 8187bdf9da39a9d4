import CZlib

/// A gzip stream that could not be compressed or decompressed.
public struct GzipError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Equatable {
        /// The data is not a gzip (or zlib) stream, or is damaged.
        case invalidData(String)
        /// The stream ends before its end marker.
        case truncated
        /// The decompressed data would exceed the limit given (a "zip bomb" or simply too large).
        case limitExceeded(limit: Int)
        /// zlib failed for another reason (out of memory).
        case zlib(code: Int32)
    }

    /// What went wrong.
    public let reason: Reason

    /// Creates an error.
    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .invalidData(let detail): return "the gzip data is invalid: \(detail)"
        case .truncated: return "the gzip data is truncated: it ends before the end of the stream"
        case .limitExceeded(let limit): return "the decompressed data is larger than the limit of \(limit) bytes"
        case .zlib(let code): return "zlib failed with code \(code)"
        }
    }
}

/// gzip compression and decompression over zlib, one-shot or streaming, with a limit on the
/// decompressed size so that a small hostile body cannot expand into gigabytes.
public enum Gzip {
    /// Compresses `bytes` into one gzip member (level 1 is fastest, 9 smallest).
    public static func compress(_ bytes: [UInt8], level: Int32 = 6) throws -> [UInt8] {
        let deflater = try GzipDeflater(level: level)
        try bytes.withUnsafeBytes { try deflater.append($0) }
        return try deflater.finish()
    }

    /// Decompresses a gzip (or zlib) stream; throws when the output would exceed `limit` bytes.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws -> [UInt8] {
        let inflater = try GzipInflater(limit: limit)
        try bytes.withUnsafeBytes { try inflater.append($0) }
        return try inflater.finish()
    }

    /// Whether `bytes` start with the gzip magic number.
    public static func isGzip(_ bytes: [UInt8]) -> Bool { bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B }
}

private let chunkSize = 64 * 1024

/// Streaming gzip compression: append input chunks, then finish to get the compressed bytes.
/// Owns its zlib stream (at a fixed address, as zlib requires) and frees it in `deinit`.
public final class GzipDeflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var output: [UInt8] = []
    private var finished = false

    /// A compressor at `level` (0–9, or -1 for zlib's default).
    public init(level: Int32 = 6) throws {
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let code = deflateInit2_(stream, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard code == Z_OK else {
            stream.deallocate()
            throw GzipError(.zlib(code: code))
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// Compresses a chunk of input.
    public func append(_ chunk: UnsafeRawBufferPointer) throws {
        try run(chunk, flush: Z_NO_FLUSH)
    }

    /// Ends the stream and returns all compressed bytes.
    public func finish() throws -> [UInt8] {
        if !finished { try run(UnsafeRawBufferPointer(start: nil, count: 0), flush: Z_FINISH) }
        finished = true
        return output
    }

    private func run(_ chunk: UnsafeRawBufferPointer, flush: Int32) throws {
        stream.pointee.next_in = UnsafeMutablePointer(mutating: chunk.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(chunk.count)
        var scratch = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let (code, produced) = scratch.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = uInt(buffer.count)
                let code = deflate(stream, flush)
                return (code, buffer.count - Int(stream.pointee.avail_out))
            }
            output.append(contentsOf: scratch[0..<produced])
            if code == Z_STREAM_END { return }
            guard code == Z_OK || code == Z_BUF_ERROR else { throw GzipError(.zlib(code: code)) }
            if flush != Z_FINISH, stream.pointee.avail_in == 0, stream.pointee.avail_out > 0 { return }
            if code == Z_BUF_ERROR, produced == 0 { return }
        }
    }
}

/// Streaming gzip decompression with a limit on the output size: append compressed chunks as
/// they arrive, then finish. Accepts gzip and zlib streams (windowBits 47). Owns its zlib
/// stream and frees it in `deinit`.
public final class GzipInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let limit: Int
    private var ended = false
    /// The decompressed bytes so far.
    public private(set) var output: [UInt8] = []

    /// A decompressor that refuses to produce more than `limit` bytes.
    public init(limit: Int) throws {
        self.limit = limit
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let code = inflateInit2_(stream, 47, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard code == Z_OK else {
            stream.deallocate()
            throw GzipError(.zlib(code: code))
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Decompresses a chunk of input.
    public func append(_ chunk: UnsafeRawBufferPointer) throws {
        // zlib counts its input in 32 bits: a larger chunk goes in in pieces.
        let piece = Int(uInt.max)
        guard chunk.count <= piece else {
            for start in stride(from: 0, to: chunk.count, by: piece) {
                try append(UnsafeRawBufferPointer(rebasing: chunk[start..<min(chunk.count, start + piece)]))
            }
            return
        }
        guard chunk.count > 0 else { return }
        guard !ended else { throw GzipError(.invalidData("data after the end of the gzip stream")) }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: chunk.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(chunk.count)
        var scratch = [UInt8](repeating: 0, count: chunkSize)
        while stream.pointee.avail_in > 0 || !ended {
            let (code, produced) = scratch.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = uInt(buffer.count)
                let code = inflate(stream, Z_NO_FLUSH)
                return (code, buffer.count - Int(stream.pointee.avail_out))
            }
            guard output.count + produced <= limit else { throw GzipError(.limitExceeded(limit: limit)) }
            output.append(contentsOf: scratch[0..<produced])
            switch code {
            case Z_STREAM_END:
                ended = true
                if stream.pointee.avail_in > 0 { throw GzipError(.invalidData("data after the end of the gzip stream")) }
                return
            case Z_OK:
                if stream.pointee.avail_in == 0 && produced < scratch.count { return }
            case Z_BUF_ERROR:
                return
            case Z_DATA_ERROR:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "corrupt data"
                throw GzipError(.invalidData(message))
            default:
                throw GzipError(.zlib(code: code))
            }
        }
    }

    /// Checks that the stream ended and returns the decompressed bytes.
    public func finish() throws -> [UInt8] {
        guard ended else { throw GzipError(.truncated) }
        return output
    }
}
