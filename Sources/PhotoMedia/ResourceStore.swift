import Foundation
import LedgerCore

/// A resource's bytes as stored: their SHA-256 (the resource's name everywhere: in events, on
/// disk, on the sync server) and size.
public struct StoredResource: Sendable, Hashable {
    /// Lowercase hex SHA-256 of the bytes (64 characters).
    public var hash: String
    /// Size in bytes.
    public var size: Int64
    /// Whether this call added the bytes; false when identical bytes were already stored.
    public var isNew: Bool

    /// Creates a description of stored bytes.
    public init(hash: String, size: Int64, isNew: Bool) {
        self.hash = hash
        self.size = size
        self.isNew = isNew
    }
}

/// A validated photo or video placed in the store: where its bytes are and what they are.
public struct ImportedResource: Sendable, Hashable {
    /// The stored bytes.
    public var resource: StoredResource
    /// Format and metadata read from those bytes.
    public var info: MediaInfo
    /// The renditions the validation's decode gave, when they were asked for (see
    /// ``ResourceStore/importMedia(filesAt:transfer:concurrency:renditions:)``).
    public var renditions: [Rendition] = []
}

/// What a garbage collection removed.
public struct GarbageCollectionReport: Sendable, Equatable {
    /// Hashes of the resources removed because nothing referenced them.
    public var removedResources: [String] = []
    /// Names of the abandoned temporary files removed from `tmp/`.
    public var removedTemporaryFiles: [String] = []
    /// Bytes freed.
    public var reclaimedBytes: Int64 = 0

    /// A report of what a collection removed; empty by default.
    public init(removedResources: [String] = [], removedTemporaryFiles: [String] = [], reclaimedBytes: Int64 = 0) {
        self.removedResources = removedResources
        self.removedTemporaryFiles = removedTemporaryFiles
        self.reclaimedBytes = reclaimedBytes
    }
}

/// How `ResourceStore.ingest(fileAt:transfer:)` takes a file in.
public enum FileTransfer: Sendable, Equatable {
    /// Copy the bytes; the source is left alone.
    case copy
    /// The caller will delete the source once the change that references the resource has
    /// committed (PhotoKit's `shouldMoveFile`). The store hard-links the source instead of
    /// copying when both are on one file system (falling back to a copy), so a large video costs
    /// one read for the hash instead of a copy. The source itself is never removed here: if the
    /// commit fails it is still there, intact. Until the caller deletes it, the source and the
    /// stored file are the same inode, so the caller must not write to it again.
    case move
}

/// Content-addressed storage of resource bytes in a directory beside the library's database.
///
/// Layout: `<directory>/<first two hex digits>/<64 hex digits>` for each resource, and
/// `<directory>/tmp/` for files being written. Identical bytes are stored once.
///
/// Crash safety. A resource is written to a temporary file in `tmp/`, hashed as it is written,
/// `fsync`ed, renamed to its hash name, and the directory is `fsync`ed: once `ingest` returns, the
/// file is complete and durable under its name, and a crash at any earlier point leaves at most a
/// temporary file. The library ingests (and so makes durable) every resource **before** it commits
/// the event that references it, so a committed event never names a missing resource. A crash
/// between the two leaves a stored file that no event references (an orphan); `collectGarbage`
/// removes it, together with abandoned temporary files, and never removes a referenced resource.
///
/// Reads are verified: `read` and `write(_:to:progress:)` hash what they return and fail with
/// `corruptedResource` when the bytes on disk no longer match their name, never handing out
/// wrong bytes.
///
/// The store keeps no mutable state in memory, so one instance may be used from any thread;
/// concurrent ingests of the same bytes both succeed and leave one file.
public final class ResourceStore: Sendable {
    /// The store's directory.
    public let directory: URL
    let root: String
    private let temporaryRoot: String

    /// Bytes read, hashed and written per step when copying or verifying.
    public static let chunkSize = 1 << 20

    /// Opens the store in `directory`, creating it and its `tmp/` subdirectory when missing.
    public init(directory: URL) throws(MediaError) {
        self.directory = directory.standardizedFileURL
        root = self.directory.path
        temporaryRoot = root + "/tmp"
        try FileIO.makeDirectory(temporaryRoot, name: directory.lastPathComponent)
    }

    // MARK: Names

    /// Whether `hash` is a well-formed resource name: 64 lowercase hex digits. Hashes arriving
    /// from elsewhere (events, sync) are checked before they become paths.
    public static func isValidHash(_ hash: String) -> Bool {
        hash.utf8.count == 64 && hash.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The file holding the resource named `hash` (whether or not it is stored), or nil when
    /// `hash` is not a well-formed name.
    public func url(for hash: String) -> URL? {
        guard Self.isValidHash(hash) else { return nil }
        return URL(fileURLWithPath: path(for: hash))
    }

    func path(for hash: String) -> String { "\(root)/\(hash.prefix(2))/\(hash)" }

    private func checkedPath(for hash: String) throws(MediaError) -> String {
        guard Self.isValidHash(hash) else {
            throw MediaError(.invalidResource, resource: hash, reason: "not a resource name (expected 64 lowercase hex digits)")
        }
        return path(for: hash)
    }

    /// Whether the resource named `hash` is stored.
    public func contains(_ hash: String) -> Bool {
        guard Self.isValidHash(hash), let status = FileIO.status(path(for: hash)) else { return false }
        return (status.st_mode & S_IFMT) == S_IFREG
    }

    /// The size in bytes of the stored resource `hash`; `missingResource` when it is not stored.
    public func size(of hash: String) throws(MediaError) -> Int64 {
        let path = try checkedPath(for: hash)
        guard let status = FileIO.status(path) else {
            throw MediaError(.missingResource, resource: hash, reason: "the resource is not in the store")
        }
        return Int64(status.st_size)
    }

    // MARK: Ingest

    /// Stores `bytes`; `name` appears in errors.
    public func ingest(_ bytes: some Collection<UInt8>, name: String = "data") throws(MediaError) -> StoredResource {
        try ingest(Array(bytes), name: name, validate: nil).resource
    }

    /// Stores a copy of the file at `url` (or a hard link, for `.move`: see `FileTransfer`),
    /// streaming it in 1 MB chunks while hashing. `missingResource` when the file does not exist.
    public func ingest(fileAt url: URL, transfer: FileTransfer = .copy) throws(MediaError) -> StoredResource {
        try ingest(fileAt: url, transfer: transfer, validate: nil).resource
    }

    /// Takes in a file written into the store's `tmp/` folder (``temporaryDirectory``) by a caller
    /// that hashed its bytes as it wrote them: the file is renamed to its hash name without being
    /// read again, and flushed first unless the caller did (`isFlushed`). The caller vouches for
    /// `sha256`: it must be the digest of exactly the bytes it wrote, so that the store's names
    /// stay true. The file is gone from `tmp/` afterwards, whether stored or dropped as a copy of
    /// bytes already stored; a file elsewhere fails with `invalidResource` and is left alone.
    public func adopt(fileAt url: URL, sha256: [UInt8], isFlushed: Bool) throws(MediaError) -> StoredResource {
        let name = url.lastPathComponent
        let path = url.standardizedFileURL.path
        guard sha256.count == 32, path == "\(temporaryRoot)/\(name)" else {
            throw MediaError(
                .invalidResource, resource: name, reason: "only a file in \(temporaryRoot) with a 32-byte SHA-256 can be adopted")
        }
        do throws(MediaError) {
            if !isFlushed {
                let descriptor = try FileIO.open(path, O_RDONLY, name: name)
                defer { close(descriptor) }
                try FileIO.sync(descriptor, name: name)
            }
            return try install(path, hash: Hex.encode(sha256), name: name)
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Creates those of the fan-out directories the resources named `hashes` go to that are
    /// missing, and flushes the store's directory once for all of them, so that storing those
    /// resources then flushes only each one's own directory. Malformed names are skipped.
    public func makeDirectories(for hashes: some Sequence<String>) throws(MediaError) {
        var created = false
        for prefix in Set(hashes.lazy.filter(Self.isValidHash).map { $0.prefix(2) }).sorted() {
            if try FileIO.makeDirectory("\(root)/\(prefix)", name: directory.lastPathComponent) { created = true }
        }
        if created { try FileIO.syncDirectory(root, name: directory.lastPathComponent) }
    }

    /// The store's folder for files being written (`tmp/`), where ``adopt(fileAt:sha256:isFlushed:)``
    /// takes files from.
    public var temporaryDirectory: URL { URL(fileURLWithPath: temporaryRoot, isDirectory: true) }

    /// Validates a photo or video and stores it: the bytes are written to a temporary file,
    /// inspected there (so what is inspected is exactly what is stored) and only then given their
    /// name. Invalid input throws `invalidResource` naming the file and leaves nothing behind.
    public func importMedia(fileAt url: URL, transfer: FileTransfer = .copy) throws(MediaError) -> ImportedResource {
        let result = try ingest(fileAt: url, transfer: transfer, validate: Self.inspection(naming: url.lastPathComponent))
        return ImportedResource(resource: result.resource, info: result.info!)
    }

    /// Validates photo or video bytes and stores them; `name` appears in errors. The bytes are
    /// written once, to the file the store then keeps: the decoders validate that file before it
    /// is flushed and named (a refused one is removed).
    public func importMedia(_ bytes: some Collection<UInt8>, name: String) throws(MediaError) -> ImportedResource {
        let result = try ingest(Array(bytes), name: name, validate: Self.inspection(naming: name))
        return ImportedResource(resource: result.resource, info: result.info!)
    }

    private typealias Validation = (String) throws(MediaError) -> MediaInfo

    /// The decoders' validation of a file being stored, naming it `name` in errors.
    private static func inspection(naming name: String) -> Validation {
        { (path: String) throws(MediaError) in try MediaInspector.inspect(path: path, name: name) }
    }

    private func ingest(
        fileAt url: URL, transfer: FileTransfer, validate: Validation?
    ) throws(MediaError) -> (resource: StoredResource, info: MediaInfo?) {
        let name = url.lastPathComponent
        let (source, status) = try FileIO.openRegularFile(url, name: name)
        defer { close(source) }
        let temporary = temporaryPath()
        do {
            let digest: [UInt8]
            if transfer == .move && linkForMove(url.path, to: temporary, opened: status) {
                digest = try hashFile(source, name: name)
                try FileIO.sync(source, name: name)
            } else {
                digest = try copyFile(source, to: temporary, name: name)
            }
            let info = try validate?(temporary)
            return (try install(temporary, hash: Hex.encode(digest), name: name), info)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    private func ingest(
        _ bytes: [UInt8], name: String, validate: Validation?
    ) throws(MediaError) -> (resource: StoredResource, info: MediaInfo?) {
        let temporary = temporaryPath()
        do throws(MediaError) {
            let descriptor = try FileIO.open(temporary, O_WRONLY | O_CREAT | O_EXCL, name: name)
            defer { close(descriptor) }
            let failure = bytes.withUnsafeBytes { buffer -> MediaError? in
                do throws(MediaError) { try FileIO.write(descriptor, buffer, name: name) } catch { return error }
                return nil
            }
            if let failure { throw failure }
            let info = try validate?(temporary)
            try FileIO.sync(descriptor, name: name)
            return (try install(temporary, hash: Hex.encode(SHA256.hash(bytes)), name: name), info)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Hard-links the source of a move into `tmp/`, when that is safe: a regular file (not a
    /// symbolic link) with no other names, on the same file system, and still the file that was
    /// opened. Otherwise the caller copies.
    func linkForMove(_ source: String, to temporary: String, opened: stat) -> Bool {
        guard let named = FileIO.status(source), (named.st_mode & S_IFMT) == S_IFREG, named.st_nlink == 1,
            named.st_ino == opened.st_ino, named.st_dev == opened.st_dev, link(source, temporary) == 0
        else { return false }
        guard let linked = FileIO.status(temporary), linked.st_ino == opened.st_ino, linked.st_dev == opened.st_dev else {
            unlink(temporary)
            return false
        }
        return true
    }

    func temporaryPath() -> String { "\(temporaryRoot)/ingest-\(UUID.random().lowercaseString)" }

    /// Copies `source` to a new file at `path` in chunks while hashing, then fsyncs it.
    private func copyFile(_ source: Int32, to path: String, name: String) throws(MediaError) -> [UInt8] {
        let target = try FileIO.open(path, O_WRONLY | O_CREAT | O_EXCL, name: name)
        defer { close(target) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var digest = SHA256()
        while true {
            let count = try FileIO.read(source, into: buffer, name: name)
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            digest.update(chunk)
            try FileIO.write(target, chunk, name: name)
        }
        try FileIO.sync(target, name: name)
        return digest.finalize()
    }

    private func hashFile(_ descriptor: Int32, name: String) throws(MediaError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var digest = SHA256()
        while true {
            let count = try FileIO.read(descriptor, into: buffer, name: name)
            if count == 0 { break }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return digest.finalize()
    }

    /// Gives a complete, fsynced temporary file its hash name (or drops it when identical bytes
    /// are already stored) and makes the name durable.
    private func install(_ temporary: String, hash: String, name: String) throws(MediaError) -> StoredResource {
        guard let written = FileIO.status(temporary) else {
            throw MediaError(.fileSystem, resource: name, reason: "the temporary file \(temporary) vanished")
        }
        let size = Int64(written.st_size)
        let final = path(for: hash)
        if let existing = FileIO.status(final), Int64(existing.st_size) == size {
            unlink(temporary)
            // Fresh mtime: a collection running with a grace period will not take it before the
            // event that references it commits.
            utimensat(AT_FDCWD, final, nil, 0)
            return StoredResource(hash: hash, size: size, isNew: false)
        }
        let fanOut = "\(root)/\(hash.prefix(2))"
        if try FileIO.makeDirectory(fanOut, name: name) { try FileIO.syncDirectory(root, name: name) }
        guard rename(temporary, final) == 0 else {
            throw MediaError(.fileSystem, resource: name, reason: "could not rename into the store (\(FileIO.lastError()))")
        }
        try FileIO.syncDirectory(fanOut, name: name)
        return StoredResource(hash: hash, size: size, isNew: true)
    }

    // MARK: Reading

    /// The bytes of resource `hash`, verified against the hash: `missingResource` when it is not
    /// stored, `corruptedResource` when the stored bytes no longer match.
    public func read(_ hash: String) throws(MediaError) -> Data {
        var bytes = Data()
        try forEachChunk(of: hash) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Streams resource `hash` in chunks of up to 1 MB to `body`, then checks the hash. Chunks
    /// are handed out as they are read (as PhotoKit's `requestData` does), so a caller that must
    /// not act on damaged bytes keeps them until this returns without `corruptedResource`.
    public func forEachChunk(of hash: String, _ body: (UnsafeRawBufferPointer) throws(MediaError) -> Void) throws(MediaError) {
        let path = try checkedPath(for: hash)
        let descriptor: Int32
        do {
            descriptor = try FileIO.open(path, O_RDONLY, name: hash)
        } catch  where error.kind == .missingResource {
            throw MediaError(.missingResource, resource: hash, reason: "the resource is not in the store")
        }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 4096)
        defer { buffer.deallocate() }
        var digest = SHA256()
        while true {
            let count = try FileIO.read(descriptor, into: buffer, name: hash)
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            digest.update(chunk)
            try body(chunk)
        }
        guard Hex.encode(digest.finalize()) == hash else {
            throw MediaError(
                .corruptedResource, resource: hash,
                reason:
                    "the stored bytes no longer match their SHA-256 (\(path) is damaged; fetch the resource again from the sync server or restore it from a backup)"
            )
        }
    }

    /// Writes resource `hash` to a new file at `destination`, streaming it in 1 MB chunks and
    /// calling `progress(bytesWritten, totalBytes)` after each; verifies the hash and fsyncs the
    /// file. Fails if `destination` exists. On any failure (including `corruptedResource`) the
    /// partial destination is removed.
    public func write(
        _ hash: String, to destination: URL, progress: ((_ bytesWritten: Int64, _ totalBytes: Int64) -> Void)? = nil
    ) throws(MediaError) {
        let total = try size(of: hash)
        let target = try FileIO.open(destination.path, O_WRONLY | O_CREAT | O_EXCL, name: destination.lastPathComponent)
        do {
            var written: Int64 = 0
            try forEachChunk(of: hash) { (chunk: UnsafeRawBufferPointer) throws(MediaError) in
                try FileIO.write(target, chunk, name: destination.lastPathComponent)
                written += Int64(chunk.count)
                progress?(written, total)
            }
            try FileIO.sync(target, name: destination.lastPathComponent)
            close(target)
        } catch {
            close(target)
            unlink(destination.path)
            throw error
        }
    }

    // MARK: Garbage collection

    /// Removes every stored resource whose hash is not in `referenced`, and every temporary file,
    /// when last modified more than `gracePeriod` seconds before `now`; returns what it removed.
    ///
    /// `referenced` must hold every hash any event refers to. Run it while no change block is
    /// between ingesting a resource and committing its event (the library's write lock), or keep
    /// the grace period longer than any change block: an ingest refreshes the file's mtime, so a
    /// resource about to be referenced is never taken.
    public func collectGarbage(referenced: Set<String>, gracePeriod: TimeInterval = 3600, now: Date = Date()) throws(MediaError)
        -> GarbageCollectionReport
    {
        let cutoff = now.timeIntervalSince1970 - gracePeriod
        var report = GarbageCollectionReport()
        for name in try entries(of: temporaryRoot) {
            let path = "\(temporaryRoot)/\(name)"
            guard let status = FileIO.status(path), (status.st_mode & S_IFMT) == S_IFREG, FileIO.modificationTime(status) <= cutoff,
                unlink(path) == 0
            else { continue }
            report.removedTemporaryFiles.append(name)
            report.reclaimedBytes += Int64(status.st_size)
        }
        for fanOut in try entries(of: root) where fanOut.utf8.count == 2 {
            for hash in try entries(of: "\(root)/\(fanOut)")
            where Self.isValidHash(hash) && hash.hasPrefix(fanOut) && !referenced.contains(hash) {
                let path = "\(root)/\(fanOut)/\(hash)"
                guard let status = FileIO.status(path), (status.st_mode & S_IFMT) == S_IFREG, FileIO.modificationTime(status) <= cutoff,
                    unlink(path) == 0
                else { continue }
                report.removedResources.append(hash)
                report.reclaimedBytes += Int64(status.st_size)
            }
        }
        report.removedResources.sort()
        report.removedTemporaryFiles.sort()
        return report
    }

    private func entries(of directory: String) throws(MediaError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw MediaError(.fileSystem, resource: directory, reason: "could not list the directory (\(error.localizedDescription))")
        }
    }
}
