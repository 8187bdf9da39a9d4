import CFileSync
import Foundation
import LedgerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a request body comes from while libcurl reads it.
enum UploadSource {
    case none
    case memory(bytes: [UInt8], offset: Int)
    /// A file's bytes from `start` on, `size` of them.
    case file(descriptor: Int32, path: String, start: Int64, size: Int64)

    /// Opens a file body (from byte `fileOffset`); an empty in-memory body sends nothing.
    init(_ body: HTTPBody, fileOffset: Int64 = 0) throws(TransportError) {
        switch body {
        case .bytes(let bytes):
            self = bytes.isEmpty ? .none : .memory(bytes: bytes, offset: 0)
        case .file(let url):
            let path = url.path
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw TransportError.localFile(path: path, detail: FileError.lastMessage()) }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else {
                let detail = FileError.lastMessage()
                Glibc.close(descriptor)
                throw TransportError.localFile(path: path, detail: detail)
            }
            guard fileOffset >= 0, fileOffset <= Int64(info.st_size), lseek(descriptor, off_t(fileOffset), SEEK_SET) >= 0 else {
                Glibc.close(descriptor)
                throw TransportError.invalidRequest(
                    reason: "the body's start, byte \(fileOffset), is beyond the \(info.st_size) bytes of \(path)")
            }
            self = .file(descriptor: descriptor, path: path, start: fileOffset, size: Int64(info.st_size) - fileOffset)
        }
    }

    /// The number of bytes to send, or `nil` when there is no body.
    var size: Int64? {
        switch self {
        case .none: nil
        case .memory(let bytes, _): Int64(bytes.count)
        case .file(_, _, _, let size): size
        }
    }

    /// Copies the next bytes into `buffer`; returns 0 at the end.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> Int {
        switch self {
        case .none:
            return 0
        case .memory(let bytes, let offset):
            let count = min(buffer.count, bytes.count - offset)
            bytes.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
            }
            self = .memory(bytes: bytes, offset: offset + count)
            return count
        case .file(let descriptor, let path, _, _):
            while true {
                let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
                if count >= 0 { return count }
                if errno != EINTR { throw TransportError.localFile(path: path, detail: FileError.lastMessage()) }
            }
        }
    }

    /// Moves the read position, so libcurl can resend the body on a fresh connection.
    mutating func seek(to offset: Int64, origin: Int32) -> Bool {
        switch self {
        case .none:
            return offset == 0
        case .memory(let bytes, _):
            guard origin == SEEK_SET, offset >= 0, offset <= bytes.count else { return false }
            self = .memory(bytes: bytes, offset: Int(offset))
            return true
        case .file(let descriptor, _, let start, _):
            // Offsets are within the body, which starts at `start` in the file.
            return lseek(descriptor, off_t(origin == SEEK_SET ? start + offset : offset), origin) >= 0
        }
    }

    /// Closes the file, if any.
    func close() {
        if case .file(let descriptor, _, _, _) = self { Glibc.close(descriptor) }
    }
}

/// A response body being written beside its destination, renamed into place only when complete.
///
/// With `hashing`, the bytes go into a SHA-256 as they are written; kept bytes of an earlier
/// transfer are read back into it once, before the first new byte (or at the commit).
final class DownloadFile {
    private let destination: String
    private let temporary: String
    private var descriptor: Int32
    /// Whether the bytes outlive a failed transfer, for the next one to continue.
    private let resumable: Bool
    /// The bytes held already, which the transfer continues from (0 unless resumable).
    private(set) var offset: Int64 = 0
    private let hashing: Bool
    private var digest = SHA256()
    /// Whether the kept bytes still have to go into the digest.
    private var keptBytesUnhashed = false

    init(destination url: URL, hashing: Bool = false) throws(TransportError) {
        destination = url.path
        let directory = url.deletingLastPathComponent().path
        temporary = "\(directory)/.\(url.lastPathComponent).partial-\(UInt64.random(in: 0...UInt64.max))"
        descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        resumable = false
        self.hashing = hashing
        guard descriptor >= 0 else { throw TransportError.localFile(path: destination, detail: FileError.lastMessage()) }
    }

    /// Opens the kept bytes of an earlier transfer to `url` (`.NAME.partial` beside it), locked
    /// for this transfer; when another transfer holds them, a file of this transfer's own.
    convenience init(resuming url: URL, hashing: Bool = false) throws(TransportError) {
        let path = "\(url.deletingLastPathComponent().path)/.\(url.lastPathComponent).partial"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw TransportError.localFile(path: url.path, detail: FileError.lastMessage()) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(descriptor)
            try self.init(destination: url, hashing: hashing)
            return
        }
        let end = lseek(descriptor, 0, SEEK_END)
        guard end >= 0 else {
            let detail = FileError.lastMessage()
            Glibc.close(descriptor)
            throw TransportError.localFile(path: url.path, detail: detail)
        }
        self.init(destination: url.path, temporary: path, descriptor: descriptor, offset: Int64(end), hashing: hashing)
    }

    private init(destination: String, temporary: String, descriptor: Int32, offset: Int64, hashing: Bool) {
        self.destination = destination
        self.temporary = temporary
        self.descriptor = descriptor
        self.offset = offset
        self.hashing = hashing
        received = offset
        unflushedFrom = offset
        resumable = true
        keptBytesUnhashed = hashing && offset > 0
    }

    deinit { discard() }

    /// Drops the kept bytes: the answer carries the whole body.
    func restart() throws(TransportError) {
        guard offset > 0 else { return }
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw TransportError.localFile(path: destination, detail: FileError.lastMessage())
        }
        offset = 0
        received = 0
        unflushedFrom = 0
        keptBytesUnhashed = false
        if hashing { digest = SHA256() }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        if keptBytesUnhashed { try hashKeptBytes() }
        if hashing { digest.update(bytes) }
        var written = 0
        while written < bytes.count {
            let count = Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw TransportError.localFile(path: destination, detail: FileError.lastMessage()) }
            written += count
        }
        received += Int64(bytes.count)
        if received - unflushedFrom >= writebackBytes {
            // The disk writes while more arrives, so whoever syncs the file has little left to wait for.
            _ = photoledger_start_writeback(descriptor, unflushedFrom, received - unflushedFrom)
            unflushedFrom = received
        }
    }

    /// Reads the kept bytes back into the digest, before the bytes that continue them.
    private func hashKeptBytes() throws(TransportError) {
        keptBytesUnhashed = false
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var position: Int64 = 0
        while position < offset {
            let count = pread(descriptor, buffer.baseAddress, min(buffer.count, Int(offset - position)), off_t(position))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let detail = count == 0 ? "the kept bytes ended before byte \(offset)" : FileError.lastMessage()
                throw TransportError.localFile(path: destination, detail: detail)
            }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            position += Int64(count)
        }
    }

    /// The bytes after which the writeback of what was written is started (`sync_file_range`).
    static let writebackBytes: Int64 = 8 << 20
    /// The same for a file that is flushed at its end: smaller, so the flush has less to wait for.
    static let flushedWritebackBytes: Int64 = 1 << 20
    /// The step this file's writeback starts at.
    var writebackBytes = DownloadFile.writebackBytes
    /// The bytes this transfer wrote, and where those whose writeback has not started begin.
    private var received: Int64 = 0, unflushedFrom: Int64 = 0

    /// Closes the temporary file and renames it to the destination, flushing it first when asked;
    /// returns the SHA-256 of its bytes when hashing.
    func commit(flushing: Bool = false) throws -> [UInt8]? {
        if keptBytesUnhashed { try hashKeptBytes() }
        let flushed = !flushing || fsync(descriptor) == 0
        let flushError = flushed ? nil : FileError.lastMessage()
        let closed = Glibc.close(descriptor)
        descriptor = -1
        guard flushed, closed == 0, rename(temporary, destination) == 0 else {
            let detail = flushError ?? FileError.lastMessage()
            unlink(temporary)
            throw TransportError.localFile(path: destination, detail: detail)
        }
        return hashing ? digest.finalizeAndReset() : nil
    }

    /// Closes the temporary file unless it was committed, and deletes it unless its bytes are
    /// kept for the next transfer (`keepingResumable`).
    func discard(keepingResumable: Bool = false) {
        guard descriptor >= 0 else { return }
        if !(keepingResumable && resumable) { unlink(temporary) }
        Glibc.close(descriptor)
        descriptor = -1
    }
}

enum FileError {
    /// The C library's message for the current `errno`.
    static func lastMessage() -> String { String(cString: strerror(errno)) }
}
