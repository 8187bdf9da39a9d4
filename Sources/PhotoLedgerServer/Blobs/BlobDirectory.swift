import CFileSync
import Foundation
import LedgerCore
import SyncProtocol

/// Content-addressed blob files: `<root>/<first two hex digits>/<64 hex digits>`, written
/// through a temporary file in `<root>/tmp` that is hashed while it is written, synced and then
/// renamed into place, so a blob file is either complete and verified or absent.
///
/// Resumable uploads are kept in `<root>/tmp/partial`, one file per library, blob and device,
/// named `<library row>-<hash>-<device>`, each hashed as it grows.
public struct BlobDirectory: BlobStore {
    /// The root directory.
    public let root: String
    /// The unfinished resumable uploads.
    let partials: PartialFiles

    /// Uses (creating when needed) the directory at `root`.
    public init(root: String) throws {
        self.root = root
        partials = PartialFiles(folder: root + "/tmp/partial")
        do {
            // The folder of unfinished resumable uploads is made by the first of them.
            try FileManager.default.createDirectory(atPath: root + "/tmp", withIntermediateDirectories: true)
        } catch {
            throw ServerStoreError("cannot create the blob directory \(root): \(error.localizedDescription)")
        }
    }

    /// The path of the blob named `hash` (64 lowercase hex digits, checked by the caller).
    public func path(for hash: String) -> String { "\(root)/\(hash.prefix(2))/\(hash)" }

    /// Opens the blob for reading: a file descriptor (owned by the caller) and its size, or nil.
    public func open(_ hash: String) -> (descriptor: Int32, size: Int64)? {
        let descriptor = Glibc.open(path(for: hash), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            close(descriptor)
            return nil
        }
        return (descriptor, Int64(status.st_size))
    }

    /// Removes every file in the temporary folder that uploads an earlier run left unfinished (a
    /// crash skips their clean-up), and of the resumable uploads it keeps those that belong to
    /// nothing: a name that is not one of theirs, or a blob the directory holds already. The others
    /// are taken up, their idle time counting from `now`. Call it before serving, while no upload
    /// runs; the directory is meant for one server process. Returns how many files were removed.
    public func removeLeftoverUploads(now: UInt64) -> (place: String, removed: Int)? {
        (root + "/tmp", removeTemporaryFiles() + partials.adoptLeftovers(now: now) { access(path(for: $0), F_OK) == 0 })
    }

    /// Removes every file of an unfinished whole upload in the temporary folder (see
    /// ``removeLeftoverUploads(now:)``); returns how many were removed.
    @discardableResult
    public func removeTemporaryFiles() -> Int {
        let folder = root + "/tmp"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return 0 }
        return names.filter { $0 != "partial" }.reduce(0) { removed, name in unlink("\(folder)/\(name)") == 0 ? removed + 1 : removed }
    }

    /// The bytes held of the unfinished upload `key` (0 when none).
    public func heldBytes(of key: PartialUploadKey, now: UInt64) throws -> Int64 { partials.held(key, now: now) }

    /// Continues the unfinished upload `key` from `offset` (see `BlobStore`).
    public func resumeUpload(_ key: PartialUploadKey, from offset: Int64, length: Int64, now: UInt64) throws(UploadResumeRefusal)
        -> any BlobUpload
    {
        try partials.resume(key, from: offset, length: length, now: now, directory: self)
    }

    /// Removes the unfinished uploads idle for `idleMilliseconds` at `now`; returns how many.
    public func collectAbandonedUploads(now: UInt64, idleMilliseconds: UInt64) -> Int {
        partials.collect(now: now, idleMilliseconds: idleMilliseconds)
    }

    /// Starts an upload into a new temporary file (named by its hash only at commit).
    public func beginUpload(of hash: String, limit: Int64) throws -> any BlobUpload {
        try BlobFileUpload(directory: self, limit: limit)
    }

    /// Deletes the blob's file (nothing when it is absent).
    public func remove(_ hash: String) throws {
        guard unlink(path(for: hash)) == 0 || errno == ENOENT else {
            throw ServerStoreError("cannot delete the blob file \(path(for: hash)): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether the blob's file exists.
    public func holds(_ hash: String) throws -> Bool { access(path(for: hash), F_OK) == 0 }

    /// The blob's file, or nil when it is absent.
    public func content(of hash: String, from offset: Int64) throws -> BlobContent? {
        open(hash).map { .file(descriptor: $0.descriptor, offset: min(offset, $0.size), size: max(0, $0.size - offset)) }
    }
}

/// A blob being uploaded into a directory: bytes go to a temporary file and into a SHA-256 as
/// they arrive. The temporary file is removed unless ``commit(as:)`` moves it into place.
///
/// libmicrohttpd hands a body over in pieces of a few kilobytes (as much as a connection's small
/// memory pool reads at once); they are gathered into a buffer of 128 KB and written
/// and hashed a buffer at a time, so a blob of megabytes costs a few dozen writes, not hundreds.
public final class BlobFileUpload: BlobUpload {
    /// The bytes gathered before they are written to the file.
    static let bufferBytes = 128 << 10

    private let directory: BlobDirectory
    private let temporaryPath: String
    private var descriptor: Int32
    private var digest = SHA256()
    private let limit: Int64
    /// The bytes received and not written yet (allocated with the first chunk).
    private var buffer: UnsafeMutableRawBufferPointer?
    private var buffered = 0
    /// The bytes received so far.
    public private(set) var size: Int64 = 0
    /// The bytes written to the file, and where those whose writeback has not been started yet begin.
    private var written: Int64 = 0, unflushedFrom: Int64 = 0

    init(directory: BlobDirectory, limit: Int64) throws {
        self.directory = directory
        self.limit = limit
        temporaryPath = "\(directory.root)/tmp/upload-\(UUID().uuidString)"
        descriptor = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ServerStoreError("cannot create a temporary blob file in \(directory.root)/tmp: \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        buffer?.deallocate()
        if descriptor >= 0 {
            close(descriptor)
            unlink(temporaryPath)
        }
    }

    /// Takes a chunk: gathers it, and writes and hashes the buffer once it is full.
    public func append(_ chunk: UnsafeRawBufferPointer) throws(BlobUploadFailure) {
        guard size + Int64(chunk.count) <= limit else { throw .tooLarge(limit: limit) }
        let buffer = self.buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferBytes, alignment: 16)
        self.buffer = buffer
        var taken = 0
        while taken < chunk.count {
            let count = min(chunk.count - taken, buffer.count - buffered)
            (buffer.baseAddress! + buffered).copyMemory(from: chunk.baseAddress! + taken, byteCount: count)
            buffered += count
            taken += count
            if buffered == buffer.count { try writeBuffer() }
        }
        size += Int64(chunk.count)
    }

    /// Hashes and writes the gathered bytes, and starts the writeback of what was written.
    private func writeBuffer() throws(BlobUploadFailure) {
        guard let buffer, buffered > 0 else { return }
        let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: buffered)
        digest.update(bytes)
        var offset = 0
        while offset < bytes.count {
            let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                throw .io("cannot write a blob file: \(String(cString: strerror(errno)))")
            }
            offset += count
        }
        written += Int64(buffered)
        buffered = 0
        if written - unflushedFrom >= Writeback.batchBytes {
            // The disk writes while more arrives, so the sync at the end has little left to wait for.
            _ = photoledger_start_writeback(descriptor, unflushedFrom, written - unflushedFrom)
            unflushedFrom = written
        }
    }

    /// Checks the hash, syncs the file and renames it into place as `hash`.
    /// Returns false when an identical blob was already there (the new copy is dropped).
    public func commit(as hash: String) throws(BlobUploadFailure) -> Bool {
        try writeBuffer()
        let actual = Hex.encode(digest.finalizeAndReset())
        guard actual == hash else { throw .hashMismatch(actual: actual) }
        defer { descriptor = -1 }
        return try directory.place(temporaryPath, descriptor: descriptor, as: hash)
    }
}

extension BlobDirectory {
    /// Syncs and closes a verified temporary file and renames it into place as the blob `hash`;
    /// returns false when an identical blob was already there (the temporary file is removed).
    func place(_ temporaryPath: String, descriptor: Int32, as hash: String) throws(BlobUploadFailure) -> Bool {
        guard fsync(descriptor) == 0 else {
            let detail = String(cString: strerror(errno))
            close(descriptor)
            unlink(temporaryPath)
            throw .io("cannot sync a blob file: \(detail)")
        }
        close(descriptor)
        let destination = path(for: hash)
        if access(destination, F_OK) == 0 {
            unlink(temporaryPath)
            return false
        }
        let shard = "\(root)/\(hash.prefix(2))"
        if mkdir(shard, 0o755) == 0 {
            // A new fan-out directory: its name in the root must last as well as the blob's in it.
            Self.flushDirectory(root)
        } else if errno != EEXIST {
            unlink(temporaryPath)
            throw .io("cannot create \(shard): \(String(cString: strerror(errno)))")
        }
        guard rename(temporaryPath, destination) == 0 else {
            unlink(temporaryPath)
            throw .io("cannot move a blob into \(shard): \(String(cString: strerror(errno)))")
        }
        Self.flushDirectory(shard)
        return true
    }

    /// Flushes a directory's entries to the disk.
    static func flushDirectory(_ path: String) {
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}

/// Writing blob files in the background as they arrive.
enum Writeback {
    /// The bytes after which the writeback of what was written is started (`sync_file_range`):
    /// the final `fsync` then waits for the tail only, not for the whole file. A blob of a few
    /// megabytes (a camera's photo) has its writeback started several times while it arrives.
    static let batchBytes: Int64 = 1 << 20
}
