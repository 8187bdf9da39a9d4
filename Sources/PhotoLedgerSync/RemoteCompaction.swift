import Foundation
import PhotoLedger
import SyncProtocol

/// What ``SyncEngine/compactAcknowledgedEvents()`` did: the watermark the server reported and
/// the library's compaction up to it.
public struct AcknowledgedCompaction: Sendable, Hashable {
    /// The server's answer: the position every counted device has pulled, the library's last
    /// server sequence and how many devices were counted.
    public let watermark: CompactionWatermark
    /// What the library's compaction did with that watermark.
    public let report: CompactionReport

    /// Creates a result.
    public init(watermark: CompactionWatermark, report: CompactionReport) {
        self.watermark = watermark
        self.report = report
    }
}

extension SyncEngine {
    /// Asks the server how far every device of the library has pulled.
    ///
    /// The devices counted are those that can still pull (a token not revoked, with the
    /// `readWrite` or `readOnly` scope); a device that never pulled holds the watermark at 0.
    /// A device's position is recorded when it asks for events after it, which every sync does
    /// at its end.
    ///
    /// - Throws: ``SyncError/serverUnreachable(_:)`` when the server cannot be reached,
    ///   ``SyncError/authenticationRefused(_:)`` for an unknown or revoked token,
    ///   ``SyncError/accessForbidden(_:)`` when the token is for another library (or the library
    ///   does not exist) or may not pull, ``SyncError/invalidResponse(_:)`` when the server does
    ///   not offer the watermark or answers something malformed.
    public func compactionWatermark() async throws -> CompactionWatermark {
        let path = SyncRoutes.watermark(library: remote.libraryName)
        return try await exchange(
            .get, path, nil as PushRequest?, as: CompactionWatermark.self,
            notFound: .invalidResponse(
                "the server does not report a compaction watermark (\(path) is unknown to it; it may be an older version); "
                    + "update the server, or compact up to a server sequence read from its device list"))
    }

    /// Archives this library's events that every device of the library has pulled: fetches
    /// ``compactionWatermark()`` and runs ``PhotoLibrary/compact(upToServerSequence:)`` with it.
    ///
    /// Sync first: only events this device has received and the server has acknowledged move
    /// to the archive, and the devices' positions are those of their last syncs. Change tokens
    /// older than the new horizon expire.
    ///
    /// - Throws: the errors of ``compactionWatermark()`` (nothing is archived then), and those
    ///   of ``PhotoLibrary/compact(upToServerSequence:)``.
    @discardableResult
    public func compactAcknowledgedEvents() async throws -> AcknowledgedCompaction {
        let watermark = try await compactionWatermark()
        let report = try library.compact(upToServerSequence: watermark.watermark)
        return AcknowledgedCompaction(watermark: watermark, report: report)
    }
}
