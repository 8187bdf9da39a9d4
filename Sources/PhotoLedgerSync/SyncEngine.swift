import Foundation
import LedgerCore
import PhotoLedger
import SyncProtocol
import SyncTransport
import Synchronization

/// What a sync is doing, for progress reports.
public struct SyncProgress: Sendable, Equatable {
    /// The step of a sync.
    public enum Phase: String, Sendable {
        /// Sending resources the server lacks.
        case uploadingResources
        /// Sending this device's new events.
        case pushing
        /// Receiving other devices' events.
        case pulling
        /// Receiving resources this device lacks.
        case downloadingResources
        /// Receiving the history before the snapshot this library started from, to verify it.
        case fetchingHistory
    }

    /// The current step.
    public var phase: Phase
    /// Events or resources done in this step.
    public var completed: Int
    /// Events or resources in this step, when known.
    public var total: Int?
    /// Bytes moved in this step: resource bytes, or the request and response bodies of pushes
    /// and pulls as the transport moved them.
    public var bytes: Int64
}

/// What a sync did.
public struct SyncReport: Sendable, Equatable {
    /// Resources uploaded, and their bytes.
    public var uploadedResources = 0
    public var uploadedBytes: Int64 = 0
    /// This device's events the server stored now (duplicates of earlier pushes not counted).
    public var pushedEvents = 0
    /// Events the server refused for good, with its reasons.
    public var rejectedEvents: [String] = []
    /// Events received from other devices that were new here.
    public var pulledEvents = 0
    /// New events kept but not folded (invalid, or needing a newer PhotoLedger), with the
    /// device, type and reason of each.
    public var quarantinedEvents: [String] = []
    /// Events whose verdict changed because of what arrived (an earlier creation of an object).
    public var changedVerdicts = 0
    /// What this device's token allows, as the server said.
    public var scope: ReplicaScope?
    /// Resources that events refer to but the server does not hold (never uploaded by the
    /// device that made the events): they stay missing here, and the rest of the sync goes on.
    public var unavailableResources: [String] = []
    /// Renditions this device made and recorded for the others now (see `ImageManager`).
    public var recordedRenditions = 0
    /// Recorded renditions uploaded now (their bytes are counted in ``uploadedBytes``; they
    /// are not counted in ``uploadedResources``).
    public var uploadedRenditions = 0
    /// Renditions other devices recorded that were downloaded now (their bytes are counted in
    /// ``downloadedBytes``; they are not counted in ``downloadedResources``).
    public var downloadedRenditions = 0
    /// Resources downloaded, and their bytes.
    public var downloadedResources = 0
    public var downloadedBytes: Int64 = 0
    /// The server sequence this device has pulled up to.
    public var cursor: Int64 = 0
    /// What an end-to-end encrypted library's key exchange has to say (awaiting enrolment,
    /// enrolled now, a new key generation, entries the server refused).
    public var encryptionNotes: [String] = []
    /// The snapshot this library was started from and how its verification stands, when it was
    /// started from one.
    public var snapshot: SnapshotBootstrapStatus?
    /// Why the server's snapshot was not used, or is not used yet.
    public var snapshotNotes: [String] = []

    /// An empty report.
    public init() {}
}

/// Syncs a library with a server: record the renditions this device made for the others →
/// push pending events in batches, each after the blobs it refers to that the server lacks
/// (renditions included; a batch the server stored right after the cursor is confirmed from
/// its answer, so this device's own events need not come back) → pull pages
/// since the stored cursor (each page applied in one transaction with the cursor, through the
/// same fold as local changes) → download the renditions other devices recorded → download
/// missing resources (when ``Options/downloadResourcesEagerly``).
///
/// Pulling ends with a page that brings no events, so the server has recorded that this device
/// holds everything up to its cursor: that position is what the library's compaction watermark
/// (``compactionWatermark()``) is made of.
///
/// The outbox is the log itself (this device's events without a server sequence), so a crash
/// loses nothing: the next sync sends what was not acknowledged, and the server ignores
/// duplicates. Objects created offline keep their identifiers everywhere.
public final class SyncEngine: Sendable {
    /// Settings of the engine.
    public struct Options: Sendable {
        /// Events per push request (a batch of 2,000 small events is about 0.5 MB).
        public var pushBatchSize = 2000
        /// Push events in the binary form (`EventBatch`), which costs both sides far less than
        /// JSON. A server that does not take it answers 415, and the engine pushes JSON from then
        /// on; false pushes JSON only.
        public var sendsEventBatches = true
        /// Events per pull page (the server's largest: fewer requests and commits; a page of
        /// 5,000 events and the next one being fetched hold a few megabytes).
        public var pullPageSize = SyncRoutes.maximumPageLimit
        /// Download resources during sync (true) or when first requested (false).
        public var downloadResourcesEagerly = true
        /// Compress request bodies larger than this many bytes.
        public var gzipThreshold = 1024
        /// Resources of at least this many bytes go up as resumable uploads (`…/uploads/{hash}`):
        /// when the connection breaks, the next attempt (a retry, or the next sync) sends only what
        /// the server lacks. Smaller ones go up whole, in one request.
        public var resumableUploadBytes: Int64 = 8 << 20
        /// How many times one resumable upload asks the server where to continue after its
        /// connection broke or another attempt moved ahead, before the sync gives up on it.
        public var resumableUploadAttempts = 8
        /// How many resources are uploaded or downloaded at once (over libcurl's multi interface,
        /// on kept-alive connections).
        public var transferConcurrency = 4
        /// Ask for pull pages in the binary form (`EventPage`), which costs both
        /// sides far less than JSON. A server that does not offer it answers JSON, which is read
        /// as well; false asks for JSON only.
        public var requestsEventPages = true
        /// Exchange the key store's entries in their binary form (`KeyStoreBody`): changes sent
        /// in it, answers asked for in it, up to `KeyStoreBody.maximumChanges` a request. A
        /// server that does not take it answers 415 (the engine sends JSON from then on) or
        /// answers JSON, which is read as well; false exchanges JSON only.
        public var exchangesKeyStoreBodies = true
        /// In an end-to-end encrypted library, send the keys of a push batch's assets in the batch
        /// itself (`EventBatch.keyedContentType`, with ``sendsEventBatches``): the server stores
        /// them with the events in one transaction, and no key store request goes before the
        /// batch. A server that does not take it answers 415, and the engine writes the keys to
        /// the key store before each batch from then on; false always does so.
        public var sendsKeysWithBatches = true
        /// Start a new, empty library from the server's newest snapshot (when it has one)
        /// instead of replaying the whole history: the library is usable once the events after
        /// the snapshot are pulled, and the history before it is fetched after, to verify it.
        public var bootstrapFromSnapshot = false
        /// How many pages of the history before a snapshot each sync fetches (after pulling
        /// and downloading); the snapshot is verified once all of it is here. 0 leaves it to
        /// ``SyncEngine/fetchHistory(maximumPages:progress:)``.
        public var historyPagesPerSync = Int.max

        /// Default options.
        public init() {}
    }

    /// The library being synced.
    public let library: PhotoLibrary
    /// The server and token.
    public let remote: SyncRemote
    let transport: any HTTPTransport
    let options: Options
    /// Set once the server refused a binary push (an older server): JSON from then on.
    private let serverTakesEventBatches = Atomic<Bool>(true)
    /// Set once the server refused a binary change of the key store (an older server): JSON
    /// from then on.
    let serverTakesKeyStoreBodies = Atomic<Bool>(true)
    /// Set once the server refused a push batch carrying keys (an older server): keys go to the
    /// key store before their batch from then on.
    private let serverTakesKeyedBatches = Atomic<Bool>(true)

    /// An engine for `library` and `remote`, over libcurl with retries by default.
    public init(
        library: PhotoLibrary, remote: SyncRemote,
        transport: any HTTPTransport = RetryingTransport(wrapping: CurlTransport(), policy: RetryPolicy(maximumAttempts: 4)),
        options: Options = Options()
    ) {
        self.library = library
        self.remote = remote
        self.transport = transport
        self.options = options
        if !options.downloadResourcesEagerly {
            library.replica.resourceFetcher.value = { [weak self] hash in try self?.downloadBlocking(hash) }
        }
    }

    /// An engine for the remote saved in `library`.
    ///
    /// - Throws: ``SyncError/noRemote`` when none is saved.
    public convenience init(library: PhotoLibrary, transport: any HTTPTransport = RetryingTransport(wrapping: CurlTransport())) throws {
        guard let remote = try SyncRemote.saved(in: library) else { throw SyncError.noRemote }
        self.init(library: library, remote: remote, transport: transport)
    }

    var replica: Replica { library.replica }

    /// The server sequence this device has pulled up to.
    public func cursor() throws -> Int64 { try replica.state().pullCursor }

    /// When this device last finished a sync (Unix milliseconds), or nil.
    public func lastSync() throws -> UInt64? { try replica.state().lastSync }

    /// Runs a full sync as the token's scope allows: learn the library and the scope, then (when
    /// the token may write) upload resources and push, then (when it may read) pull and download
    /// resources. Cancelling the task stops it between requests (and aborts transfers); what was
    /// done stays done.
    ///
    /// An addOnly token uploads and pushes only; a readOnly token pulls only, and this device's
    /// unsent changes are folded out (they can never reach the other devices).
    @discardableResult
    public func sync(progress: (@Sendable (SyncProgress) -> Void)? = nil) async throws -> SyncReport {
        try await sync(progress: progress, historyPages: options.historyPagesPerSync)
    }

    /// A full sync that fetches at most `historyPages` pages of the history before the snapshot
    /// the library was started from (0: none, leaving it to ``fetchHistory(maximumPages:progress:)``).
    func sync(progress: (@Sendable (SyncProgress) -> Void)?, historyPages: Int) async throws -> SyncReport {
        var report = SyncReport()
        let scope = try await bind()
        report.scope = scope
        // With nothing to push, the first page is asked for now, while the key store is read:
        // its events are folded once the keys are here.
        let firstPage = try askForFirstPage(scope: scope)
        defer { firstPage?.request.cancel() }
        // Asset keys go up with the push batches of their assets' events. With nothing to push,
        // this device's entries wait for the pull while the keys it takes are being written.
        let deferred = try await exchangeKeys(&report, assetKeys: scope == .readOnly, deferringPublication: firstPage != nil)
        if scope != .readOnly {
            // Only a readWrite token may push a rendition's record (it changes an existing asset).
            if scope == .readWrite { report.recordedRenditions = try replica.recordRenditions() }
            if !deferred { try await publishKeys(&report, assetKeys: false) }
            try await push(&report, progress)  // each batch's blobs and asset keys go up before it
            if !deferred { try await publishKeys(&report) }  // keys whose events went up before (an interrupted sync)
        }
        if scope != .addOnly {
            var waitForKeys = false
            if options.bootstrapFromSnapshot, try replica.isEmpty() {
                do {
                    _ = try await bootstrapFromSnapshot()
                } catch let needsKeys as SnapshotNeedsKeys {
                    // Nothing is pulled until the snapshot opens: an enrolled device starts from it.
                    report.snapshotNotes.append("\(needsKeys)")
                    waitForKeys = true
                } catch let error as PhotoLibraryError {
                    report.snapshotNotes.append("the server's snapshot was not used (\(error.message)); the whole history is replayed")
                }
            }
            if !waitForKeys { try await pull(&report, progress, firstPage: firstPage) }
            try await exchangeKeys(&report)  // the keys of what was pulled; this device's entries
            try await downloadRenditions(&report, progress)  // before originals, and without them
            if options.downloadResourcesEagerly { try await downloadResources(&report, progress) }
        }
        if scope != .addOnly, historyPages > 0 {
            let before = try replica.bootstrapStatus()
            report.snapshot = try await fetchHistory(maximumPages: historyPages, progress: progress)
            if let before, before.fetchedThrough != report.snapshot?.fetchedThrough {
                // The history's pages told the server positions before this device's cursor: tell
                // it the cursor again, which the library's compaction watermark is made of.
                _ = try await pullPage(since: try cursor(), limit: 1)
            }
        } else {
            report.snapshot = try replica.bootstrapStatus()
        }
        try replica.finishKeyWrite()  // the keys taken are stored when the sync returns
        report.cursor = try cursor()
        try replica.recordSync()
        return report
    }

    /// Asks the server which library this is and what the token allows, and records both: new
    /// events name the library from then on. A server that does not describe libraries (an older
    /// version) is taken to allow reading and writing.
    func bind() async throws -> ReplicaScope {
        let path = SyncRoutes.library(remote.libraryName)
        let info: LibraryInfo
        do {
            info = try await exchange(.get, path, nil as PushRequest?, as: LibraryInfo.self, notFound: .invalidResponse("legacy"))
        } catch SyncError.invalidResponse("legacy") {
            return try replica.state().scope ?? .readWrite
        }
        let scope: ReplicaScope =
            switch info.scope {
            case .readWrite: .readWrite
            case .addOnly: .addOnly
            case .readOnly: .readOnly
            }
        do {
            try replica.bind(to: info.libraryID, scope: scope)
        } catch let error as PhotoLibraryError {
            throw SyncError.invalidRemote(error.message)
        }
        return scope
    }

    // MARK: Steps

    /// Sends the blobs `events` refer to that the server does not have (resources, recorded
    /// renditions), before the events themselves are pushed; in an end-to-end encrypted library
    /// the keys of the events' assets (which name the blobs just sealed) go up after them, with
    /// the events (returned) or just before them (see ``assetKeys(of:_:)``).
    func uploadBlobs(of events: [Replica.PendingEvent], _ report: inout SyncReport, _ progress: (@Sendable (SyncProgress) -> Void)?)
        async throws -> [KeyChange]
    {
        guard !events.isEmpty else { return [] }
        let blobs = try replica.blobReferences(of: events.map(\.event))
        let hashes = blobs.resources.union(blobs.renditions).sorted()
        guard !hashes.isEmpty else {
            return replica.isEncrypted ? try await assetKeys(of: events, &report) : []
        }
        // The blobs of each object's events, declared to the server before they are uploaded and
        // the events pushed: what its blob garbage collection keeps them by.
        try await declareBlobReferences(blobs.byObject)
        let missing = try await exchange(
            .post, SyncRoutes.missingBlobs(library: remote.libraryName), MissingBlobsRequest(hashes: hashes),
            as: MissingBlobsResponse.self
        ).missing
        let files = try missing.compactMap { hash -> (hash: String, file: URL)? in
            guard let file = replica.resourceFile(hash) else {
                // A rendition is derived: one no longer here (collected as garbage) is not
                // sent, and the devices that need it make their own from the original.
                if blobs.renditions.contains(hash) { return nil }
                throw PhotoLibraryError(
                    .missingResource, "resource \(hash) of a pending change is missing on this device; it cannot be uploaded")
            }
            return (hash: hash, file: file)
        }
        var done = 0
        try await Self.concurrently(files, limit: options.transferConcurrency) { resource in
            (hash: resource.hash, size: try await self.upload(resource.hash, from: resource.file).size)
        } each: { upload in
            done += 1
            if blobs.renditions.contains(upload.hash) { report.uploadedRenditions += 1 } else { report.uploadedResources += 1 }
            report.uploadedBytes += upload.size
            progress?(SyncProgress(phase: .uploadingResources, completed: done, total: missing.count, bytes: report.uploadedBytes))
        }
        return replica.isEncrypted ? try await assetKeys(of: events, &report) : []  // the asset keys name the blobs just sealed
    }

    /// Tells the server which blobs the events about each object refer to (the server cannot
    /// read payloads): its blob garbage collection keeps a blob while an object that refers to
    /// it is not purged. An older server without the route is not told.
    func declareBlobReferences(_ references: [UUID: Set<String>]) async throws {
        var batches: [[BlobReferencesRequest.Reference]] = [[]]
        var count = 0
        for (object, hashes) in references.sorted(by: { $0.key.uuidString < $1.key.uuidString }) where !hashes.isEmpty {
            for chunk in stride(from: 0, to: hashes.count, by: BlobReferencesRequest.maximumHashes).map({
                Array(hashes.sorted()[$0..<min($0 + BlobReferencesRequest.maximumHashes, hashes.count)])
            }) {
                if count + chunk.count > BlobReferencesRequest.maximumHashes {
                    batches.append([])
                    count = 0
                }
                batches[batches.count - 1].append(BlobReferencesRequest.Reference(object: object, hashes: chunk))
                count += chunk.count
            }
        }
        for batch in batches where !batch.isEmpty {
            do {
                _ = try await exchange(
                    .post, SyncRoutes.blobReferences(library: remote.libraryName), BlobReferencesRequest(references: batch),
                    as: BlobReferencesResponse.self, notFound: .invalidResponse("no blob references"))
            } catch SyncError.invalidResponse("no blob references") {
                return
            }
        }
    }

    /// Uploads one resource the server lacks; returns its size and the bytes sent for it. A
    /// resource of at least ``Options/resumableUploadBytes`` goes up as a resumable upload: the
    /// engine asks the server how many bytes of it it holds (from an earlier attempt whose
    /// connection broke) and sends only the rest; a server without resumable uploads gets it
    /// whole.
    @discardableResult
    func upload(_ hash: String, from file: URL) async throws -> (size: Int64, sent: Int64) {
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int64) ?? 0
        if size >= options.resumableUploadBytes, let sent = try await resumableUpload(hash, from: file, size: size) {
            return (size, sent)
        }
        let response = try await send(
            HTTPRequest(
                method: .put, url: remote.url(SyncRoutes.blob(library: remote.libraryName, hash: hash)),
                headers: authorized(["Content-Type": "application/octet-stream"]), body: .file(file), timeout: .seconds(3600)))
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        return (size, size)
    }

    /// Sends a resource through `…/uploads/{hash}` from the byte the server holds on; returns the
    /// bytes sent, or nil when the server has no such route (an older server: upload it whole).
    /// Each round asks the server where to continue: after a broken connection (the server kept
    /// what arrived), a refusal to continue elsewhere than it holds, or a body the server took
    /// without completing the blob. Bytes the server held that do not complete the resource to
    /// its hash (the file changed since) are discarded by the server, and the upload starts over
    /// once.
    private func resumableUpload(_ hash: String, from file: URL, size: Int64) async throws -> Int64? {
        let path = SyncRoutes.upload(library: remote.libraryName, hash: hash)
        var sent: Int64 = 0
        var rounds = 0
        var restarted = false
        while true {
            try Task.checkCancellation()
            rounds += 1
            let status: UploadStatus
            do {
                status = try await exchange(.get, path, nil as PushRequest?, as: UploadStatus.self, notFound: .invalidResponse("legacy"))
            } catch SyncError.invalidResponse("legacy") {
                return nil
            }
            if status.stored { return sent }
            guard status.offset <= size else {
                throw SyncError.invalidResponse("the server holds \(status.offset) bytes of resource \(hash), which has \(size)")
            }
            var fields = ResumableUploadFields(offset: status.offset, length: size).headerFields
            fields["Content-Type"] = "application/octet-stream"
            var request = HTTPRequest(
                method: .put, url: remote.url(path), headers: authorized(fields), body: .file(file), timeout: .seconds(3600))
            request.bodyFileOffset = status.offset
            let moved = ByteCounter()
            request.progress = { moved.record($0.bytesSent) }
            let response: HTTPResponse
            do {
                response = try await send(request)
            } catch SyncError.serverUnreachable where rounds < options.resumableUploadAttempts {
                sent += moved.bytes  // the connection broke: ask where to continue
                continue
            }
            sent += moved.bytes
            switch response.status {
            case 200, 201:
                return sent
            case 202 where rounds < options.resumableUploadAttempts, 409 where rounds < options.resumableUploadAttempts:
                continue  // more to send, or the server holds another amount than asked from
            case 400
            where !restarted && status.offset > 0
                && (try? ErrorResponse.decode(response.body.bytes))?.errorCode == .hashMismatch:
                restarted = true  // the held bytes were not this file's: the server dropped them
                continue
            case 404 where (try? ErrorResponse.decode(response.body.bytes))?.errorCode == .notFound:
                return nil  // a store without resumable uploads
            default:
                throw SyncError.from(status: response.status, body: response.body.bytes)
            }
        }
    }

    /// Runs `body` for every item, at most `limit` at once, and hands each result to `each` on
    /// the calling task as it comes (in completion order). The first error cancels the others
    /// and is thrown; results handed over before it stay handed over.
    static func concurrently<Item: Sendable, Result: Sendable>(
        _ items: [Item], limit: Int, _ body: @escaping @Sendable (Item) async throws -> Result, each: (Result) throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Result.self) { group in
            var next = items.makeIterator()
            for _ in 0..<max(1, limit) {
                guard let item = next.next() else { break }
                group.addTask { try await body(item) }
            }
            while let result = try await group.next() {
                try each(result)
                try Task.checkCancellation()
                if let item = next.next() { group.addTask { try await body(item) } }
            }
        }
    }

    /// Pushes the outbox in batches until the server has acknowledged or rejected every event.
    ///
    /// The batches are sent one at a time, in device order (the server stores a device's events
    /// only in sequence), but the work on the two sides overlaps: while the server stores one
    /// batch, this device records the answer to the one before, reads the next and uploads the
    /// blobs it refers to (a batch is sent only after its blobs). In an end-to-end encrypted
    /// library, each batch carries the keys of its assets (``sendsKeyedBatches``), which the
    /// server stores in the transaction that stores the batch.
    func push(_ report: inout SyncReport, _ progress: (@Sendable (SyncProgress) -> Void)?) async throws {
        let total = try replica.outboxCount()
        var gapRetries = 0
        var bytes: Int64 = 0
        var keyWrites = try keyStoreWrites()
        /// Records the server's answers to a batch (and to the keys it carried); returns the
        /// device sequence the server asks for when it lacks earlier events of this device.
        func record(_ batch: [Replica.PendingEvent], _ response: PushResponse, keys: [KeyChange]) throws -> Int64? {
            if !keys.isEmpty, let answer = response.keys {
                let answers: KeyChangesResponse
                do {
                    answers = try answer.response(to: keys)
                } catch {
                    throw SyncError.invalidResponse("the server's answer to the keys of a push: \(error)")
                }
                try recordKeyAnswer(keys, answers, &keyWrites, &report)
            }
            var stored: [(deviceSequence: Int64, serverSequence: Int64)] = [], rejected: [(UUID, String)] = []
            var expected: Int64?
            let deviceSequences = Dictionary(
                batch.map { ($0.event.id, $0.event.deviceSequence) }, uniquingKeysWith: { first, _ in first })
            for result in response.results {
                guard let deviceSequence = deviceSequences[result.id] else {
                    throw SyncError.invalidResponse("the server answered for event \(result.id.uuidString), which was not pushed")
                }
                switch result.status {
                case .stored(let sequence):
                    stored.append((deviceSequence, sequence))
                    report.pushedEvents += 1
                case .duplicate(let sequence): stored.append((deviceSequence, sequence))
                case .rejected(let reason):
                    rejected.append((result.id, reason))
                    report.rejectedEvents.append("\(result.id.uuidString): \(reason)")
                case .gap(let sequence): expected = expected ?? sequence
                }
            }
            if let head = response.head, rejected.isEmpty, expected == nil, stored.count == batch.count,
                zip(response.results, batch).allSatisfy({ result, pending in
                    guard case .stored = result.status else { return false }
                    return result.id == pending.event.id
                })
            {
                // Stored in full: confirmed from the server's head when nothing came between.
                try replica.acknowledge(
                    pushed: batch, serverSequences: stored.map(\.serverSequence), head: (head.serverSequence, head.chainHash))
            } else {
                try replica.acknowledge(stored: stored, rejected: rejected)
            }
            progress?(SyncProgress(phase: .pushing, completed: report.pushedEvents, total: total, bytes: bytes))
            return expected
        }
        var batch = try replica.outbox(limit: options.pushBatchSize)
        var keys = try await uploadBlobs(of: batch, &report, progress)
        var answered: (batch: [Replica.PendingEvent], keys: [KeyChange], response: PushResponse)?
        var encoded: [UInt8]?  // the next batch in the binary form, made while the server stores the one before
        while !batch.isEmpty || answered != nil {
            try Task.checkCancellation()
            let sending = batch, sendingKeys = keys, body = encoded
            let binary = options.sendsEventBatches && serverTakesEventBatches.load(ordering: .relaxed)
            async let sent = sending.isEmpty ? nil : pushBatch(sending.map(\.event), keys: sendingKeys, encoded: body)
            let expected = try answered.flatMap { try record($0.batch, $0.response, keys: $0.keys) }
            var next: [Replica.PendingEvent] = []
            keys = []
            if expected == nil, let last = sending.last {
                next = try replica.outbox(after: last.localSequence, limit: options.pushBatchSize)
                // Less the entries the batch in flight carries as they are (a block's pack, when the
                // block's events span both): the server stores the next batch only after that one.
                let carried = Dictionary(sendingKeys.map { ($0.name, $0.value) }, uniquingKeysWith: { _, later in later })
                keys = try await uploadBlobs(of: next, &report, progress).filter { key in carried[key.name].map { $0 != key.value } ?? true
                }
                encoded = binary && !next.isEmpty ? encodedBatch(next.map(\.event), keys: keys) : nil
            }
            let result = try await sent
            answered = result.map { (sending, sendingKeys, $0.response) }
            bytes += result?.bytes ?? 0
            report.encryptionNotes += result?.keyNotes ?? []
            if let expected {
                // The server lacks earlier events of this device (a restored server): the batch
                // sent meanwhile stored nothing after the gap. Send again from there.
                if let inFlight = answered { _ = try record(inFlight.batch, inFlight.response, keys: inFlight.keys) }
                answered = nil
                gapRetries += 1
                guard gapRetries <= 3 else {
                    throw SyncError.invalidResponse(
                        "the server keeps asking for device sequence \(expected); it may have lost this device's history")
                }
                next = try replica.ownEvents(fromDeviceSequence: expected, limit: options.pushBatchSize)
                keys = try await uploadBlobs(of: next, &report, progress)
                encoded = nil
            }
            batch = next
        }
    }

    /// Sends one batch of events, with `keys` (the key store changes its events need, see
    /// ``assetKeys(of:_:)``): in the keyed binary form when the server takes it; otherwise the
    /// keys go to the key store first, then the batch in the binary form when the options and
    /// the server allow it, or as JSON. `encoded` is the batch as ``encodedBatch(_:keys:)`` made
    /// it, when made already. Returns the server's answer, the bytes moved and what the key
    /// store said of keys it refused, when they went to it.
    func pushBatch(_ batch: [Event], keys: [KeyChange] = [], encoded: [UInt8]? = nil) async throws -> (
        response: PushResponse, bytes: Int64, keyNotes: [String]
    ) {
        let path = SyncRoutes.events(library: remote.libraryName)
        var notes = SyncReport()
        var keys = keys, encoded = encoded
        if !keys.isEmpty, !sendsKeyedBatches {
            // A server that refused keyed batches (since this batch was made): the keys first.
            try await publishKeys(keys.map { ($0.name, $0.value, $0.createOnly) }, &notes)
            keys = []
            encoded = nil
        }
        guard options.sendsEventBatches, serverTakesEventBatches.load(ordering: .relaxed) else {
            let sent = try await exchangeCounting(.post, path, PushRequest(device: library.device, events: batch), as: PushResponse.self)
            return (sent.response, sent.bytes, notes.encryptionNotes)
        }
        let body = encoded ?? encodedBatch(batch, keys: keys)
        let type = keys.isEmpty ? EventBatch.contentType : EventBatch.keyedContentType
        let response = try await send(
            HTTPRequest(method: .post, url: remote.url(path), headers: authorized(["Content-Type": type]), body: .bytes(body)))
        if response.status == 415 {
            if keys.isEmpty {
                // A server that reads JSON pushes only.
                serverTakesEventBatches.store(false, ordering: .relaxed)
            } else {
                // A server that takes no keys with a push: the key store, then the plain form.
                serverTakesKeyedBatches.store(false, ordering: .relaxed)
            }
            let sent = try await pushBatch(batch, keys: keys)
            return (sent.response, sent.bytes + Int64(body.count), notes.encryptionNotes + sent.keyNotes)
        }
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        return (
            try decoding(response, path: path, PushResponse.decode), Int64(body.count + response.body.bytes.count), notes.encryptionNotes
        )
    }

    /// `batch` in the binary form, as ``pushBatch(_:keys:encoded:)`` sends it: keyed when `keys`
    /// is not empty.
    func encodedBatch(_ batch: [Event], keys: [KeyChange] = []) -> [UInt8] {
        EventBatch.encode(device: library.device, keys: keys, events: batch)
    }

    /// Whether a push batch carries the keys of its assets (`EventBatch.keyedContentType`): the
    /// options allow it, and the server has refused neither the binary form nor the keyed one.
    var sendsKeyedBatches: Bool {
        options.sendsEventBatches && options.sendsKeysWithBatches && serverTakesEventBatches.load(ordering: .relaxed)
            && serverTakesKeyedBatches.load(ordering: .relaxed)
    }

    /// The request for the first page of the pull, sent at the start of a sync whose pull will
    /// ask for it (a device that reads, that has nothing to push and does not start from a
    /// snapshot), with the cursor it was sent from; nil otherwise.
    func askForFirstPage(scope: ReplicaScope) throws -> (cursor: Int64, request: Task<(PullResponse, bytes: Int64), any Error>)? {
        guard scope != .addOnly, try replica.outbox(limit: 1).isEmpty else { return nil }
        if options.bootstrapFromSnapshot, try replica.isEmpty() { return nil }
        let cursor = try self.cursor()
        return (cursor, Task { try await self.pullPage(since: cursor) })
    }

    /// Pulls pages since the cursor; each page and the new cursor commit in one transaction.
    /// Stops at a page without events: asking for events after the cursor is how the server
    /// learns that this device holds every event up to it. `firstPage` is the request for the
    /// first page, when sent already from the cursor it names (another cursor: it is not used).
    func pull(
        _ report: inout SyncReport, _ progress: (@Sendable (SyncProgress) -> Void)?,
        firstPage: (cursor: Int64, request: Task<(PullResponse, bytes: Int64), any Error>)? = nil
    ) async throws {
        var cursor = try self.cursor()
        var bytes: Int64 = 0
        let sent = firstPage.flatMap { $0.cursor == cursor ? $0.request : nil }
        // While more pages follow, the next one is fetched, decoded, hash-checked and folded while
        // the current one is applied, and the one after it is asked for as soon as the next one
        // arrived (so the server may record this device two pages ahead of what it has
        // committed; the server keeps every event, so nothing is lost by a crash).
        var pending: Task<PulledPage, any Error>? = fetchPage(
            since: cursor, after: cursor == 0 ? HashChain.origin : nil, sent: sent, readsAhead: true)
        var ahead: Task<(PullResponse, bytes: Int64), any Error>?
        defer {
            pending?.cancel()
            ahead?.cancel()
        }
        while let fetching = pending {
            try Task.checkCancellation()
            let page = try await fetching.value
            guard page.cursor >= cursor else {
                throw SyncError.invalidResponse("the server's cursor went back from \(cursor) to \(page.cursor); was the server reset?")
            }
            ahead = page.next
            pending = page.hasMore ? fetchPage(since: page.cursor, after: page.lastChainHash, sent: page.next, readsAhead: true) : nil
            try apply(page, to: &report)
            cursor = page.cursor
            bytes += page.bytes
            progress?(SyncProgress(phase: .pulling, completed: report.pulledEvents, total: nil, bytes: bytes))
            if pending == nil && page.eventCount > 0 {
                // The last page brought events: ask once more, now that they are committed.
                pending = fetchPage(since: cursor, after: page.lastChainHash)
            }
        }
        let summary = try await exchange(.get, SyncRoutes.chain(library: remote.libraryName), nil as PushRequest?, as: ChainSummary.self)
        if let failure = try replica.verifyServerChainHead(lastServerSequence: summary.lastServerSequence, headHash: summary.headHash) {
            throw SyncError.invalidResponse("the server's event chain head does not match what this device received: \(failure)")
        }
    }

    /// Applies a fetched page (its events and the cursor after it, in one transaction) and adds
    /// what it brought to `report`.
    func apply(_ page: PulledPage, to report: inout SyncReport) throws {
        do {
            let applied = try replica.apply(page.prepared)
            report.pulledEvents += applied.newEvents
            report.changedVerdicts += applied.changedVerdicts
            report.quarantinedEvents += applied.quarantined.map { "\($0.eventID.uuidString) (\($0.type) from \($0.device)): \($0.reason)" }
        } catch let mismatch as PhotoLibrary.ServerChainMismatch {
            throw SyncError.invalidResponse("\(mismatch.description); nothing from this page was applied")
        }
    }

    /// A pull page, decoded, checked and prepared by the library, ready to apply.
    struct PulledPage: Sendable {
        var prepared: PreparedPage
        /// The server's cursor after the page.
        var cursor: Int64
        var eventCount: Int
        /// The server's chain value after the page's last event.
        var lastChainHash: [UInt8]?
        var hasMore: Bool
        /// The response body's size as the transport delivered it.
        var bytes: Int64
        /// The request for the page after this one, sent as soon as this one arrived (when asked
        /// to read ahead and more follow).
        var next: Task<(PullResponse, bytes: Int64), any Error>?
    }

    /// Starts fetching the page after `cursor`: every event's content hash is checked before
    /// anything of the page is applied, and the page is prepared by the library (linked after
    /// `previous`, the server's chain value at `cursor` as the previous page reported it, and
    /// folded) off the thread that applies pages. With `wait` (seconds), the server holds the
    /// request until an event arrives or the wait ends (an empty page). With `sent`, the request
    /// for the page was sent already; with `readsAhead`, the request for the page after it is
    /// sent as soon as this one arrived, while this one is checked and folded.
    func fetchPage(
        since cursor: Int64, after previous: [UInt8]?, wait: Int? = nil, sent: Task<(PullResponse, bytes: Int64), any Error>? = nil,
        readsAhead: Bool = false
    ) -> Task<PulledPage, any Error> {
        Task {
            let fetched: (PullResponse, bytes: Int64)
            if let sent { fetched = try await sent.value } else { fetched = try await pullPage(since: cursor, wait: wait) }
            let (page, bytes) = fetched
            let next = readsAhead && page.hasMore ? Task { try await self.pullPage(since: page.nextCursor) } : nil
            var handedOver = false
            defer { if !handedOver { next?.cancel() } }
            if let bad = page.events.first(where: { !$0.hasValidHash }) {
                throw SyncError.invalidResponse(
                    "event \(bad.id.uuidString) does not match its content hash; nothing from this page was applied")
            }
            let events = try page.events.map { wire in
                guard let sequence = wire.serverSequence, let chainHash = wire.chainHash else {
                    throw SyncError.invalidResponse(
                        "event \(wire.id.uuidString) of a pull page has no server sequence or chain value; nothing from this page was applied"
                    )
                }
                return SequencedEvent(event: wire.event, serverSequence: sequence, serverChainHash: chainHash)
            }
            let prepared = PulledPage(
                prepared: replica.prepare(events, cursor: page.nextCursor, after: previous), cursor: page.nextCursor,
                eventCount: events.count,
                lastChainHash: events.last?.serverChainHash, hasMore: page.hasMore, bytes: bytes, next: next)
            handedOver = true
            return prepared
        }
    }

    /// Downloads every referenced resource this device lacks.
    func downloadResources(_ report: inout SyncReport, _ progress: (@Sendable (SyncProgress) -> Void)?) async throws {
        let missing = try replica.missingResources()
        try replica.prepareDownloads(of: missing.map(\.hash))
        var done = 0
        try await Self.concurrently(missing, limit: options.transferConcurrency) {
            resource -> (hash: String, size: Int64, available: Bool) in
            do {
                try await self.download(resource.hash)
                return (resource.hash, resource.size, true)
            } catch SyncError.resourceUnavailable(let hash) {
                // Referenced by an event but never uploaded (a device that pushed without its
                // photos, or a damaged one): reported, and the rest of the sync goes on.
                return (hash, resource.size, false)
            }
        } each: { outcome in
            done += 1
            guard outcome.available else {
                report.unavailableResources.append(outcome.hash)
                return
            }
            report.downloadedResources += 1
            report.downloadedBytes += outcome.size
            progress?(SyncProgress(phase: .downloadingResources, completed: done, total: missing.count, bytes: report.downloadedBytes))
        }
        report.unavailableResources.sort()
    }

    /// Downloads the renditions other devices recorded of what the assets show, that this device
    /// lacks: small, so always downloaded (before originals), whether or not originals are. One
    /// the server does not hold yet (its device has not uploaded it) is left for a later sync.
    func downloadRenditions(_ report: inout SyncReport, _ progress: (@Sendable (SyncProgress) -> Void)?) async throws {
        let missing = try replica.missingRenditions()
        var done = 0
        try await Self.concurrently(missing, limit: options.transferConcurrency) { rendition -> (size: Int64, available: Bool) in
            do {
                try await self.download(rendition.hash)
                return (rendition.size, true)
            } catch SyncError.resourceUnavailable {
                return (rendition.size, false)
            }
        } each: { outcome in
            done += 1
            guard outcome.available else { return }
            report.downloadedRenditions += 1
            report.downloadedBytes += outcome.size
            progress?(SyncProgress(phase: .downloadingResources, completed: done, total: missing.count, bytes: report.downloadedBytes))
        }
    }

    /// Downloads one resource into the library's store. An interrupted download is resumed, by
    /// this attempt's retries and by later syncs: the bytes that arrived are kept in the store's
    /// temporary folder (until its garbage collection's grace period ends), and only the rest is
    /// asked for; the whole is checked against its hash before it is adopted.
    public func download(_ hash: String) async throws {
        let destination = replica.downloadDirectory.appendingPathComponent("download-\(hash)")
        var request = HTTPRequest(
            method: .get, url: remote.url(SyncRoutes.blob(library: remote.libraryName, hash: hash)), headers: authorized([:]),
            responseBodyDestination: destination, timeout: .seconds(3600))
        request.resumesResponseBody = true
        // The transport hashes and flushes the file on its own thread as the bytes arrive, so
        // adopting it is a rename: the file is not read again, and no thread of the shared pool
        // waits for the disk to take its bytes.
        request.hashesResponseBody = replica.storesDownloadsAsReceived
        request.flushesResponseBody = replica.storesDownloadsAsReceived
        var response = try await send(request)
        // The kept bytes could not be continued (the transport dropped them): once more, whole.
        if response.status == 416 { response = try await send(request) }
        if response.status == 404, (try? ErrorResponse.decode(response.body.bytes))?.errorCode == .notFound {
            throw SyncError.resourceUnavailable(hash)
        }
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        let (replica, sha256, isFlushed) = (replica, response.bodyFileSHA256, response.bodyFileIsFlushed)
        try await Self.onThreadOfItsOwn {
            try replica.adoptDownloadedResource(at: destination, hash: hash, sha256: sha256, isFlushed: isFlushed)
        }
    }

    /// Runs `work`, which waits for the disk (flushes), on a thread of its own: the shared pool
    /// has as many threads as cores, and one of them waiting on a flush holds up every task
    /// queued behind it, among them the transfers that could keep the disk busy meanwhile.
    static func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Bridges an on-demand download into the library's synchronous data requests.
    private func downloadBlocking(_ hash: String) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        Task.detached {
            do { try await self.download(hash) } catch { outcome.error = error }
            done.signal()
        }
        done.wait()
        if let error = outcome.error { throw error }
    }

    // MARK: HTTP

    func authorized(_ headers: [String: String]) -> HTTPHeaders {
        var result = HTTPHeaders()
        for (name, value) in headers { result[name] = value }
        result["Authorization"] = "Bearer \(remote.token)"
        return result
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        do { return try await transport.send(request) } catch { throw SyncError.from(error) }
    }

    /// Fetches the page after `cursor`, in the form the server answers with: the binary event
    /// page when asked for and offered, otherwise JSON; with the body's size. With `wait`
    /// (seconds), a waiting pull: the request's time limit is the wait plus a margin.
    func pullPage(since cursor: Int64, limit: Int? = nil, wait: Int? = nil) async throws -> (PullResponse, bytes: Int64) {
        let path = SyncRoutes.pull(library: remote.libraryName, since: cursor, limit: limit ?? options.pullPageSize, wait: wait)
        let headers = options.requestsEventPages ? ["Accept": "\(EventPage.contentType), \(SyncRoutes.jsonContentType);q=0.5"] : [:]
        let response = try await send(
            HTTPRequest(method: .get, url: remote.url(path), headers: authorized(headers), timeout: wait.map { .seconds($0 + 30) }))
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        let isEventPage = response.headers["Content-Type"].map(SyncRoutes.mediaType) == EventPage.contentType
        let page = try decoding(response, path: path) { isEventPage ? try EventPage.decode($0) : try PullResponse.decode($0) }
        return (page, Int64(response.body.bytes.count))
    }

    /// Sends a JSON message (or nothing) and decodes the JSON answer; a 404 throws `notFound`
    /// when given.
    func exchange<Request: WireMessage, Response: WireMessage>(
        _ method: HTTPMethod, _ path: String, _ message: Request?, as type: Response.Type, notFound: SyncError? = nil
    ) async throws -> Response {
        try await exchangeCounting(method, path, message, as: type, notFound: notFound).response
    }

    /// ``exchange(_:_:_:as:notFound:)``, also returning the bytes of the request and response
    /// bodies as the transport moved them.
    func exchangeCounting<Request: WireMessage, Response: WireMessage>(
        _ method: HTTPMethod, _ path: String, _ message: Request?, as: Response.Type, notFound: SyncError? = nil
    ) async throws -> (response: Response, bytes: Int64) {
        var headers: [String: String] = [:]
        var body = HTTPBody.empty
        if let message {
            var bytes = message.encoded()
            headers["Content-Type"] = SyncRoutes.jsonContentType
            if bytes.count > options.gzipThreshold, let packed = try? Gzip.compress(bytes, level: 1) {
                bytes = packed
                headers["Content-Encoding"] = "gzip"
            }
            body = .bytes(bytes)
        }
        let response = try await send(HTTPRequest(method: method, url: remote.url(path), headers: authorized(headers), body: body))
        if response.status == 404, let notFound { throw notFound }
        guard response.isSuccess else { throw SyncError.from(status: response.status, body: response.body.bytes) }
        return (try decoding(response, path: path, Response.decode), Int64(body.bytes.count + response.body.bytes.count))
    }

    /// Decodes a successful response's body with `decode`; a body that does not decode is an
    /// invalid response naming `path`.
    func decoding<T>(_ response: HTTPResponse, path: String, _ decode: ([UInt8]) throws -> T) throws -> T {
        do {
            var bytes = response.body.bytes
            // libcurl decodes what it advertised; a transport that passes a coded body through is served here.
            if Gzip.isGzip(bytes) { bytes = try Gzip.decompress(bytes, limit: 256 << 20) }
            if Zstd.isZstd(bytes) { bytes = try Zstd.decompress(bytes, limit: 256 << 20) }
            return try decode(bytes)
        } catch {
            throw SyncError.invalidResponse("\(path): \(error)")
        }
    }
}

/// The bytes a transfer has sent, as its progress reports them.
private final class ByteCounter: Sendable {
    private let value = Atomic<Int64>(0)

    func record(_ bytes: Int64) { value.store(bytes, ordering: .relaxed) }

    var bytes: Int64 { value.load(ordering: .relaxed) }
}

/// Carries an error out of a detached task.
private final class OutcomeBox: Sendable {
    private let stored = Mutex<(any Error)?>(nil)

    var error: (any Error)? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
