import CFileSync
import Foundation
import LedgerCore
import SyncProtocol
import Synchronization

/// The unfinished resumable uploads of a ``BlobDirectory``: one file per library, blob and device
/// in `<root>/tmp/partial`, named `<library row>-<hash>-<device>`, with the bytes received so far
/// from the blob's start. Each is hashed as its bytes arrive (the digest's state is kept in
/// memory and continued by the next request; after a restart it is computed again from the file
/// once), and moved into place only once its whole hashes to its name.
final class PartialFiles: Sendable {
    /// One unfinished upload.
    final class Entry: Sendable {
        struct State {
            /// The bytes in the file.
            var held: Int64
            /// The blob's size the upload began with; nil when it was taken up after a restart.
            var length: Int64?
            /// The digest of the held bytes; nil until it is computed from the file again.
            var digest: ResumableDigest?
            /// When it was last used (the server clock, Unix milliseconds).
            var touched: UInt64
            /// The request that may write (newer requests take over from older ones).
            var writer: UInt64 = 0
            /// Whether that request's upload is still open.
            var receiving = false
            /// Whether the file was removed (completed or discarded).
            var gone = false
        }

        let key: PartialUploadKey
        let path: String
        let state: Mutex<State>

        init(key: PartialUploadKey, path: String, state: State) {
            self.key = key
            self.path = path
            self.state = Mutex(state)
        }
    }

    let folder: String
    private let entries = Mutex<(byKey: [PartialUploadKey: Entry], nextWriter: UInt64)>(([:], 1))

    init(folder: String) { self.folder = folder }

    /// The file of `key`.
    func path(for key: PartialUploadKey) -> String { "\(folder)/\(key.libraryID)-\(key.hash)-\(key.device.rawValue)" }

    /// The key a file name stands for, or nil when it is not one of these names.
    static func key(fromName name: String) -> PartialUploadKey? {
        let parts = name.split(separator: "-", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let library = Int64(parts[0]), String(library) == parts[0], BlobHash.isValid(String(parts[1])),
            DeviceID.problem(with: String(parts[2])) == nil
        else { return nil }
        return PartialUploadKey(libraryID: library, device: DeviceID(String(parts[2])), hash: String(parts[1]))
    }

    /// The entry of `key`: the one in memory, or one for its file when an earlier run left it.
    private func entry(_ key: PartialUploadKey, now: UInt64, creating: Bool) -> Entry? {
        entries.withLock { entries in
            if let entry = entries.byKey[key] { return entry }
            let path = path(for: key)
            var status = stat()
            let exists = stat(path, &status) == 0
            guard exists || creating else { return nil }
            let entry = Entry(
                key: key, path: path,
                state: .init(held: exists ? Int64(status.st_size) : 0, length: nil, digest: exists ? nil : ResumableDigest(), touched: now))
            entries.byKey[key] = entry
            return entry
        }
    }

    private func nextWriter() -> UInt64 {
        entries.withLock { entries in
            defer { entries.nextWriter += 1 }
            return entries.nextWriter
        }
    }

    /// Removes the entry's file and forgets it. Call with the entry's state locked.
    fileprivate func remove(_ entry: Entry, _ state: inout Entry.State) {
        unlink(entry.path)
        state.gone = true
        state.held = 0
        state.receiving = false
        entries.withLock { entries in
            if entries.byKey[entry.key] === entry { entries.byKey[entry.key] = nil }
        }
    }

    /// The bytes held of `key`'s upload (0 when none).
    func held(_ key: PartialUploadKey, now: UInt64) -> Int64 {
        guard let entry = entry(key, now: now, creating: false) else { return 0 }
        return entry.state.withLock { state in
            state.touched = max(state.touched, now)
            return state.gone ? 0 : state.held
        }
    }

    /// Continues (or starts) `key`'s upload of a `length`-byte blob from `offset`.
    func resume(_ key: PartialUploadKey, from offset: Int64, length: Int64, now: UInt64, directory: BlobDirectory)
        throws(UploadResumeRefusal) -> ResumedFileUpload
    {
        let writer = nextWriter()
        while true {
            guard let entry = entry(key, now: now, creating: true) else { continue }
            let outcome = entry.state.withLock { state -> Result<ResumedFileUpload, UploadResumeRefusal>? in
                guard !state.gone else { return nil }  // completed or discarded meanwhile: a new entry
                state.touched = max(state.touched, now)
                // This request takes over: an older one still receiving fails at its next bytes.
                state.writer = writer
                state.receiving = false
                if let began = state.length, began != length || state.held > length {
                    // Another size than the upload began with: its bytes are of another blob.
                    remove(entry, &state)
                    return offset == 0 ? nil : .failure(.offsetMismatch(held: 0))
                }
                guard offset == state.held else { return .failure(.offsetMismatch(held: state.held)) }
                var descriptor = open(entry.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                if descriptor < 0, errno == ENOENT, mkdir(folder, 0o700) == 0 || errno == EEXIST {
                    descriptor = open(entry.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                }
                guard descriptor >= 0 else {
                    return .failure(.io("cannot open an unfinished upload in \(folder): \(String(cString: strerror(errno)))"))
                }
                if state.digest == nil {
                    do {
                        state.digest = try ResumableDigest(file: descriptor, length: state.held)
                    } catch {
                        close(descriptor)
                        remove(entry, &state)
                        return offset == 0 ? nil : .failure(.offsetMismatch(held: 0))
                    }
                }
                state.length = length
                state.receiving = true
                return .success(ResumedFileUpload(files: self, entry: entry, writer: writer, descriptor: descriptor, directory: directory))
            }
            if let outcome { return try outcome.get() }
        }
    }

    /// Removes the uploads idle for `idleMilliseconds` at `now` that are not receiving bytes.
    func collect(now: UInt64, idleMilliseconds: UInt64) -> Int {
        let all = entries.withLock { Array($0.byKey.values) }
        var removed = 0
        for entry in all {
            entry.state.withLock { state in
                guard !state.gone, !state.receiving, now >= state.touched, now - state.touched >= idleMilliseconds else { return }
                remove(entry, &state)
                removed += 1
            }
        }
        return removed
    }

    /// At start: removes the files that belong to no upload (a name that is not one of theirs, a
    /// blob held already per `isStored`) and takes up the others, idle from `now`.
    func adoptLeftovers(now: UInt64, isStored: (String) -> Bool) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return 0 }
        var removed = 0
        for name in names {
            guard let key = Self.key(fromName: name), !isStored(key.hash) else {
                if unlink("\(folder)/\(name)") == 0 { removed += 1 }
                continue
            }
            _ = entry(key, now: now, creating: false)
        }
        return removed
    }
}

/// A request's part of a resumable upload into a directory: its bytes are written after those
/// held and hashed on; released before the blob is whole, the file stays for the next request.
final class ResumedFileUpload: BlobUpload {
    private let files: PartialFiles
    private let entry: PartialFiles.Entry
    private let writer: UInt64
    private var descriptor: Int32
    private let directory: BlobDirectory

    fileprivate init(files: PartialFiles, entry: PartialFiles.Entry, writer: UInt64, descriptor: Int32, directory: BlobDirectory) {
        self.files = files
        self.entry = entry
        self.writer = writer
        self.descriptor = descriptor
        self.directory = directory
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        entry.state.withLock { state in
            if state.writer == writer { state.receiving = false }
        }
    }

    /// The bytes held, from the blob's start.
    var size: Int64 { entry.state.withLock { $0.held } }

    private func checkWriter(_ state: PartialFiles.Entry.State) throws(BlobUploadFailure) {
        guard !state.gone, state.writer == writer else {
            throw .superseded
        }
    }

    func append(_ chunk: UnsafeRawBufferPointer) throws(BlobUploadFailure) {
        try entry.state.withLock { state throws(BlobUploadFailure) in
            try checkWriter(state)
            let length = state.length ?? 0
            guard state.held + Int64(chunk.count) <= length else {
                files.remove(entry, &state)
                throw .tooLarge(limit: length)
            }
            var written = 0
            while written < chunk.count {
                let count = pwrite(descriptor, chunk.baseAddress! + written, chunk.count - written, off_t(state.held) + off_t(written))
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { throw .io("cannot write an unfinished upload: \(String(cString: strerror(errno)))") }
                written += count
            }
            state.digest?.update(chunk)
            let before = state.held
            state.held += Int64(chunk.count)
            if state.held / Writeback.batchBytes != before / Writeback.batchBytes {
                // Each 8 MiB written starts on its way to the disk while more arrives.
                let start = (before / Writeback.batchBytes) * Writeback.batchBytes
                _ = photoledger_start_writeback(descriptor, start, state.held - start)
            }
        }
    }

    func commit(as hash: String) throws(BlobUploadFailure) -> Bool {
        try entry.state.withLock { state throws(BlobUploadFailure) in
            try checkWriter(state)
            let actual = state.digest?.hex ?? ""
            guard actual == hash else {
                files.remove(entry, &state)
                throw .hashMismatch(actual: actual)
            }
            let descriptor = self.descriptor
            self.descriptor = -1
            // Moved into place (or dropped when the blob is there already): the entry is done.
            defer {
                state.gone = true
                state.receiving = false
                files.remove(entry, &state)
            }
            return try directory.place(entry.path, descriptor: descriptor, as: hash)
        }
    }
}
