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

    /// The query that selects, in one library, the blobs ``ServerStore/collectBlobs(library:storedBefore:dryRun:)``
    /// takes out (hash and size, by hash), written once for every backend: `library` and
    /// `cutoff` are the backend's placeholders for the library's identifier and the cutoff (Unix
    /// milliseconds), `locking` the clause that locks the selected rows of `blobs b` until the
    /// transaction ends (empty where the transaction holds the whole database already). The
    /// objects' claims (`server_objects`) say which objects a library's log holds.
    static func collectableBlobsSQL(library: String, cutoff: String, locking: String = "") -> String {
        """
        SELECT b.sha256, b.size FROM blobs b
        WHERE b.library_id = \(library) AND b.stored_at < \(cutoff)
          AND EXISTS (SELECT 1 FROM blob_references r WHERE r.library_id = b.library_id AND r.sha256 = b.sha256)
          AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.library_id = b.library_id AND s.sha256 = b.sha256)
          AND NOT EXISTS (
              SELECT 1 FROM blob_references r
              WHERE r.library_id = b.library_id AND r.sha256 = b.sha256
                AND NOT EXISTS (
                    SELECT 1 FROM server_events e
                    WHERE e.library_id = r.library_id AND e.object_id = r.object_id AND e.type = 'asset.purged')
                AND (r.recorded_at >= \(cutoff) OR EXISTS (
                    SELECT 1 FROM server_objects o WHERE o.library_id = r.library_id AND o.object_id = r.object_id)))
        ORDER BY b.sha256
        """ + (locking.isEmpty ? "" : "\n" + locking)
    }
}
