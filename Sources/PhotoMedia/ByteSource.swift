import Foundation

/// Random access to the bytes of a file or a buffer, so that parsers can seek to the boxes and
/// markers they need instead of loading a whole video into memory.
protocol ByteSource {
    /// The total number of bytes.
    var count: Int64 { get }
    /// Up to `length` bytes from `offset`; fewer only at the end of the source.
    func read(at offset: Int64, length: Int) throws -> [UInt8]
}

extension ByteSource {
    /// Exactly `length` bytes from `offset`, or an `InvalidMedia` naming `what` when the source
    /// ends first.
    func read(exactly length: Int, at offset: Int64, _ what: @autoclosure () -> String) throws -> [UInt8] {
        guard length >= 0, offset >= 0, offset <= count, Int64(length) <= count - offset else {
            throw InvalidMedia(what())
        }
        let bytes = try read(at: offset, length: length)
        guard bytes.count == length else { throw InvalidMedia(what()) }
        return bytes
    }
}

/// Bytes held in memory.
struct MemoryByteSource: ByteSource {
    let bytes: [UInt8]

    var count: Int64 { Int64(bytes.count) }

    func read(at offset: Int64, length: Int) throws -> [UInt8] {
        guard offset >= 0, offset < Int64(bytes.count), length > 0 else { return [] }
        let start = Int(offset)
        return Array(bytes[start..<min(bytes.count, start + length)])
    }
}

/// Bytes in a buffer the caller owns, valid only while the caller keeps it (an inspection of
/// a file still in the buffer it was copied through).
struct BufferByteSource: ByteSource {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var count: Int64 { Int64(bytes.count) }

    func read(at offset: Int64, length: Int) throws -> [UInt8] {
        guard offset >= 0, offset < Int64(bytes.count), length > 0 else { return [] }
        let start = Int(offset)
        return Array(bytes[start..<min(bytes.count, start + length)])
    }
}

/// A regular file opened read-only, read with `pread`; the descriptor is closed in `deinit`.
final class FileByteSource: ByteSource {
    private let descriptor: Int32
    let count: Int64

    /// Opens the file at `path`; throws `MediaError` (`missingResource` when it does not exist,
    /// `invalidResource` when it cannot be read or is not a regular file).
    init(path: String, name: String) throws(MediaError) {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it has no effect on regular files.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                throw MediaError(.missingResource, resource: name, reason: "the file does not exist (\(path))")
            }
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (\(String(cString: strerror(code))))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw MediaError(.invalidResource, resource: name, reason: "unreadable (not a regular file)")
        }
        self.descriptor = descriptor
        self.count = Int64(status.st_size)
    }

    deinit { close(descriptor) }

    func read(at offset: Int64, length: Int) throws -> [UInt8] {
        guard offset >= 0, offset < count, length > 0 else { return [] }
        let wanted = Int(min(Int64(length), count - offset))
        var bytes = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let result = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, wanted - done, off_t(offset) + off_t(done))
            }
            if result < 0 && errno == EINTR { continue }
            guard result >= 0 else { throw InvalidMedia("unreadable (\(String(cString: strerror(errno))))") }
            if result == 0 { break }
            done += result
        }
        bytes.removeSubrange(done...)
        return bytes
    }
}

/// Reads big-endian integers and four-character codes from a byte array, with bounds checks
/// that throw instead of trapping.
struct ByteCursor {
    let bytes: [UInt8]
    var offset: Int
    let what: String

    init(_ bytes: [UInt8], offset: Int = 0, what: String) {
        self.bytes = bytes
        self.offset = offset
        self.what = what
    }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ length: Int) throws -> ArraySlice<UInt8> {
        guard length >= 0, length <= remaining else { throw InvalidMedia(what) }
        defer { offset += length }
        return bytes[offset..<offset + length]
    }

    mutating func skip(_ length: Int) throws { _ = try take(length) }

    mutating func uint8() throws -> UInt8 { try take(1).first! }

    mutating func bigEndian(_ length: Int) throws -> UInt64 {
        try take(length).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func uint16() throws -> Int { Int(try bigEndian(2)) }
    mutating func uint32() throws -> UInt32 { UInt32(try bigEndian(4)) }
    mutating func fourCC() throws -> String { String(decoding: try take(4), as: UTF8.self) }
}

/// Little- and big-endian integer reads from a byte array at a known-valid offset.
extension Array where Element == UInt8 {
    func littleEndian(at offset: Int, length: Int) -> Int {
        (0..<length).reduce(0) { $0 | Int(self[offset + $1]) << (8 * $1) }
    }

    func bigEndian(at offset: Int, length: Int) -> Int {
        (0..<length).reduce(0) { $0 << 8 | Int(self[offset + $1]) }
    }
}
