import CFileSync
import Dispatch
import Foundation
import LedgerCore
import Synchronization

/// One file of a batch once its bytes are written and hashed, before they have their name.
struct StagedFile: Sendable {
    /// The bytes and whether the batch adds them.
    var resource: StoredResource
    /// What the bytes hold, when the batch validates media.
    var info: MediaInfo?
    /// The renditions the validation's decode gave.
    var renditions: [Rendition] = []
    /// The flushed temporary file that gets the hash name; nil when nothing is to be renamed.
    var temporary: String?
    /// The file of the batch whose copy of the same bytes is kept, when it is another one.
    var storedBy: Int?
}

extension ResourceStore {
    /// Bytes read, hashed and written per step by a batch.
    static let batchChunkSize = 4 << 20

    /// Writeback of a large file starts every time this many more bytes have been written.
    static let writebackStep: Int64 = 16 << 20

    /// Stores many files at once; each result is what `ingest(fileAt:transfer:)` gives for that
    /// file, in the order of `urls`, and one failure does not stop the others. Every stored file
    /// is durable under its name when this returns (see `importMedia(filesAt:transfer:concurrency:renditions:)`
    /// for how the batch gets there faster than one file at a time).
    public func ingest(filesAt urls: [URL], transfer: FileTransfer = .copy, concurrency: Int = 8) -> [Result<StoredResource, MediaError>] {
        storeBatch(urls, transfer: transfer, concurrency: concurrency, validation: nil).map { $0.map(\.resource) }
    }

    /// Validates and stores many photos and videos at once; each result is what
    /// `importMedia(fileAt:transfer:)` gives for that file, in the order of `urls`, and one
    /// failure (invalid, missing, unreadable) does not stop the others and leaves nothing of
    /// that file behind.
    ///
    /// The batch keeps the store's contract (a file has its hash name only once its bytes are
    /// flushed, and the name is flushed before this returns) while the disk is kept busy:
    /// `concurrency` threads read each file once, hashing and writing it to `tmp/` from the same
    /// buffer, validate it, and start its writeback; other threads `fsync` the files as they
    /// come, so many flushes are in flight and the file system commits them together. Bytes
    /// already stored, or stored by an earlier file of the batch, are dropped before they reach
    /// the disk. Once every file is flushed, all are renamed to their hash names and each
    /// fan-out directory that received one is flushed once.
    ///
    /// With `renditions`, the decode that validates a file also gives those of its renditions it
    /// can: a JPEG or WebP is validated by a reduced decode, which then needs only scaling and
    /// encoding (about 2 ms for a 256-pixel one) instead of a decode of its own later. Other
    /// formats, and scales the reduced picture is too small for, get none here.
    public func importMedia(
        filesAt urls: [URL], transfer: FileTransfer = .copy, concurrency: Int = 8, renditions: [RenditionScale] = []
    ) -> [Result<ImportedResource, MediaError>] {
        storeBatch(urls, transfer: transfer, concurrency: concurrency, validation: renditions).map { result in
            result.map { ImportedResource(resource: $0.resource, info: $0.info!, renditions: $0.renditions) }
        }
    }

    /// The batch pipeline: stage every file (copy, hash, validate, start writeback, hand over
    /// for `fsync`), wait for the flushes, then name the files and flush their directories.
    /// `validation` nil stores the bytes as they are; otherwise each file is validated, and
    /// makes the renditions of those scales its validation can give.
    func storeBatch(
        _ urls: [URL], transfer: FileTransfer, concurrency: Int, validation: [RenditionScale]?
    ) -> [Result<StagedFile, MediaError>] {
        let workers = max(1, concurrency)
        let flusher = Flusher(threads: workers, capacity: 4 * workers)
        let writers = Mutex<[String: Int]>([:])  // hash → the file of the batch that writes those bytes
        var results = ParallelWork.map(Array(urls.indices), concurrency: workers, state: { ChunkBuffer(byteCount: Self.batchChunkSize) }) {
            (buffer: ChunkBuffer, index: Int) throws(MediaError) in
            try self.stage(
                urls[index], index: index, transfer: transfer, validation: validation, buffer: buffer, writers: writers, flusher: flusher)
        }
        for (index, error) in flusher.finish() {
            if case .success(let staged) = results[index], let temporary = staged.temporary { unlink(temporary) }
            results[index] = .failure(error)
        }
        install(&results, names: urls.map(\.lastPathComponent), concurrency: workers)
        // A file whose bytes another file of the batch stored shares its fate; the first file of
        // the batch with new bytes is the one reported as adding them.
        var added = Set<String>()
        for index in results.indices {
            guard case .success(let staged) = results[index] else { continue }
            if let owner = staged.storedBy, case .failure(let error) = results[owner] {
                results[index] = .failure(error)
                continue
            }
            if staged.resource.isNew { added.insert(staged.resource.hash) }
        }
        for index in results.indices {
            guard case .success(var staged) = results[index] else { continue }
            staged.resource.isNew = added.remove(staged.resource.hash) != nil
            staged.storedBy = nil
            results[index] = .success(staged)
        }
        return results
    }

    /// Copies (or, for a move, links) and hashes one file into `tmp/`, validates it, and when its
    /// bytes are new starts their writeback and hands the file to `flusher`.
    private func stage(
        _ url: URL, index: Int, transfer: FileTransfer, validation: [RenditionScale]?, buffer: ChunkBuffer,
        writers: borrowing Mutex<[String: Int]>,
        flusher: Flusher
    ) throws(MediaError) -> StagedFile {
        let name = url.lastPathComponent
        let (source, status) = try FileIO.openRegularFile(url, name: name)
        defer { close(source) }
        let temporary = temporaryPath()
        let written: (digest: [UInt8], size: Int64, descriptor: Int32)
        if transfer == .move && linkForMove(url.path, to: temporary, opened: status) {
            do throws(MediaError) {
                let (digest, size) = try hash(source, buffer: buffer.bytes, name: name)
                let descriptor = dup(source)
                guard descriptor >= 0 else {
                    throw MediaError(.fileSystem, resource: name, reason: "could not keep the file open (\(FileIO.lastError()))")
                }
                written = (digest, size, descriptor)
            } catch {
                unlink(temporary)
                throw error
            }
        } else {
            written = try copy(source, to: temporary, buffer: buffer.bytes, name: name)
        }
        var handedOver = false
        defer {
            if !handedOver {
                close(written.descriptor)
                unlink(temporary)
            }
        }
        var info: MediaInfo?
        var renditions: [Rendition] = []
        if let validation {
            // Exactly the bytes written, from the page cache.
            (info, renditions) = try MediaInspector.inspect(path: temporary, name: name, renditions: validation)
        }
        let hash = Hex.encode(written.digest)
        if isStored(hash, size: written.size) {
            // Fresh mtime: a collection running with a grace period will not take it before the
            // event that references it commits.
            utimensat(AT_FDCWD, path(for: hash), nil, 0)
            return StagedFile(resource: StoredResource(hash: hash, size: written.size, isNew: false), info: info, renditions: renditions)
        }
        let writer = writers.withLock { writers in
            if let writer = writers[hash] { return writer }
            writers[hash] = index
            return index
        }
        guard writer == index else {
            return StagedFile(
                resource: StoredResource(hash: hash, size: written.size, isNew: false), info: info, renditions: renditions, storedBy: writer
            )
        }
        _ = photoledger_start_writeback(written.descriptor, 0, 0)
        handedOver = true
        flusher.submit(written.descriptor, for: index, name: name)
        return StagedFile(
            resource: StoredResource(hash: hash, size: written.size, isNew: true), info: info, renditions: renditions, temporary: temporary)
    }

    /// Whether a regular file of `size` bytes is stored under `hash`.
    private func isStored(_ hash: String, size: Int64) -> Bool {
        guard let existing = FileIO.status(path(for: hash)) else { return false }
        return (existing.st_mode & S_IFMT) == S_IFREG && Int64(existing.st_size) == size
    }

    /// Copies `source` to a new file at `path` through `buffer` while hashing, starting the
    /// writeback of a large file as it goes; returns the digest, the size and the still open,
    /// not yet flushed file. On failure the partial file is removed.
    private func copy(
        _ source: Int32, to path: String, buffer: UnsafeMutableRawBufferPointer, name: String
    ) throws(MediaError) -> (digest: [UInt8], size: Int64, descriptor: Int32) {
        let target = try FileIO.open(path, O_WRONLY | O_CREAT | O_EXCL, name: name)
        do throws(MediaError) {
            var digest = SHA256()
            var size: Int64 = 0
            var writtenBack: Int64 = 0
            while true {
                let count = try FileIO.read(source, into: buffer, name: name)
                if count == 0 { break }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                digest.update(chunk)
                try FileIO.write(target, chunk, name: name)
                size += Int64(count)
                if size - writtenBack >= Self.writebackStep {
                    _ = photoledger_start_writeback(target, writtenBack, size - writtenBack)
                    writtenBack = size
                }
            }
            return (digest.finalize(), size, target)
        } catch {
            close(target)
            unlink(path)
            throw error
        }
    }

    /// The SHA-256 and size of the file `descriptor`, read through `buffer`.
    private func hash(_ descriptor: Int32, buffer: UnsafeMutableRawBufferPointer, name: String) throws(MediaError) -> ([UInt8], Int64) {
        var digest = SHA256()
        var size: Int64 = 0
        while true {
            let count = try FileIO.read(descriptor, into: buffer, name: name)
            if count == 0 { break }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            size += Int64(count)
        }
        return (digest.finalize(), size)
    }

    /// Gives every flushed temporary file of a batch its hash name, then flushes each fan-out
    /// directory that holds a file of the batch (and the store's directory when a fan-out was
    /// created) once. A failure fails the files it concerns.
    private func install(_ results: inout [Result<StagedFile, MediaError>], names: [String], concurrency: Int) {
        var members: [String: [Int]] = [:]  // fan-out → the files of the batch named in it
        var ready = Set<String>()
        var createdFanOut = false
        for index in results.indices {
            guard case .success(var staged) = results[index] else { continue }
            let fanOut = String(staged.resource.hash.prefix(2))
            if let temporary = staged.temporary {
                do throws(MediaError) {
                    if !ready.contains(fanOut) {
                        if try FileIO.makeDirectory("\(root)/\(fanOut)", name: names[index]) { createdFanOut = true }
                        ready.insert(fanOut)
                    }
                    if isStored(staged.resource.hash, size: staged.resource.size) {  // stored meanwhile by another ingest
                        unlink(temporary)
                        staged.resource.isNew = false
                    } else if rename(temporary, path(for: staged.resource.hash)) != 0 {
                        throw MediaError(
                            .fileSystem, resource: names[index], reason: "could not rename into the store (\(FileIO.lastError()))")
                    }
                    staged.temporary = nil
                    results[index] = .success(staged)
                } catch {
                    unlink(temporary)
                    results[index] = .failure(error)
                    continue
                }
            }
            members[fanOut, default: []].append(index)
        }
        let directories = Array(members.keys) + (createdFanOut ? [""] : [])
        let synced = ParallelWork.map(directories, concurrency: concurrency) { (fanOut: String) throws(MediaError) in
            try FileIO.syncDirectory(
                fanOut.isEmpty ? self.root : "\(self.root)/\(fanOut)", name: fanOut.isEmpty ? self.directory.lastPathComponent : fanOut)
        }
        for (fanOut, result) in zip(directories, synced) {
            guard case .failure(let error) = result else { continue }
            for index in fanOut.isEmpty ? Array(members.values.joined()) : members[fanOut] ?? [] { results[index] = .failure(error) }
        }
    }
}

/// A page-aligned buffer that one worker of a batch reuses for every file it handles.
final class ChunkBuffer {
    let bytes: UnsafeMutableRawBufferPointer

    init(byteCount: Int) { bytes = .allocate(byteCount: byteCount, alignment: 4096) }

    deinit { bytes.deallocate() }
}

/// Flushes (`fsync`) and closes the files of a batch on threads of its own as they are handed
/// over, so that the threads that copy and hash never wait for the disk, and many flushes are in
/// flight at once (the file system commits them together). At most `capacity` files wait.
final class Flusher: Sendable {
    private struct Item: Sendable {
        let index: Int
        let descriptor: Int32
        let name: String
    }

    private let state = Mutex<(waiting: [Item?], failures: [Int: MediaError])>(([], [:]))
    private let available = DispatchSemaphore(value: 0)
    private let space: DispatchSemaphore
    private let stopped = DispatchSemaphore(value: 0)
    private let threads: Int

    init(threads: Int, capacity: Int) {
        self.threads = threads
        space = DispatchSemaphore(value: capacity)
        for _ in 0..<threads { Thread { self.drain() }.start() }
    }

    /// Queues an open file for `fsync` and `close`; waits while `capacity` files are queued.
    func submit(_ descriptor: Int32, for index: Int, name: String) {
        space.wait()
        state.withLock { $0.waiting.append(Item(index: index, descriptor: descriptor, name: name)) }
        available.signal()
    }

    /// Waits until every queued file is flushed and closed, stops the threads, and returns the
    /// failures by file index. Call once, after the last `submit`.
    func finish() -> [Int: MediaError] {
        for _ in 0..<threads {
            state.withLock { $0.waiting.append(nil) }
            available.signal()
        }
        for _ in 0..<threads { stopped.wait() }
        return state.withLock { $0.failures }
    }

    private func drain() {
        while true {
            available.wait()
            guard let item = state.withLock({ $0.waiting.removeFirst() }) else {
                stopped.signal()
                return
            }
            if fsync(item.descriptor) != 0 {
                let error = MediaError(.fileSystem, resource: item.name, reason: "could not fsync (\(FileIO.lastError()))")
                state.withLock { $0.failures[item.index] = error }
            }
            close(item.descriptor)
            space.signal()
        }
    }
}
