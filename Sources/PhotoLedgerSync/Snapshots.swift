import Foundation
import LedgerCore
import PhotoLedger
import SyncProtocol
import SyncTransport

/// What uploading a snapshot did.
public struct SnapshotUpload: Sendable, Hashable, CustomStringConvertible {
    /// The server's record of the snapshot.
    public var record: SnapshotRecord
    /// Whether the blob was new to the server (false: the server held these bytes already,
    /// from this device or from another that folded the same log).
    public var uploadedBytes: Bool

    public var description: String {
        "snapshot at server position \(record.position): blob \(Hex.encode(record.hash)) (\(record.size) bytes"
            + (uploadedBytes ? ")" : ", already on the server)")
    }
}

extension SyncEngine {
    // MARK: Snapshots

    /// Takes a snapshot of this device's folded state at its pull position and uploads it:
    /// the bytes as a blob named by their SHA-256, then the offer (position, chain value, blob).
    ///
    /// The device must be up to date: run ``sync(progress:)`` first (this syncs nothing). The
    /// server accepts snapshots from `readWrite` devices only, at a position its log holds with
    /// the same chain value there.
    ///
    /// - Throws: ``PhotoLibraryError`` `.changeNotSupported` when the device is not up to date
    ///   or the server refused the snapshot (with its reason); ``SyncError`` for transport and
    ///   access failures (`accessForbidden` for an `addOnly` or `readOnly` token).
    @discardableResult
    public func uploadSnapshot() async throws -> SnapshotUpload {
        let scope = try await bind()
        guard scope == .readWrite else {
            throw SyncError.accessForbidden(
                "this device's token is \(scope.rawValue): only a readWrite device may upload snapshots of the library")
        }
        let snapshot = try replica.makeSnapshot()
        let name = Hex.encode(snapshot.hash)
        let response = try await send(
            HTTPRequest(
                method: .put, url: remote.url(SyncRoutes.blob(library: remote.libraryName, hash: name)),
                headers: authorized(["Content-Type": "application/octet-stream"]), body: .bytes(snapshot.bytes), timeout: .seconds(3600)))
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        do {
            let record = try await exchange(
                .post, SyncRoutes.snapshots(library: remote.libraryName),
                SnapshotOffer(position: snapshot.position, chainHash: snapshot.chainHash, hash: snapshot.hash), as: SnapshotRecord.self)
            return SnapshotUpload(record: record, uploadedBytes: response.status == 201)
        } catch SyncError.serverError(409, let message) {
            throw PhotoLibraryError(.changeNotSupported, "the server refused the snapshot: \(message)")
        }
    }

    /// The server's newest snapshot of the library, or nil when it has none.
    public func latestSnapshot() async throws -> SnapshotRecord? {
        do {
            return try await exchange(
                .get, SyncRoutes.latestSnapshot(library: remote.libraryName), nil as PushRequest?, as: SnapshotRecord.self,
                notFound: .invalidResponse("no snapshot"))
        } catch SyncError.invalidResponse("no snapshot") {
            return nil
        }
    }

    /// Starts this library — new, holding no event — from the server's newest snapshot, so it
    /// is usable at once; a following pull brings only the events after the snapshot.
    ///
    /// The snapshot is checked against the server's chain at its position (its event and chain
    /// value there, and the value before) and installed in one transaction; its content is a
    /// peer's claim, verified later by ``fetchHistory(maximumPages:progress:)``. Returns nil,
    /// changing nothing, when the library holds events already, the server has no snapshot,
    /// or the token cannot pull.
    ///
    /// - Throws: ``PhotoLibraryError`` when the snapshot does not match the server's chain, is
    ///   damaged, or cannot be opened (nothing is installed: sync again to replay the whole
    ///   history instead, with the engine's `bootstrapFromSnapshot` off).
    @discardableResult
    public func bootstrapFromSnapshot() async throws -> SnapshotBootstrapStatus? {
        let scope = try await bind()
        guard scope != .addOnly, try replica.isEmpty() else { return nil }
        // The server retires a snapshot when a newer one arrives or a purge follows it, deleting
        // its blob: one retired between the record and the download is asked for again.
        var found: (SnapshotRecord, [UInt8])?
        for _ in 0..<3 {
            guard let record = try await latestSnapshot() else { return nil }
            let response = try await send(
                HTTPRequest(
                    method: .get, url: remote.url(SyncRoutes.blob(library: remote.libraryName, hash: Hex.encode(record.hash))),
                    headers: authorized([:]), timeout: .seconds(3600)))
            if response.status == 404 { continue }
            guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
            found = (record, response.body.bytes)
            break
        }
        guard case let (record, bytes)? = found else {
            throw PhotoLibraryError(
                .changeNotSupported, "the server retired its snapshots while this device was downloading them (newer snapshots or purges)")
        }
        let snapshot = try LibrarySnapshot(bytes: bytes)
        guard snapshot.position == record.position, snapshot.chainHash == record.chainHash else {
            throw PhotoLibraryError(
                .internalError,
                "the snapshot's header does not match the server's record of it (position \(record.position)): not installed")
        }
        // The server's events at the position and just before it: the chain value the snapshot
        // names, and the one its event links after.
        let since = max(0, record.position - 2)
        let (page, _) = try await pullPage(since: since, limit: Int(record.position - since))
        let events = try sequenced(page)
        guard let event = events.first(where: { $0.serverSequence == record.position }) else {
            throw SyncError.invalidResponse("the server did not send its event at the snapshot's position \(record.position)")
        }
        let previous = record.position == 1 ? HashChain.origin : events.first { $0.serverSequence == record.position - 1 }?.serverChainHash
        guard let previous else {
            throw SyncError.invalidResponse("the server did not send its event before the snapshot's position \(record.position)")
        }
        try replica.installSnapshot(
            snapshot, expectedHash: record.hash, sourceDevice: record.device, event: event, previousChainHash: previous)
        return try replica.bootstrapStatus()
    }

    /// Fetches the history before the snapshot this library was started from, in pages, into
    /// the library's archive (each event checked against the server's chain), at most
    /// `maximumPages` pages; once all of it is here, refolds it and compares the result with
    /// the snapshot, repairing any difference (the refold wins). Returns the status after, or
    /// nil when the library was not started from a snapshot.
    ///
    /// The library stays usable meanwhile; an interrupted fetch goes on where it stopped.
    @discardableResult
    public func fetchHistory(maximumPages: Int = .max, progress: (@Sendable (SyncProgress) -> Void)? = nil) async throws
        -> SnapshotBootstrapStatus?
    {
        guard var status = try replica.bootstrapStatus() else { return nil }
        if status.isVerified { return status }
        var pages = 0
        var bytes: Int64 = 0
        while status.fetchedThrough < status.position, pages < maximumPages {
            try Task.checkCancellation()
            let limit = Int(min(Int64(options.pullPageSize), status.position - status.fetchedThrough))
            let (page, moved) = try await pullPage(since: status.fetchedThrough, limit: limit)
            let events = try sequenced(page).filter { $0.serverSequence <= status.position }
            guard !events.isEmpty else {
                throw SyncError.invalidResponse(
                    "the server sent no events after position \(status.fetchedThrough), before its snapshot at \(status.position)")
            }
            try replica.appendHistory(events)
            pages += 1
            bytes += moved
            status = try replica.bootstrapStatus()!
            progress?(
                SyncProgress(
                    phase: .fetchingHistory, completed: Int(status.fetchedThrough), total: Int(status.position), bytes: bytes))
        }
        guard status.fetchedThrough >= status.position else { return status }
        return try replica.verifySnapshot()
    }

    /// The events of a pull page with their server positions and chain values, content hashes
    /// checked.
    func sequenced(_ page: PullResponse) throws -> [SequencedEvent] {
        if let bad = page.events.first(where: { !$0.hasValidHash }) {
            throw SyncError.invalidResponse("event \(bad.id.uuidString) does not match its content hash")
        }
        return try page.events.map { wire in
            guard let sequence = wire.serverSequence, let chainHash = wire.chainHash else {
                throw SyncError.invalidResponse("event \(wire.id.uuidString) of a pull page has no server sequence or chain value")
            }
            return SequencedEvent(event: wire.event, serverSequence: sequence, serverChainHash: chainHash)
        }
    }
}
