import Foundation
import LedgerCore
import SyncProtocol

/// A request that passed routing, authentication and the header checks, waiting for its body.
public struct PreparedRequest: Sendable {
    /// The route.
    public var route: Route
    /// The token's identity (nil only for the health route).
    public var credential: Credential?
    /// The request head.
    public var head: RequestHead
}

/// What the handler decided for a request whose body has arrived.
public enum RequestOutcome: Sendable {
    /// Send this response.
    case respond(HTTPResponse)
    /// Hold the request: a pull that found no events after its cursor and asked to wait.
    case wait(PullWait)
}

/// A pull to hold until its library gets events after `since` or `seconds` pass.
public struct PullWait: Sendable, Hashable {
    /// The library's row identifier in the store.
    public var libraryID: Int64
    /// The pull's cursor: it waits for events after it.
    public var since: Int64
    /// How long it may wait, from 1 to `SyncRoutes.maximumPullWaitSeconds`.
    public var seconds: Int
}

/// Where a request's body goes while it arrives.
public enum RequestBodySink {
    /// The route takes no body; any bytes sent are ignored.
    case none
    /// A JSON body kept in memory (inflated when gzip), up to a limit.
    case json(RequestBody)
    /// A blob streamed to the blob store and hashed.
    case blob(any BlobUpload)
    /// Bytes of a resumable upload of a blob of `length` bytes, after those the store holds.
    case resumedBlob(any BlobUpload, length: Int64)
    /// A resumable upload of a blob the library holds already: the body is ignored.
    case blobHeld

    /// Takes a chunk of the body.
    public func append(_ chunk: UnsafeRawBufferPointer) throws(HTTPError) {
        switch self {
        case .none: return
        case .json(let body): try body.append(chunk)
        case .blob(let upload):
            do {
                try upload.append(chunk)
            } catch .tooLarge(let limit) {
                throw HTTPError(413, .payloadTooLarge, "the blob is larger than the server's limit of \(limit) bytes")
            } catch {
                throw HTTPError(500, .internalError, "the server could not store the blob; retry later")
            }
        case .resumedBlob(let upload, let length):
            do {
                try upload.append(chunk)
            } catch .tooLarge {
                throw HTTPError(
                    400, .badRequest,
                    "the body goes beyond the blob's \(SyncRoutes.uploadLengthField) of \(length) bytes; the unfinished upload was discarded: "
                        + "upload the blob again from the start")
            } catch .superseded {
                throw HTTPError(409, .conflict, "a newer request of this device continues this upload; this one stopped")
            } catch {
                throw HTTPError(500, .internalError, "the server could not store the upload's bytes; retry later")
            }
        case .blobHeld: return
        }
    }
}

/// A JSON request body arriving in chunks: kept in memory up to a limit, decompressed on the
/// fly when it is gzip, so neither a large body nor a small "zip bomb" can exhaust memory.
public final class RequestBody {
    private let limit: Int
    private let inflater: GzipInflater?
    private var bytes: [UInt8] = []

    init(limit: Int, gzip: Bool) throws(HTTPError) {
        self.limit = limit
        if gzip {
            do {
                inflater = try GzipInflater(limit: limit)
            } catch {
                throw HTTPError(500, .internalError, "the server could not start decompression; retry later")
            }
        } else {
            inflater = nil
        }
    }

    private func tooLarge() -> HTTPError {
        HTTPError(413, .payloadTooLarge, "the request body is larger than the server's limit of \(limit) bytes; send smaller batches")
    }

    /// Takes a chunk.
    public func append(_ chunk: UnsafeRawBufferPointer) throws(HTTPError) {
        if let inflater {
            do {
                try inflater.append(chunk)
            } catch let error as GzipError {
                if case .limitExceeded = error.reason { throw tooLarge() }
                throw HTTPError.badRequest("the gzip body is invalid: \(error)")
            } catch {
                throw HTTPError.badRequest("the gzip body is invalid")
            }
        } else {
            guard bytes.count + chunk.count <= limit else { throw tooLarge() }
            bytes.append(contentsOf: chunk)
        }
    }

    /// The complete (decompressed) body.
    public func finish() throws(HTTPError) -> [UInt8] {
        guard let inflater else { return bytes }
        do {
            return try inflater.finish()
        } catch {
            throw HTTPError.badRequest("the gzip body is truncated: it ends before the end of the gzip stream")
        }
    }
}

/// The protocol's logic, independent of the HTTP library: routing, authentication, scopes,
/// validation, and every endpoint. ``SyncServer`` feeds it from libmicrohttpd.
public final class SyncRequestHandler: Sendable {
    let configuration: SyncServer.Configuration
    let blobs: any BlobStore
    /// Wakes the pulls waiting for a library's next events; told of each push that stored events.
    public let notifier: EventNotifier

    init(configuration: SyncServer.Configuration) throws {
        self.configuration = configuration
        self.blobs = try configuration.blobStore ?? BlobDirectory(root: configuration.blobDirectory)
        self.notifier = EventNotifier(capacity: configuration.maximumWaitingPulls)
    }

    var store: any ServerStore { configuration.store }

    // MARK: Before the body

    /// Routes, authenticates and checks the headers of a request, before its body is read.
    public func prepare(_ head: RequestHead) throws(HTTPError) -> PreparedRequest {
        let route = try Route.match(method: head.method, path: head.path)
        guard let library = route.library else { return PreparedRequest(route: route, credential: nil, head: head) }
        let credential = try authenticate(head)
        if let problem = LibraryName.problem(with: library) { throw HTTPError.badRequest("field 'library': \(problem)") }
        guard credential.library == library else {
            throw HTTPError.forbidden("this token does not grant access to the library named in the request")
        }
        try checkScope(credential.scope, for: route)
        try checkBodyHeaders(head, route: route)
        return PreparedRequest(route: route, credential: credential, head: head)
    }

    private func authenticate(_ head: RequestHead) throws(HTTPError) -> Credential {
        guard let token = DeviceToken.bearer(from: head.authorization) else {
            throw HTTPError.unauthorized("this request needs a device token: send 'Authorization: Bearer <token>'")
        }
        let credential: Credential?
        do {
            credential = try store.authenticate(tokenHash: DeviceToken.hash(token))
        } catch {
            log(.error, "store failure", [.init("operation", "authenticate"), .init("error", "\(error)")])
            throw HTTPError(500, .internalError, "the server could not check the token; retry later")
        }
        guard let credential else {
            throw HTTPError.unauthorized("the device token is unknown or revoked; ask the server's administrator for a new one")
        }
        return credential
    }

    private func checkScope(_ scope: TokenScope, for route: Route) throws(HTTPError) {
        let allowed: Bool
        switch route {
        case .health, .info, .missingBlobs: allowed = true
        // Every scope reads the key store (it holds nothing a token could open) and writes
        // what its entry rules allow (KeyStoreRules).
        case .keys: allowed = true
        case .push, .upload, .blobReferences: allowed = scope.canWrite
        case .pull, .chain, .verify, .watermark, .latestSnapshot: allowed = scope.canRead
        case .offerSnapshot: allowed = scope == .readWrite
        case .blob(_, _, let method):
            allowed = method == "HEAD" || (method == "PUT" ? scope.canWrite : scope.canRead)
        }
        guard allowed else {
            throw HTTPError.forbidden("a \(scope.rawValue) token does not allow \(Self.describe(route))")
        }
    }

    private static func describe(_ route: Route) -> String {
        switch route {
        case .health: return "health checks"
        case .info: return "reading the library's description"
        case .push: return "pushing events"
        case .pull: return "pulling events"
        case .chain, .verify: return "reading the event chain"
        case .watermark: return "reading the compaction watermark"
        case .missingBlobs: return "listing missing blobs"
        case .blobReferences: return "declaring the blobs of events"
        case .blob(_, _, let method): return method == "PUT" ? "uploading blobs" : "downloading blobs"
        case .upload: return "uploading blobs"
        case .keys(_, let method): return method == "POST" ? "changing the key store" : "reading the key store"
        case .offerSnapshot: return "uploading snapshots (only a readWrite device's fold is accepted)"
        case .latestSnapshot: return "reading snapshots"
        }
    }

    private func checkBodyHeaders(_ head: RequestHead, route: Route) throws(HTTPError) {
        let encoding = head.bodyEncoding
        if route.takesJSONBody {
            let type = head.contentType.map(SyncRoutes.mediaType)
            // A push may come as an event batch (plain or keyed), a change of the key store in its
            // binary form.
            guard
                type == SyncRoutes.jsonContentType
                    || ((type == EventBatch.contentType || type == EventBatch.keyedContentType) && route.isPush)
                    || (type == KeyStoreBody.contentType && route.isKeyChange)
            else {
                throw HTTPError(415, .unsupportedMediaType, "the body must be JSON: send 'Content-Type: application/json'")
            }
            guard encoding == nil || encoding == "identity" || encoding == "gzip" else {
                throw HTTPError(415, .unsupportedMediaType, "the body encoding '\(encoding!)' is not supported; use gzip or none")
            }
            if let length = head.contentLength, length > UInt64(configuration.maximumEventBodyBytes) {
                throw HTTPError(
                    413, .payloadTooLarge,
                    "the request body (\(length) bytes) is larger than the server's limit of \(configuration.maximumEventBodyBytes) bytes; send smaller batches"
                )
            }
        } else if route.takesBlobBody {
            guard encoding == nil || encoding == "identity" else {
                throw HTTPError(415, .unsupportedMediaType, "blobs are uploaded as raw bytes, without Content-Encoding")
            }
            if let length = head.contentLength, length > UInt64(configuration.maximumBlobBytes) {
                throw HTTPError(
                    413, .payloadTooLarge,
                    "the blob (\(length) bytes) is larger than the server's limit of \(configuration.maximumBlobBytes) bytes")
            }
        }
    }

    /// Where the request's body goes.
    public func bodySink(for request: PreparedRequest) throws(HTTPError) -> RequestBodySink {
        if case .upload(_, let hash, "PUT") = request.route, let credential = request.credential {
            return try resumedUploadSink(request.head, hash: hash, credential: credential)
        }
        if request.route.takesJSONBody {
            return .json(try RequestBody(limit: configuration.maximumEventBodyBytes, gzip: request.head.bodyEncoding == "gzip"))
        }
        if case .blob(_, let hash, "PUT") = request.route {
            do {
                return .blob(try blobs.beginUpload(of: hash, limit: configuration.maximumBlobBytes))
            } catch {
                log(.error, "blob storage failure", [.init("error", "\(error)")])
                throw HTTPError(500, .internalError, "the server could not store the blob; retry later")
            }
        }
        return .none
    }

    // MARK: After the body

    /// Runs the request and returns its response (errors become JSON error responses). A pull
    /// that asks to wait is answered at once, as without `wait`.
    public func respond(to request: PreparedRequest, body: RequestBodySink) -> HTTPResponse {
        guard case .respond(let response) = handle(request, body: body, mayWait: false) else {
            return HTTPError(500, .internalError, "the server failed to handle the request; retry later").response
        }
        return response
    }

    /// Runs the request: its response, or, when `mayWait` and the request is a pull with `wait`
    /// that found no events after its cursor, the wait to hold it for. Once the wait ends (see
    /// ``notifier``), answer the request with ``respond(to:body:)``.
    public func handle(_ request: PreparedRequest, body: RequestBodySink, mayWait: Bool) -> RequestOutcome {
        var response: HTTPResponse
        do {
            switch try run(request, body: body, mayWait: mayWait) {
            case .respond(let answer): response = answer
            case .wait(let wait): return .wait(wait)
            }
        } catch let error as HTTPError {
            response = error.response
        } catch {
            log(.error, "request failure", [.init("path", request.head.path), .init("error", "\(error)")])
            response = HTTPError(500, .internalError, "the server failed to handle the request; retry later").response
        }
        return .respond(compressed(response, for: request.head))
    }

    /// Compresses a large body for a client that accepts it: zstd when it says so (libcurl does),
    /// several times cheaper than gzip for both sides, otherwise gzip.
    private func compressed(_ response: HTTPResponse, for head: RequestHead) -> HTTPResponse {
        guard head.acceptsZstd || head.acceptsGzip, case .bytes(let bytes) = response.body, bytes.count > configuration.gzipThreshold
        else { return response }
        let coding = head.acceptsZstd ? "zstd" : "gzip"
        guard let packed = try? (head.acceptsZstd ? Zstd.compress(bytes, level: 1) : Gzip.compress(bytes, level: 1)) else {
            return response
        }
        var response = response
        response.body = .bytes(packed)
        response.headers += [("Content-Encoding", coding), ("Vary", "Accept-Encoding")]
        return response
    }

    private func run(_ request: PreparedRequest, body: RequestBodySink, mayWait: Bool) throws -> RequestOutcome {
        let credential = request.credential
        switch request.route {
        case .health:
            return .respond(.json(HealthResponse(version: configuration.version)))
        case .info:
            let credential = credential!
            let summary = try store.chainSummary(libraryID: credential.libraryID)
            return .respond(
                .json(
                    LibraryInfo(
                        library: credential.library, libraryID: credential.libraryUUID, device: credential.device, scope: credential.scope,
                        lastServerSequence: summary.lastServerSequence, endToEndEncrypted: try isEndToEndEncrypted(credential))))
        case .push:
            guard case .json(let json) = body else { throw HTTPError.badRequest("a push needs a JSON body") }
            let type = request.head.contentType.map(SyncRoutes.mediaType)
            let form: PushForm = type == EventBatch.keyedContentType ? .keyedBatch : type == EventBatch.contentType ? .batch : .json
            return .respond(try push(try json.finish(), form: form, credential: credential!))
        case .pull:
            return try pull(request.head, credential: credential!, mayWait: mayWait)
        case .chain:
            return .respond(.json(try store.chainSummary(libraryID: credential!.libraryID)))
        case .verify:
            return .respond(.json(try store.verifyChain(libraryID: credential!.libraryID)))
        case .watermark:
            return .respond(.json(try store.compactionWatermark(libraryID: credential!.libraryID)))
        case .missingBlobs:
            guard case .json(let json) = body else { throw HTTPError.badRequest("this request needs a JSON body") }
            return .respond(try missingBlobs(try json.finish(), credential: credential!))
        case .blobReferences:
            guard case .json(let json) = body else { throw HTTPError.badRequest("this request needs a JSON body") }
            return .respond(try recordBlobReferences(try json.finish(), credential: credential!))
        case .keys(_, let method):
            if method == "POST" {
                guard case .json(let json) = body else { throw HTTPError.badRequest("a change of the key store needs a JSON body") }
                let binary = request.head.contentType.map { $0.lowercased().hasPrefix(KeyStoreBody.contentType) } ?? false
                return .respond(
                    try changeKeys(
                        try json.finish(), binary: binary, answersBinary: request.head.acceptsKeyStoreBodies, credential: credential!))
            }
            return .respond(try readKeys(request.head, credential: credential!))
        case .offerSnapshot:
            guard case .json(let json) = body else { throw HTTPError.badRequest("a snapshot offer needs a JSON body") }
            let offer = try decode(SnapshotOffer.self, try json.finish())
            do {
                // The blob must be the snapshot offered (its header says so), never another blob of
                // the library: retiring the snapshot deletes its blob.
                if try store.blobSize(libraryID: credential!.libraryID, hash: offer.hash) != nil,
                    let header = try blobs.prefix(of: Hex.encode(offer.hash), count: SnapshotHeader.maximumLength)
                {
                    try store.checkSnapshotHeader(header, of: offer, for: credential!)
                }
                let record = try store.offerSnapshot(offer, for: credential!, at: configuration.clock())
                deleteRetiredBlobs()
                return .respond(.json(record))
            } catch let refusal as SnapshotRefusal {
                switch refusal.status {
                case 403: throw HTTPError.forbidden(refusal.message)
                case 404: throw HTTPError.notFound(refusal.message)
                default: throw HTTPError(409, .conflict, refusal.message)
                }
            }
        case .latestSnapshot:
            guard let record = try store.latestSnapshot(libraryID: credential!.libraryID) else {
                throw HTTPError.notFound("this library has no snapshot yet; a readWrite device makes one with 'photoledger snapshot'")
            }
            return .respond(.json(record))
        case .upload(_, let hash, let method):
            let credential = credential!
            if method == "GET" {
                guard try store.blobSize(libraryID: credential.libraryID, hash: Hex.decode(hash)!) == nil else {
                    return .respond(.json(UploadStatus(offset: 0, stored: true)))
                }
                let key = PartialUploadKey(libraryID: credential.libraryID, device: credential.device, hash: hash)
                return .respond(.json(UploadStatus(offset: try blobs.heldBytes(of: key, now: configuration.clock()))))
            }
            switch body {
            case .blobHeld:
                return .respond(
                    HTTPResponse(status: 200, headers: [("Content-Type", SyncRoutes.jsonContentType)], body: .bytes(Array("{}".utf8))))
            case .resumedBlob(let upload, let length):
                // The body ended before the blob: the next request sends the rest.
                guard upload.size == length else { return .respond(.json(UploadStatus(offset: upload.size), status: 202)) }
                return .respond(try storeBlob(upload, hash: hash, credential: credential, resumable: true))
            default:
                throw HTTPError.badRequest("an upload needs a body")
            }
        case .blob(_, let hash, let method):
            if method == "PUT" {
                guard case .blob(let upload) = body else { throw HTTPError.badRequest("an upload needs a body") }
                return .respond(try storeBlob(upload, hash: hash, credential: credential!))
            }
            return .respond(try serveBlob(hash, range: request.head.range, credential: credential!))
        }
    }

    private func decode<M: WireMessage>(_ type: M.Type, _ bytes: [UInt8]) throws(HTTPError) -> M {
        do {
            return try M.decode(bytes)
        } catch {
            throw HTTPError.badRequest("the JSON body is invalid: \(error)")
        }
    }

    // MARK: Events

    /// The forms a push comes in.
    private enum PushForm {
        case json
        /// `EventBatch.contentType`.
        case batch
        /// `EventBatch.keyedContentType`: key store changes, then the events.
        case keyedBatch
    }

    private func push(_ bytes: [UInt8], form: PushForm, credential: Credential) throws -> HTTPResponse {
        let request: ReceivedPush
        switch form {
        case .json:
            request = try decode(ReceivedPush.self, bytes)
        case .batch, .keyedBatch:
            do {
                request = form == .keyedBatch ? try EventBatch.decodeKeyed(bytes) : try EventBatch.decode(bytes)
            } catch {
                throw HTTPError.badRequest("the \(form == .keyedBatch ? "keyed event batch" : "event batch") is invalid: \(error)")
            }
        }
        guard request.device == credential.device else {
            throw HTTPError.forbidden("this token belongs to another device than '\(request.device)'; push with that device's own token")
        }
        let now = configuration.clock()
        // Saturating: a skew allowance beyond the clock's range allows every stamp.
        let (sum, overflow) = now.addingReportingOverflow(configuration.maximumClockSkewMilliseconds)
        let limit = overflow ? UInt64.max : sum
        var furthest: UInt64 = 0
        for case .valid(let event) in request.events where event.timestamp.milliseconds > limit {
            furthest = max(furthest, event.timestamp.milliseconds)
        }
        if furthest > 0 {
            let ahead = (furthest > now ? furthest - now : 0) / 1000
            throw HTTPError(
                422, .clockSkew,
                "an event's clock stamp is \(ahead) s ahead of the server clock (at most \(configuration.maximumClockSkewMilliseconds / 1000) s allowed); "
                    + "correct this device's date and time, then push again. Nothing was stored.",
                serverTime: now)
        }
        let rules = PushRules(maximumPayloadBytes: configuration.maximumPayloadBytes)
        let candidates = request.events.map { rules.candidate(for: $0, credential: credential) }
        let response: PushResponse
        if request.keys.isEmpty {
            response = try store.push(candidates, for: credential, receivedAt: now, rules: rules)
        } else {
            // The keys under the key store's rules, checked against the log before the batch's
            // events, and stored with them in one transaction: a device that pulls the events
            // finds their keys.
            response = try store.withPushTransaction(
                library: credential.libraryID, device: credential.device, at: now, readingAheadFor: candidates
            ) { transaction in
                let keys = try KeyStoreRules.apply(request.keys, for: credential, in: transaction)
                var response = try rules.apply(candidates, for: credential, in: transaction)
                response.keys = PushedKeyChanges(answering: keys)
                return response
            }
        }
        notifier.committed(response, libraryID: credential.libraryID)
        // A stored purge retires the snapshots before it (PushRules): delete their blobs now.
        if candidates.contains(where: { if case .accept(let event, _) = $0 { event.type == EventType.assetPurged.rawValue } else { false } }
        ) {
            deleteRetiredBlobs()
        }
        return .json(response)
    }

    /// A page of events after `since`: the binary event page when the client accepts it,
    /// otherwise JSON. With `wait` and no events after `since`, the wait to hold the request for,
    /// when `mayWait`.
    private func pull(_ head: RequestHead, credential: Credential, mayWait: Bool) throws -> RequestOutcome {
        let query = head.query
        func integer(_ name: String, default value: Int64, range: ClosedRange<Int64>) throws(HTTPError) -> Int64 {
            guard let text = query[name] else { return value }
            guard let number = Int64(text), range.contains(number) else {
                throw HTTPError.badRequest("field '\(name)': must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        let since = try integer("since", default: 0, range: 0...Int64.max)
        let limit = Int(
            min(try integer("limit", default: Int64(SyncRoutes.defaultPageLimit), range: 1...Int64.max), Int64(SyncRoutes.maximumPageLimit))
        )
        let wait = try integer("wait", default: 0, range: 0...Int64(SyncRoutes.maximumPullWaitSeconds))
        let page = try store.pull(for: credential, since: since, limit: limit, at: configuration.clock())
        if mayWait, wait > 0, page.events.isEmpty {
            return .wait(PullWait(libraryID: credential.libraryID, since: since, seconds: Int(wait)))
        }
        return .respond(pullResponse(page, since: since, eventPages: head.acceptsEventPages))
    }

    /// A page of the log as the client asked for it: binary event page or JSON.
    private func pullResponse(_ page: ServerPage, since: Int64, eventPages: Bool) -> HTTPResponse {
        let nextCursor = page.events.last?.serverSequence ?? since
        if eventPages {
            var writer = EventPage.Writer(count: page.events.count, nextCursor: nextCursor, hasMore: page.hasMore)
            for stored in page.events {
                writer.append(
                    stored.event, serverSequence: stored.serverSequence, chainHash: stored.chainHash,
                    contentHash: stored.contentHash ?? stored.event.contentHash)
            }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", EventPage.contentType), ("Vary", "Accept")], body: .bytes(writer.bytes))
        }
        var writer = JSONWriter(capacity: 256 + page.events.count * 420)
        writer.beginObject()
        writer.key("events")
        writer.beginArray()
        for stored in page.events {
            // The content hash verified and stored at push (computed for events stored before that).
            WireEvent(
                stored.event, hash: stored.contentHash ?? stored.event.contentHash, serverSequence: stored.serverSequence,
                chainHash: stored.chainHash
            ).write(to: &writer)
        }
        writer.endArray()
        writer.key("nextCursor"); writer.integer(nextCursor)
        writer.key("hasMore"); writer.bool(page.hasMore)
        writer.endObject()
        return HTTPResponse(
            status: 200, headers: [("Content-Type", SyncRoutes.jsonContentType), ("Vary", "Accept")], body: .bytes(writer.bytes))
    }

    // MARK: Blobs

    /// Deletes the blobs of retired snapshots from the blob store (see
    /// `ServerStore.retiredBlobs(limit:)`); returns how many were deleted. A failure is logged
    /// and leaves the blob queued for the next attempt (the next retirement, or the next start).
    /// Each deletion holds the blob's lock (`ServerStore.deleteRetiredBlob(_:removing:)`), so an
    /// upload of the same bytes meanwhile is either kept or told to upload again.
    @discardableResult
    public func deleteRetiredBlobs() -> Int {
        do {
            let (deleted, failures) = try BlobCollection.deleteRetired(store: store, blobs: blobs)
            for failure in failures {
                log(.error, "blob deletion failure", [.init("hash", failure.hash), .init("error", failure.reason)])
            }
            return deleted
        } catch {
            log(.error, "store failure", [.init("operation", "retired blobs"), .init("error", "\(error)")])
            return 0
        }
    }

    private func missingBlobs(_ bytes: [UInt8], credential: Credential) throws -> HTTPResponse {
        let request = try decode(MissingBlobsRequest.self, bytes)
        var hashes: [[UInt8]] = []
        for (index, name) in request.hashes.enumerated() {
            guard BlobHash.isValid(name), let hash = Hex.decode(name) else {
                throw HTTPError.badRequest("field 'hashes[\(index)]': a blob name must be exactly 64 lowercase hexadecimal digits")
            }
            hashes.append(hash)
        }
        let missing = try store.missingBlobs(libraryID: credential.libraryID, hashes: hashes)
        return .json(MissingBlobsResponse(missing: missing.map(Hex.encode)))
    }

    /// Records the blobs the events about objects refer to (see `ServerStore.collectBlobs`).
    private func recordBlobReferences(_ bytes: [UInt8], credential: Credential) throws -> HTTPResponse {
        let request = try decode(BlobReferencesRequest.self, bytes)
        var references: [BlobReference] = []
        for (index, reference) in request.references.enumerated() {
            for (position, name) in reference.hashes.enumerated() {
                guard BlobHash.isValid(name), let hash = Hex.decode(name) else {
                    throw HTTPError.badRequest(
                        "field 'references[\(index)].hashes[\(position)]': a blob name must be exactly 64 lowercase hexadecimal digits")
                }
                references.append(BlobReference(object: reference.object, hash: hash))
            }
            guard references.count <= BlobReferencesRequest.maximumHashes else {
                throw HTTPError.badRequest(
                    "field 'references': at most \(BlobReferencesRequest.maximumHashes) hashes a request; send the rest in another")
            }
        }
        try store.recordBlobReferences(libraryID: credential.libraryID, references, at: configuration.clock())
        return .json(BlobReferencesResponse(recorded: references.count))
    }

    private func storeBlob(_ upload: any BlobUpload, hash: String, credential: Credential, resumable: Bool = false) throws -> HTTPResponse {
        do {
            _ = try upload.commit(as: hash)
        } catch .hashMismatch(let actual) {
            throw HTTPError(
                400, .hashMismatch,
                "the uploaded bytes hash to \(actual), not to the blob's name \(hash); nothing was stored"
                    + (resumable ? " and the unfinished upload was discarded: upload the blob again from the start" : ""))
        } catch .superseded {
            throw HTTPError(409, .conflict, "a newer request of this device continues this upload; this one stopped")
        } catch {
            log(.error, "blob storage failure", [.init("error", "\(error)")])
            throw HTTPError(500, .internalError, "the server could not store the blob; retry later")
        }
        let recorded = try store.recordBlob(
            libraryID: credential.libraryID, hash: Hex.decode(hash)!, size: upload.size, at: configuration.clock(),
            ifStored: { try blobs.holds(hash) })
        guard let isNew = recorded else {
            // A retired copy of the same bytes was deleted between the upload's commit and its record.
            log(.warning, "blob deleted during its upload", [.init("hash", hash)])
            throw HTTPError(
                503, .internalError,
                "the blob's bytes were deleted while they were uploaded (an earlier copy of the same blob was being removed); "
                    + "nothing was stored: upload the blob again",
                headers: [("Retry-After", "1")])
        }
        return HTTPResponse(
            status: isNew ? 201 : 200, headers: [("Content-Type", SyncRoutes.jsonContentType)], body: .bytes(Array("{}".utf8)))
    }

    /// The sink of a resumable upload's `PUT`: its bytes continue the device's unfinished upload
    /// of the blob from `Upload-Offset`, which must be the number of bytes the server holds.
    private func resumedUploadSink(_ head: RequestHead, hash: String, credential: Credential) throws(HTTPError) -> RequestBodySink {
        let fields: ResumableUploadFields
        do {
            fields = try ResumableUploadFields.read(
                offset: head.uploadOffset, length: head.uploadLength, bodyLength: head.contentLength,
                maximumBlobBytes: configuration.maximumBlobBytes)
        } catch {
            throw error.kind == .tooLarge ? HTTPError(413, .payloadTooLarge, error.message) : HTTPError.badRequest(error.message)
        }
        let (offset, length) = (fields.offset, fields.length)
        let key = PartialUploadKey(libraryID: credential.libraryID, device: credential.device, hash: hash)
        let refusal: UploadResumeRefusal
        do {
            return .resumedBlob(try blobs.resumeUpload(key, from: offset, length: length, now: configuration.clock()), length: length)
        } catch {
            refusal = error
        }
        switch refusal {
        case .offsetMismatch(let held):
            // The answer to a completed upload was lost: the library holds the blob.
            if (try? store.blobSize(libraryID: credential.libraryID, hash: Hex.decode(hash)!)) ?? nil != nil { return .blobHeld }
            throw HTTPError(
                409, .conflict,
                "the server holds \(held) bytes of this upload, not \(offset): send the blob's bytes from byte \(held) "
                    + "(GET \(SyncRoutes.upload(library: credential.library, hash: hash)) says how many it holds)",
                headers: [(SyncRoutes.uploadOffsetField, "\(held)")])
        case .unsupported:
            throw HTTPError.notFound(
                "this server's blob store does not keep unfinished uploads; upload the blob whole with PUT …/blobs/\(hash)")
        case .io(let detail):
            log(.error, "blob storage failure", [.init("operation", "resume upload"), .init("error", detail)])
            throw HTTPError(500, .internalError, "the server could not continue the upload; retry later")
        }
    }

    /// Serves a blob, or the rest of it from the offset of a `Range: bytes=N-` header (206, to
    /// resume an interrupted download); other range forms are ignored and the whole blob is sent,
    /// as HTTP allows.
    private func serveBlob(_ hash: String, range: String?, credential: Credential) throws -> HTTPResponse {
        let notFound = HTTPError.notFound("this library has no blob \(hash)")
        guard let size = try store.blobSize(libraryID: credential.libraryID, hash: Hex.decode(hash)!) else { throw notFound }
        let offset = range.flatMap(ByteRange.openStart) ?? 0
        guard offset == 0 || offset < size else {
            return HTTPError(
                416, .badRequest, "the range starts at byte \(offset), beyond the blob's \(size) bytes; download it again from the start",
                headers: [("Content-Range", ByteRange.unsatisfiable.contentRange(size: UInt64(size))!)]
            ).response
        }
        let body: HTTPResponse.Body
        switch try blobs.content(of: hash, from: offset) {
        case .file(let descriptor, let offset, let size)?: body = .file(descriptor: descriptor, offset: offset, size: size)
        case .stream(let stream)?: body = .stream(stream)
        case nil:
            log(.error, "blob missing from the blob store", [.init("hash", hash)])
            throw notFound
        }
        var headers = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
        guard offset > 0 else { return HTTPResponse(status: 200, headers: headers, body: body) }
        headers.append(("Content-Range", ByteRange.part(UInt64(offset)..<UInt64(size)).contentRange(size: UInt64(size))!))
        return HTTPResponse(status: 206, headers: headers, body: body)
    }

    func log(_ level: LogLevel, _ message: String, _ fields: [LogRecord.Field]) {
        configuration.logger.log(LogRecord(level: level, message: message, fields: fields))
    }
}
