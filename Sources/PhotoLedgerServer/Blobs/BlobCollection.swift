import Foundation
import LedgerCore

/// What ``BlobCollection/collect(store:blobs:library:gracePeriod:now:dryRun:)`` did.
public struct BlobCollectionReport: Sendable {
    /// The blobs taken out of their library (or that would be, in a dry run).
    public var collected: [CollectedBlob] = []
    /// How many blobs were deleted from the blob store (none in a dry run): those no library
    /// holds any more, the collected ones and any left queued by an earlier attempt.
    public var deleted = 0
    /// Blobs the blob store could not delete, with why: they stay queued for the next attempt.
    public var failures: [(hash: String, reason: String)] = []

    /// The bytes of the collected blobs.
    public var collectedBytes: Int64 { collected.reduce(0) { $0 + $1.size } }

}

/// Server-side blob garbage collection: a mark from the store's references, then a sweep of the
/// blob store.
///
/// The server cannot read payloads, so the writing devices declare, before they push events,
/// which blobs the events about each object refer to (`POST …/blobs/references`). A blob a
/// library holds stays while a reference keeps it — its object not purged, and events about it
/// stored or the reference declared within the grace period — or while a snapshot the library
/// keeps names it. The others, stored before the grace period, are taken out of the library
/// (``ServerStore/collectBlobs(library:storedBefore:dryRun:)``) and deleted from the blob store
/// once no library holds them. A blob no reference was ever declared for is kept: its use is
/// unknown.
public enum BlobCollection {
    /// The grace period of `photoledger-server admin collect-blobs` by default: a day, longer than
    /// any upload waits for its push.
    public static let defaultGracePeriod: TimeInterval = 86_400

    /// Collects the blobs of `library` (every library when nil) that nothing keeps and that
    /// were stored more than `gracePeriod` seconds before `now` (Unix milliseconds), then
    /// deletes from `blobs` every blob no library holds any more. With `dryRun`, only lists
    /// what would be collected.
    public static func collect(
        store: any ServerStore, blobs: any BlobStore, library: String?, gracePeriod: TimeInterval, now: UInt64, dryRun: Bool
    ) throws -> BlobCollectionReport {
        let grace = UInt64(max(0, min(gracePeriod, 1e12)) * 1000)
        let cutoff = now > grace ? now - grace : 0
        var report = BlobCollectionReport()
        report.collected = try store.collectBlobs(library: library, storedBefore: cutoff, dryRun: dryRun)
        if !dryRun { (report.deleted, report.failures) = try deleteRetired(store: store, blobs: blobs) }
        return report
    }

    /// Deletes the queued blobs that no library holds from `blobs` (see
    /// ``ServerStore/retiredBlobs(limit:)``), 100 at a time; a blob whose deletion fails stays
    /// queued. Returns how many were deleted and the failures.
    public static func deleteRetired(store: any ServerStore, blobs: any BlobStore) throws -> (
        deleted: Int, failures: [(hash: String, reason: String)]
    ) {
        var deleted = 0
        var failures: [(hash: String, reason: String)] = []
        while true {
            let hashes = try store.retiredBlobs(limit: 100)
            guard !hashes.isEmpty else { break }
            var failed = false
            for hash in hashes {
                do {
                    // Under the blob's lock: an upload of the same bytes meanwhile is kept or told to upload again.
                    if try store.deleteRetiredBlob(hash, removing: { try blobs.remove(Hex.encode(hash)) }) { deleted += 1 }
                } catch {
                    failed = true
                    failures.append((Hex.encode(hash), "\(error)"))
                }
            }
            if failed { break }
        }
        return (deleted, failures)
    }
}
