import CHTTPLayerErrors
import CMicroHTTPD
import Foundation
import SyncProtocol

/// The state of one request, from its first handler call to the completion notice. Touched only
/// by the thread that serves its connection.
final class Exchange {
    /// Where the request stands.
    enum Phase {
        /// The head has arrived; the body is arriving.
        case receiving
        /// A pull held until its library gets events or its wait ends (the connection is suspended).
        case waiting(since: UInt64)
        /// A response is queued.
        case responded
    }

    let id: String
    let method: String
    let path: String
    let started = ContinuousClock.now
    var request: PreparedRequest?
    var sink: RequestBodySink = .none
    var failure: HTTPError?
    var phase = Phase.receiving
    /// The answer of a pull that could not wait (the server holds its maximum of waiting pulls).
    var refusal: HTTPError?
    /// How long the pull waited, in milliseconds, once it has.
    var waitedMilliseconds: UInt64?
    var status = 0

    init(id: String, method: String, path: String) {
        self.id = id
        self.method = method
        self.path = path
    }
}

/// A suspended connection of a waiting pull, resumed from the thread that wakes the pull.
struct SuspendedConnection: @unchecked Sendable {
    // Safe to share: libmicrohttpd resumes a suspended connection from any thread; the notifier wakes each pull once.
    let pointer: OpaquePointer

    func resume() { MHD_resume_connection(pointer) }
}

/// The key of a connection in ``ConnectionDeadlines``: its address.
private func key(_ connection: OpaquePointer?) -> UInt { UInt(bitPattern: connection) }

// MARK: Request heads

private func header(_ connection: OpaquePointer?, _ name: String, kind: MHD_ValueKind = .HEADER_KIND) -> String? {
    MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
}

/// The header fields that frame a request's body, every occurrence in order, read in one pass.
private struct FramingFields {
    var contentLengths: [String] = []
    var transferEncodings: [String] = []

    init() {}

    init(_ connection: OpaquePointer?) {
        final class Collector {
            var fields = FramingFields()
        }
        let collector = Collector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND,
                { context, _, key, value in
                    guard let context, let key else { return .YES }
                    let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
                    let text = value.map { String(cString: $0).trimmingCharacters(in: .whitespaces) } ?? ""
                    if strcasecmp(key, "Content-Length") == 0 {
                        collector.fields.contentLengths.append(text)
                    } else if strcasecmp(key, "Transfer-Encoding") == 0 {
                        collector.fields.transferEncodings.append(text)
                    }
                    return .YES
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        self = collector.fields
    }
}

private func readHead(_ connection: OpaquePointer?, method: String, path: String) -> RequestHead {
    var query: [String: String] = [:]
    for name in ["since", "limit", "wait", "after"] {
        if let value = header(connection, name, kind: .GET_ARGUMENT_KIND) { query[name] = value }
    }
    return RequestHead(
        method: method, path: path, authorization: header(connection, "Authorization"), contentType: header(connection, "Content-Type"),
        contentEncoding: header(connection, "Content-Encoding"),
        contentLength: header(connection, "Content-Length").flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) },
        acceptsGzip: accepts(header(connection, "Accept-Encoding"), "gzip"),
        acceptsZstd: accepts(header(connection, "Accept-Encoding"), "zstd"),
        acceptsEventPages: accepts(header(connection, "Accept"), EventPage.contentType),
        acceptsKeyStoreBodies: accepts(header(connection, "Accept"), KeyStoreBody.contentType), query: query,
        range: header(connection, "Range"), uploadOffset: header(connection, SyncRoutes.uploadOffsetField),
        uploadLength: header(connection, SyncRoutes.uploadLengthField))
}

/// Refuses the message framing libmicrohttpd accepts but this server must not: two different
/// `Content-Length` values, or `Content-Length` beside `Transfer-Encoding` (a request that two
/// parsers could split in different places), and any transfer coding but `chunked` alone (the
/// HTTP layer would read such a body until the connection closes). The connection is closed after.
private func framingProblem(_ fields: FramingFields) -> HTTPError? {
    let close = [("Connection", "close")]
    let lengths = fields.contentLengths
    if Set(lengths).count > 1 {
        return HTTPError(
            400, .badRequest,
            "the request has \(lengths.count) Content-Length fields with different values (\(lengths.joined(separator: ", "))); send one",
            headers: close)
    }
    let codings = fields.transferEncodings.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    guard !codings.isEmpty else { return nil }
    guard codings == ["chunked"] else {
        return HTTPError(
            501, .unsupportedMediaType,
            "the transfer coding '\(codings.joined(separator: ", "))' is not supported: send the body with Content-Length or "
                + "'Transfer-Encoding: chunked', compressed with 'Content-Encoding: gzip' where the route allows it",
            headers: close)
    }
    guard lengths.isEmpty else {
        return HTTPError(400, .badRequest, "the request has both Content-Length and Transfer-Encoding; send one of them", headers: close)
    }
    return nil
}

// MARK: Responses

/// A libmicrohttpd response for `response`, marked with the request's identifier; nil when
/// libmicrohttpd cannot make one.
private func makeResponse(_ response: HTTPResponse, requestID: String) -> OpaquePointer? {
    let handle: OpaquePointer?
    switch response.body {
    case .empty:
        handle = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
    case .bytes(let bytes):
        handle = bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .file(let descriptor, let offset, let size):
        handle = MHD_create_response_from_fd_at_offset64(UInt64(size), descriptor, UInt64(offset))
        if handle == nil { close(descriptor) }
    case .stream(let stream):
        handle = streamedResponse(stream)
    }
    guard let handle else { return nil }
    for (name, value) in response.headers { MHD_add_response_header(handle, name, value) }
    // The marker of the application's responses (see CHTTPLayerErrors).
    MHD_add_response_header(handle, PLMHD_APPLICATION_MARKER_HEADER, requestID)
    return handle
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer?, exchange: Exchange) -> MHD_Result {
    guard let handle = makeResponse(response, requestID: exchange.id) else { return .NO }
    defer { MHD_destroy_response(handle) }
    exchange.status = response.status
    exchange.phase = .responded
    return MHD_queue_response(connection, UInt32(response.status), handle)
}

/// Answers a request libmicrohttpd refused itself with the JSON error body (see CHTTPLayerErrors).
let httpLayerErrorResponse: plmhd_error_response_factory = { connection, status, replacement in
    let error = HTTPError.refusedByHTTPLayer(status: Int(status))
    var requestID = "-"
    if let context = plmhd_connection_socket_context(connection) {
        let server = Unmanaged<SyncServer>.fromOpaque(context).takeUnretainedValue()
        requestID = server.nextRequestID()
        server.log(
            .warning, "refused by the HTTP layer",
            [.init("id", requestID), .init("status", "\(status)"), .init("address", clientAddress(connection))])
    }
    // After a Content-Length it cannot read, libmicrohttpd 0.9.75 sends the head of its answer
    // twice, which garbles any body: the answer is written here, and the connection closed.
    if FramingFields(connection).contentLengths.contains(where: { UInt64($0).map { $0 == .max } ?? true }) {
        answerOnSocket(error.response, connection: connection, requestID: requestID)
        return PLMHD_ANSWERED_ON_SOCKET
    }
    replacement?.pointee = makeResponse(error.response, requestID: requestID)
    return PLMHD_QUEUE_REPLACEMENT
}

/// Writes a whole HTTP/1.1 answer that closes the connection to the connection's socket (a few
/// hundred bytes, which a fresh socket's send buffer takes at once).
private func answerOnSocket(_ response: HTTPResponse, connection: OpaquePointer?, requestID: String) {
    let socket = plmhd_connection_socket(connection)
    guard socket >= 0, case .bytes(let body) = response.body else { return }
    let reason = MHD_get_reason_phrase_for(UInt32(response.status)).map { String(cString: $0) } ?? ""
    var head = "HTTP/1.1 \(response.status) \(reason)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
    for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
    head += "\(PLMHD_APPLICATION_MARKER_HEADER): \(requestID)\r\n\r\n"
    let bytes = Array(head.utf8) + body
    var sent = 0
    while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return }
        sent += count
    }
}

private func clientAddress(_ connection: OpaquePointer?) -> String {
    var buffer = [CChar](repeating: 0, count: 64)
    guard plmhd_connection_client_address(connection, &buffer, buffer.count) == 0 else { return "unknown" }
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

// MARK: Waiting pulls

extension SyncServer {
    /// Holds a pull: suspends its connection and registers it with the notifier, which resumes it
    /// when its library gets events or the wait ends; the resumed call answers it.
    fileprivate func hold(_ wait: PullWait, on connection: OpaquePointer, exchange: Exchange) -> MHD_Result {
        let now = MonotonicClock.milliseconds()
        exchange.phase = .waiting(since: now)
        held.wrappingAdd(1, ordering: .acquiringAndReleasing)
        // Suspend before registering: the notifier may resume the connection at once, and only a
        // suspended connection may be resumed.
        MHD_suspend_connection(connection)
        let suspended = SuspendedConnection(pointer: connection)
        let deadline = now.saturatingAdd(UInt64(wait.seconds) * 1000)
        switch handler.notifier.wait(libraryID: wait.libraryID, since: wait.since, until: deadline, wake: { _ in suspended.resume() }) {
        case .waiting(let ticket):
            deadlines.hold(key(connection), ticket: ticket)
        case .alreadyCommitted, .closed:
            suspended.resume()
        case .full:
            exchange.refusal = HTTPError(
                503, .internalError,
                "the server holds as many waiting pulls as it allows (\(configuration.maximumWaitingPulls)); retry after a few seconds",
                headers: [("Retry-After", "5")])
            suspended.resume()
        }
        return .YES
    }

    /// Answers a pull whose wait ended: its page (empty when nothing arrived), or its refusal.
    fileprivate func answerHeld(on connection: OpaquePointer?, exchange: Exchange, since: UInt64) -> MHD_Result {
        held.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        deadlines.release(key(connection))
        exchange.phase = .receiving
        exchange.waitedMilliseconds = MonotonicClock.milliseconds() - since
        guard let request = exchange.request else { return .NO }
        let response = exchange.refusal?.response ?? handler.respond(to: request, body: .none)
        return queue(response, on: connection, exchange: exchange)
    }
}

// MARK: libmicrohttpd callbacks

let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, uploadData, uploadSize, connectionContext in
    guard let context, let connection, let connectionContext, let uploadSize else { return .NO }
    let server = Unmanaged<SyncServer>.fromOpaque(context).takeUnretainedValue()
    guard let existing = connectionContext.pointee else {
        let exchange = Exchange(
            id: server.nextRequestID(), method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/")
        connectionContext.pointee = Unmanaged.passRetained(exchange).toOpaque()
        return server.begin(exchange, on: connection)
    }
    let exchange = Unmanaged<Exchange>.fromOpaque(existing).takeUnretainedValue()
    switch exchange.phase {
    case .responded:
        uploadSize.pointee = 0
        return .YES
    case .waiting(let since):
        // Resumed: the library got events, the wait ended, or the server is stopping.
        return server.answerHeld(on: connection, exchange: exchange, since: since)
    case .receiving:
        break
    }
    if uploadSize.pointee > 0 {
        if exchange.failure == nil, let uploadData {
            do throws(HTTPError) {
                try exchange.sink.append(UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee))
            } catch {
                exchange.failure = error
                exchange.sink = .none
            }
        }
        uploadSize.pointee = 0
        return .YES
    }
    return server.finish(exchange, on: connection)
}

extension SyncServer {
    /// The first call, once the head has arrived: checks the framing, routes and authenticates,
    /// prepares the body's sink and arms the body's deadline; or answers an error at once.
    fileprivate func begin(_ exchange: Exchange, on connection: OpaquePointer) -> MHD_Result {
        inFlight.wrappingAdd(1, ordering: .acquiringAndReleasing)
        let head = readHead(connection, method: exchange.method, path: exchange.path)
        let framing = FramingFields(connection)
        if let problem = framingProblem(framing) { return queue(problem.response, on: connection, exchange: exchange) }
        do throws(HTTPError) {
            let request = try handler.prepare(head)
            exchange.request = request
            exchange.sink = try handler.bodySink(for: request)
            // A chunked body may be as large as the route takes.
            let largest = request.route.takesJSONBody ? Int64(configuration.maximumEventBodyBytes) : configuration.maximumBlobBytes
            let bytes = head.contentLength ?? (framing.transferEncodings.isEmpty ? 0 : UInt64(max(0, largest)))
            deadlines.arm(key(connection), .body, deadline: bodyDeadline(now: MonotonicClock.milliseconds(), bytes: bytes))
            return .YES
        } catch {
            // Refused at its head while its body is on the way: a body of a few megabytes is read
            // and dropped before the answer, which a client still sending would otherwise never
            // read (a connection closed under unread bytes is reset). Even a client that asked for
            // `100 Continue` may have stopped waiting for it and be sending. A larger body gets
            // the answer at once, and the connection is closed.
            if let length = head.contentLength, length > 0, length <= Self.refusedBodyReadBytes {
                exchange.failure = error
                exchange.sink = .none
                deadlines.arm(key(connection), .body, deadline: bodyDeadline(now: MonotonicClock.milliseconds(), bytes: length))
                return .YES
            }
            return queue(error.response, on: connection, exchange: exchange)
        }
    }

    /// The largest declared body read and dropped to deliver a refusal made at the request's head.
    static let refusedBodyReadBytes: UInt64 = 8 << 20

    /// The last call, once the body has arrived whole: runs the request, or holds a waiting pull.
    fileprivate func finish(_ exchange: Exchange, on connection: OpaquePointer) -> MHD_Result {
        deadlines.disarm(key(connection))
        let sink = exchange.sink
        exchange.sink = .none
        if let failure = exchange.failure { return queue(failure.response, on: connection, exchange: exchange) }
        guard let request = exchange.request else {
            return queue(HTTPError(500, .internalError, "the request was not prepared").response, on: connection, exchange: exchange)
        }
        switch handler.handle(request, body: sink, mayWait: true) {
        case .respond(let response): return queue(response, on: connection, exchange: exchange)
        case .wait(let wait): return hold(wait, on: connection, exchange: exchange)
        }
    }
}

let completionHandler: MHD_RequestCompletedCallback = { context, connection, connectionContext, termination in
    guard let context, let connectionContext, let raw = connectionContext.pointee else { return }
    connectionContext.pointee = nil
    let server = Unmanaged<SyncServer>.fromOpaque(context).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
    // A pull closed while it waited (the server stopping past its grace period) is no longer held.
    if case .waiting = exchange.phase { server.held.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
    server.deadlines.arm(key(connection), .head, deadline: server.headDeadline(now: MonotonicClock.milliseconds(), afterResponse: true))
    let elapsed = ContinuousClock.now - exchange.started
    let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    var fields: [LogRecord.Field] = [
        .init("id", exchange.id), .init("method", exchange.method), .init("path", exchange.path),
        .init("status", "\(exchange.status)"), .init("duration_ms", String(format: "%.2f", milliseconds)),
    ]
    if let waited = exchange.waitedMilliseconds { fields.append(.init("waited_ms", "\(waited)")) }
    if termination != .REQUEST_TERMINATED_COMPLETED_OK { fields.append(.init("outcome", "aborted")) }
    server.log(exchange.status >= 500 ? .error : .info, "request", fields)
    server.inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
}

let connectionNotice: MHD_NotifyConnectionCallback = { context, connection, socketContext, notice in
    guard let context else { return }
    let server = Unmanaged<SyncServer>.fromOpaque(context).takeUnretainedValue()
    switch notice {
    case .CONNECTION_NOTIFY_STARTED:
        // The server, for the JSON bodies of the HTTP layer's own errors on this connection.
        socketContext?.pointee = context
        server.deadlines.opened(
            key(connection), socket: Int32(plmhd_connection_socket(connection)), address: clientAddress(connection),
            deadline: server.headDeadline(now: MonotonicClock.milliseconds(), afterResponse: false))
    default:
        server.deadlines.closed(key(connection))
    }
}
