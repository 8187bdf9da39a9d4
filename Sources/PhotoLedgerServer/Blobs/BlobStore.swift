import Foundation
import LedgerCore

/// Where the server keeps blob bytes: content-addressed, each blob named by the SHA-256 of its
/// bytes (64 lowercase hex digits). A blob gets its name only after its bytes were hashed and
/// found to match it, so a stored blob is always complete and verified.
///
/// ``BlobDirectory`` keeps files on a local file system (one server); ``S3BlobStore`` keeps
/// objects in S3-compatible storage, which several server processes share.
public protocol BlobStore: Sendable {
    /// Starts an upload of at most `limit` bytes of the blob that claims the name `hash`: the
    /// name it will have if its bytes hash to it (checked at ``BlobUpload/commit(as:)``).
    func beginUpload(of hash: String, limit: Int64) throws -> any BlobUpload
    /// The blob's bytes from byte `offset` on (0 for all of them, less than the blob's size
    /// otherwise), ready to stream out, or nil when the store does not hold it.
    func content(of hash: String, from offset: Int64) throws -> BlobContent?
    /// Deletes the blob named `hash`; deleting a blob the store does not hold succeeds.
    func remove(_ hash: String) throws
    /// Whether the store holds the blob named `hash` (asked after an upload, under the lock
    /// that the deletion of retired blobs takes: see `ServerStore.recordBlob`).
    func holds(_ hash: String) throws -> Bool
    /// Removes what uploads interrupted by a crash left behind, before the server serves, and takes
    /// up the unfinished resumable uploads it keeps (their idle time counts from `now`, Unix
    /// milliseconds); returns where it looked and how many it removed (nil when the store keeps
    /// nothing of the kind).
    func removeLeftoverUploads(now: UInt64) -> (place: String, removed: Int)?

    /// The bytes held of the unfinished resumable upload `key`, 0 when there is none; counts as
    /// a use of it at `now` (Unix milliseconds).
    func heldBytes(of key: PartialUploadKey, now: UInt64) throws -> Int64
    /// Continues the resumable upload `key` of a blob of `length` bytes with bytes from `offset`
    /// (0 starts it). The upload returned takes the bytes from there on; its ``BlobUpload/size``
    /// counts from the blob's start. Released before it holds `length` bytes, it keeps what
    /// arrived for the next request; ``BlobUpload/commit(as:)`` checks the hash over the whole
    /// blob and stores it, or discards the unfinished upload when the bytes do not hash to its
    /// name. A newer request for the same key takes the upload over from an older one that is
    /// still receiving (a client that reconnected): the older one fails.
    func resumeUpload(_ key: PartialUploadKey, from offset: Int64, length: Int64, now: UInt64) throws(UploadResumeRefusal) -> any BlobUpload
    /// Removes the unfinished uploads not used for `idleMilliseconds` at `now` (Unix
    /// milliseconds), except those receiving bytes; returns how many.
    func collectAbandonedUploads(now: UInt64, idleMilliseconds: UInt64) -> Int
}

/// Names an unfinished resumable upload: one per library, blob and device.
public struct PartialUploadKey: Hashable, Sendable, CustomStringConvertible {
    /// The library's row identifier in the server's store.
    public var libraryID: Int64
    /// The device uploading.
    public var device: DeviceID
    /// The name the blob claims (64 lowercase hex digits).
    public var hash: String

    /// Creates a key.
    public init(libraryID: Int64, device: DeviceID, hash: String) {
        self.libraryID = libraryID
        self.device = device
        self.hash = hash
    }

    public var description: String { "upload of \(hash) by \(device.rawValue) to library \(libraryID)" }
}

/// Why a resumable upload cannot continue as asked.
public enum UploadResumeRefusal: Error, Equatable, Sendable {
    /// The request starts at another byte than the store holds.
    case offsetMismatch(held: Int64)
    /// The store cannot keep resumable uploads.
    case unsupported
    /// The storage failed.
    case io(String)
}

extension BlobStore {
    public func removeLeftoverUploads(now: UInt64) -> (place: String, removed: Int)? { nil }
    public func heldBytes(of key: PartialUploadKey, now: UInt64) throws -> Int64 { 0 }
    public func resumeUpload(_ key: PartialUploadKey, from offset: Int64, length: Int64, now: UInt64) throws(UploadResumeRefusal)
        -> any BlobUpload
    { throw .unsupported }
    public func collectAbandonedUploads(now: UInt64, idleMilliseconds: UInt64) -> Int { 0 }

    /// The blob's bytes, ready to stream out, or nil when the store does not hold it.
    public func content(of hash: String) throws -> BlobContent? { try content(of: hash, from: 0) }

    /// The blob's first bytes, at most `count` (fewer when it is shorter), or nil when the store
    /// does not hold it.
    public func prefix(of hash: String, count: Int) throws -> [UInt8]? {
        guard let content = try content(of: hash) else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        switch content {
        case .file(let descriptor, let offset, let size):
            defer { close(descriptor) }
            let wanted = Int(min(Int64(count), size))
            while filled < wanted {
                let read = bytes.withUnsafeMutableBytes {
                    pread(descriptor, $0.baseAddress! + filled, wanted - filled, off_t(offset) + off_t(filled))
                }
                guard read > 0 else { break }
                filled += read
            }
        case .stream(let stream):
            defer { stream.cancel() }
            while filled < count {
                let read = try bytes.withUnsafeMutableBytes {
                    try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]))
                }
                guard read > 0 else { break }
                filled += read
            }
        }
        return Array(bytes[..<filled])
    }
}

/// A blob being uploaded: bytes are hashed as they arrive; ``commit(as:)`` names the blob only
/// when they hash to that name, and an upload that is released uncommitted leaves nothing.
public protocol BlobUpload: AnyObject {
    /// The bytes received so far.
    var size: Int64 { get }
    /// Takes a chunk of the blob.
    func append(_ chunk: UnsafeRawBufferPointer) throws(BlobUploadFailure)
    /// Checks the hash and stores the blob as `hash`; returns false when the store held an
    /// identical blob already.
    func commit(as hash: String) throws(BlobUploadFailure) -> Bool
}

/// Why an upload failed.
public enum BlobUploadFailure: Error, Equatable, Sendable {
    /// More bytes than the limit arrived.
    case tooLarge(limit: Int64)
    /// The bytes do not hash to the blob's name.
    case hashMismatch(actual: String)
    /// The storage failed (the file system, or the object store).
    case io(String)
    /// A newer request of the same device took the resumable upload over.
    case superseded
}

/// A stored blob's bytes, as the HTTP layer streams them.
public enum BlobContent {
    /// `size` bytes of an open file (owned by the receiver) from `offset`.
    case file(descriptor: Int32, offset: Int64, size: Int64)
    /// Bytes read piece by piece while they are sent.
    case stream(any BlobStream)
}

/// Bytes of a known size read piece by piece, never held whole in memory.
public protocol BlobStream: AnyObject, Sendable {
    /// The number of bytes the stream gives in all.
    var size: Int64 { get }
    /// Reads the next bytes into `buffer`; returns how many (0 only at the end).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Stops the stream early (the client went away); reading after it fails.
    func cancel()
}
