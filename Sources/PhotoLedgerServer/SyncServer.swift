import CMicroHTTPD
import Foundation
import LedgerCore
import Synchronization
import SyncProtocol

/// The version reported by `GET /v1/health`.
public let photoLedgerServerVersion = "0.1.0"

/// The sync server: the protocol of ``SyncProtocol`` over HTTP/1.1, served by libmicrohttpd
/// with a thread pool.
///
/// ```swift
/// let store = try SQLiteServerStore(path: "/var/lib/photoledger/server.sqlite")
/// let server = try SyncServer(configuration: .init(store: store, blobDirectory: "/var/lib/photoledger/blobs"))
/// try server.start()                 // port 0 binds an ephemeral port
/// print("listening on http://127.0.0.1:\(server.port)")
/// …
/// server.stop()                      // stops accepting, finishes requests in flight
/// ```
public final class SyncServer: @unchecked Sendable {
    // Safe to share: `daemon` and `boundPort` are guarded by `state`; the handler is Sendable.

    /// Everything the server needs, with defaults for the limits.
    public struct Configuration: Sendable {
        /// The store of libraries, tokens, events and the blob index.
        public var store: any ServerStore
        /// The directory of blob files.
        public var blobDirectory: String
        /// The IPv4 address to listen on.
        public var host = "127.0.0.1"
        /// The port to listen on; 0 picks a free port (read it from ``SyncServer/port``).
        public var port: UInt16 = 0
        /// The number of threads serving connections.
        public var threadCount = 4
        /// The largest JSON body accepted, after decompression (default 32 MB).
        public var maximumEventBodyBytes = 32 << 20
        /// The largest blob accepted (default 4 GB).
        public var maximumBlobBytes: Int64 = 4 << 30
        /// The largest event payload accepted; larger events are rejected (default 1 MB).
        public var maximumPayloadBytes = 1 << 20
        /// How far an event's clock stamp may be ahead of the server clock (default 5 minutes).
        public var maximumClockSkewMilliseconds: UInt64 = 5 * 60 * 1000
        /// Responses larger than this are gzip-compressed for clients that accept it.
        public var gzipThreshold = 1024
        /// Seconds an idle connection is kept open.
        public var connectionTimeoutSeconds = 60
        /// The most pulls held at once waiting for events (`wait=`); a pull that would wait beyond
        /// them is answered 503 with `Retry-After`.
        public var maximumWaitingPulls = 10_000
        /// How long ``SyncServer/stop()`` waits for requests in flight.
        public var shutdownGracePeriod: Duration = .seconds(10)
        /// The server clock, in Unix milliseconds.
        public var clock: @Sendable () -> UInt64 = { WallClock.milliseconds() }
        /// Where log records go.
        public var logger: any ServerLogger = StandardErrorLogger()
        /// The version reported by the health route.
        public var version = photoLedgerServerVersion

        /// A configuration over `store`, with blob files in `blobDirectory`.
        public init(store: any ServerStore, blobDirectory: String) {
            self.store = store
            self.blobDirectory = blobDirectory
        }
    }

    /// A server that cannot start or serve.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// What went wrong and what to do.
        public let message: String
        public var description: String { message }
    }

    /// The configuration.
    public let configuration: Configuration
    let handler: SyncRequestHandler
    private let state = Mutex<(daemon: DaemonHandle?, port: UInt16)>((nil, 0))
    let inFlight = Atomic<Int>(0)
    let requestCounter = Atomic<UInt64>(0)

    /// Creates a server (not yet listening); creates the blob directory when needed.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.handler = try SyncRequestHandler(configuration: configuration)
    }

    /// The bound port, once started (0 before).
    public var port: UInt16 { state.withLock { $0.port } }

    /// Whether the server is listening.
    public var isRunning: Bool { state.withLock { $0.daemon != nil } }

    /// The number of requests being handled now.
    public var requestsInFlight: Int { inFlight.load(ordering: .acquiring) }

    /// Starts listening and serving on the configured address.
    ///
    /// - Throws: ``StartError`` when the address is invalid or the port is taken.
    public func start() throws {
        try state.withLock { state in
            guard state.daemon == nil else { return }
            let context = Unmanaged.passUnretained(self).toOpaque()
            let daemon = plmhd_start_daemon(
                configuration.host, configuration.port, UInt32(max(1, configuration.threadCount)),
                UInt32(configuration.connectionTimeoutSeconds), 256 * 1024, accessHandler, context, completionHandler, context)
            guard let daemon else {
                throw StartError(
                    message: "cannot listen on \(configuration.host):\(configuration.port): the address is invalid or the port is in use; "
                        + "choose another --listen address")
            }
            state = (DaemonHandle(pointer: daemon), plmhd_bound_port(daemon))
        }
        log(.info, "listening", [.init("address", "\(configuration.host):\(port)"), .init("threads", "\(configuration.threadCount)")])
    }

    /// Stops accepting connections, waits (up to the grace period) for requests in flight to
    /// finish, then closes every connection. Safe to call more than once.
    public func stop() {
        let handle = state.withLock { state -> DaemonHandle? in
            let daemon = state.daemon
            state.daemon = nil
            return daemon
        }
        guard let daemon = handle?.pointer else { return }
        let listening = MHD_quiesce_daemon(daemon)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: configuration.shutdownGracePeriod)
        while inFlight.load(ordering: .acquiring) > 0, clock.now < deadline {
            usleep(2_000)
        }
        let unfinished = inFlight.load(ordering: .acquiring)
        MHD_stop_daemon(daemon)
        if listening >= 0 { close(listening) }
        state.withLock { $0.port = 0 }
        log(.info, "stopped", [.init("unfinished_requests", "\(unfinished)")])
    }

    deinit {
        stop()
    }

    func log(_ level: LogLevel, _ message: String, _ fields: [LogRecord.Field]) {
        configuration.logger.log(LogRecord(level: level, message: message, fields: fields))
    }

    func nextRequestID() -> String {
        let number = requestCounter.wrappingAdd(1, ordering: .relaxed).newValue
        return "r\(number)"
    }
}

/// A libmicrohttpd daemon handle. Sendable because libmicrohttpd's daemon functions are
/// thread-safe, and the server hands the handle out of its mutex exactly once to stop it.
struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The state of one request, from its first handler call to the completion notice.
final class Exchange {
    let id: String
    let method: String
    let path: String
    let started = ContinuousClock.now
    var request: PreparedRequest?
    var sink: RequestBodySink = .none
    var failure: HTTPError?
    var status = 0
    var responded = false

    init(id: String, method: String, path: String) {
        self.id = id
        self.method = method
        self.path = path
    }
}

// MARK: libmicrohttpd callbacks

private func header(_ connection: OpaquePointer?, _ name: String, kind: MHD_ValueKind = .HEADER_KIND) -> String? {
    MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
}

private func readHead(_ connection: OpaquePointer?, method: String, path: String) -> RequestHead {
    var query: [String: String] = [:]
    for name in ["since", "limit"] {
        if let value = header(connection, name, kind: .GET_ARGUMENT_KIND) { query[name] = value }
    }
    return RequestHead(
        method: method, path: path, authorization: header(connection, "Authorization"), contentType: header(connection, "Content-Type"),
        contentEncoding: header(connection, "Content-Encoding"),
        contentLength: header(connection, "Content-Length").flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) },
        acceptsGzip: accepts(header(connection, "Accept-Encoding"), "gzip"), acceptsZstd: accepts(header(connection, "Accept-Encoding"), "zstd"),
        acceptsEventPages: accepts(header(connection, "Accept"), EventPage.contentType), query: query)
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer?, exchange: Exchange) -> MHD_Result {
    let handle: OpaquePointer?
    switch response.body {
    case .empty:
        handle = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
    case .bytes(let bytes):
        handle = bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .file(let descriptor, let size):
        handle = MHD_create_response_from_fd(Int(size), descriptor)
        if handle == nil { close(descriptor) }
    }
    guard let handle else { return .NO }
    defer { MHD_destroy_response(handle) }
    for (name, value) in response.headers { MHD_add_response_header(handle, name, value) }
    MHD_add_response_header(handle, "X-Request-Id", exchange.id)
    exchange.status = response.status
    exchange.responded = true
    return MHD_queue_response(connection, UInt32(response.status), handle)
}

private let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, uploadData, uploadSize, connectionContext in
    guard let context, let connectionContext, let uploadSize else { return .NO }
    let server = Unmanaged<SyncServer>.fromOpaque(context).takeUnretainedValue()
    guard let existing = connectionContext.pointee else {
        let methodText = method.map { String(cString: $0) } ?? "GET"
        let path = url.map { String(cString: $0) } ?? "/"
        let exchange = Exchange(id: server.nextRequestID(), method: methodText, path: path)
        connectionContext.pointee = Unmanaged.passRetained(exchange).toOpaque()
        server.inFlight.wrappingAdd(1, ordering: .acquiringAndReleasing)
        do throws(HTTPError) {
            let request = try server.handler.prepare(readHead(connection, method: methodText, path: path))
            exchange.request = request
            exchange.sink = try server.handler.bodySink(for: request)
            return .YES
        } catch {
            return queue(error.response, on: connection, exchange: exchange)
        }
    }
    let exchange = Unmanaged<Exchange>.fromOpaque(existing).takeUnretainedValue()
    if exchange.responded {
        uploadSize.pointee = 0
        return .YES
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
    let response: HTTPResponse
    if let failure = exchange.failure {
        response = failure.response
    } else if let request = exchange.request {
        response = server.handler.respond(to: request, body: exchange.sink)
    } else {
        response = HTTPError(500, .internalError, "the request was not prepared").response
    }
    exchange.sink = .none
    return queue(response, on: connection, exchange: exchange)
}

private let completionHandler: MHD_RequestCompletedCallback = { context, _, connectionContext, termination in
    guard let context, let connectionContext, let raw = connectionContext.pointee else { return }
    connectionContext.pointee = nil
    let server = Unmanaged<SyncServer>.fromOpaque(context).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.takeRetainedValue(Unmanaged<Exchange>.fromOpaque(raw))()
    let elapsed = ContinuousClock.now - exchange.started
    let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    var fields: [LogRecord.Field] = [
        .init("id", exchange.id), .init("method", exchange.method), .init("path", exchange.path),
        .init("status", "\(exchange.status)"), .init("duration_ms", String(format: "%.2f", milliseconds)),
    ]
    if termination != .REQUEST_TERMINATED_COMPLETED_OK { fields.append(.init("outcome", "aborted")) }
    server.log(exchange.status >= 500 ? .error : .info, "request", fields)
    server.inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
}
