import CHTTPLayerErrors
import CMicroHTTPD
import Foundation
import LedgerCore
import SyncProtocol
import Synchronization

/// The version reported by `GET /v1/health`.
public let photoLedgerServerVersion = "0.1.0"

/// The sync server: the protocol of `SyncProtocol` over HTTP/1.1, served by libmicrohttpd
/// with a pool of threads, each polling its connections (level-triggered `poll`, which skips
/// suspended connections; see `plmhd_start_daemon` for why not epoll).
///
/// ```swift
/// let store = try SQLiteServerStore(path: "/var/lib/photoledger/server.sqlite")
/// let server = try SyncServer(configuration: .init(store: store, blobDirectory: "/var/lib/photoledger/blobs"))
/// try server.start()                 // port 0 binds an ephemeral port
/// print("listening on http://127.0.0.1:\(server.port)")
/// …
/// server.stop()                      // stops accepting, finishes requests in flight
/// ```
///
/// A pull with `wait` that finds no events is held without a thread (libmicrohttpd suspends its
/// connection) until a push stores events in its library or the wait ends; such waiting pulls
/// are counted apart from the requests in flight, and have room of their own among the
/// connections (``Configuration/maximumWaitingPulls``), so they never starve other requests.
public final class SyncServer: @unchecked Sendable {
    // Safe to share: `state` guards the daemon, the port and the timer; everything else is Sendable.

    /// Everything the server needs, with defaults for the limits.
    public struct Configuration: Sendable {
        /// The store of libraries, tokens, events and the blob index.
        public var store: any ServerStore
        /// The directory of blob files (unless ``blobStore`` is set).
        public var blobDirectory: String
        /// Where blobs are kept, in place of ``blobDirectory`` when set (S3-compatible storage).
        public var blobStore: (any BlobStore)?
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
        /// How long an unfinished resumable upload is kept without a request continuing it (by
        /// `clock`, default one day); the server removes it after, checking every minute.
        public var abandonedUploadMilliseconds: UInt64 = 24 * 60 * 60 * 1000
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
        /// The most connections open at once besides waiting pulls: the HTTP layer accepts at most
        /// this many plus ``maximumWaitingPulls``, so waiting pulls never take the room of other
        /// requests.
        public var maximumConnections = 1024
        /// The most connections open at once from one IP address, waiting pulls included; more are
        /// closed as they arrive, so that one client cannot take every connection. 0 for no limit.
        public var maximumConnectionsPerAddress = 128
        /// How long a request's head (request line and header fields) may take to arrive whole,
        /// from the connection's opening or, on a kept-alive connection, from the end of the
        /// previous response plus the idle timeout. The connection is closed when it runs out,
        /// however steadily bytes trickle in.
        public var requestHeadTimeout: Duration = .seconds(20)
        /// How long a request's body may take to arrive whole once its head has, plus one second
        /// per ``minimumBodyBytesPerSecond`` bytes it declares (a chunked body: the route's
        /// largest). The connection is closed when it runs out.
        public var requestBodyTimeout: Duration = .seconds(20)
        /// The slowest average upload the body deadline allows for.
        public var minimumBodyBytesPerSecond = 16 * 1024
        /// Whether ``SyncServer/start()`` raises the process's soft limit of open files, within the
        /// hard limit, to what the connection limits need (each connection is a socket).
        public var raisesOpenFileLimit = true
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

    /// File descriptors kept apart from connections: the database, blob files being served,
    /// the threads' wake-up channels, standard streams.
    static let reservedDescriptors = 256
    /// The memory pool of one connection, which bounds a request head (about 16 KB). libmicrohttpd
    /// clears a connection's whole pool after each request, so every kept-alive connection (a
    /// waiting pull's, say) holds this much resident memory: larger pools cost memory per client.
    static let connectionMemoryBytes = 16 * 1024
    /// How often the timer thread ends waits and checks request deadlines.
    static let timerInterval: Duration = .milliseconds(100)

    /// The configuration.
    public let configuration: Configuration
    let handler: SyncRequestHandler
    let deadlines = ConnectionDeadlines()
    private let state = Mutex<(daemon: DaemonHandle?, port: UInt16, timer: PeriodicThread?, commits: (any CommitWatch)?)>(
        (nil, 0, nil, nil))
    let inFlight = Atomic<Int>(0)
    let held = Atomic<Int>(0)
    let requestCounter = Atomic<UInt64>(0)
    private let ticks = Atomic<UInt64>(0)
    /// Whether a collection of abandoned uploads is running (it may make requests to S3).
    private let collecting = Atomic<Bool>(false)

    /// Creates a server (not yet listening); creates the blob directory when needed.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.handler = try SyncRequestHandler(configuration: configuration)
    }

    /// The bound port, once started (0 before).
    public var port: UInt16 { state.withLock { $0.port } }

    /// Whether the server is listening.
    public var isRunning: Bool { state.withLock { $0.daemon != nil } }

    /// The number of requests being handled now, waiting pulls not included.
    public var requestsInFlight: Int { max(0, inFlight.load(ordering: .acquiring) - held.load(ordering: .acquiring)) }

    /// The number of pulls waiting now for their library's next events.
    public var waitingPulls: Int { handler.notifier.waitingCount }

    /// The number of connections open now (waiting pulls included).
    public var openConnections: Int { deadlines.count }

    /// Starts listening and serving on the configured address. Removes the temporary files of
    /// uploads an earlier run left behind (one server process per blob directory), and raises
    /// the open-file limit when the configuration asks for it; both are logged.
    ///
    /// - Throws: ``StartError`` when the address is invalid or the port is taken.
    public func start() throws {
        var records: [LogRecord] = []
        try state.withLock { state in
            guard state.daemon == nil else { return }
            records += Self.installHTTPLayerErrorBodies()
            records += removeLeftoverUploads()
            // Blobs of snapshots retired just before a crash.
            let retired = handler.deleteRetiredBlobs()
            if retired > 0 {
                records.append(LogRecord(level: .info, message: "deleted retired snapshot blobs", fields: [.init("blobs", "\(retired)")]))
            }
            let (connectionLimit, limitRecords) = connectionLimit()
            records += limitRecords
            handler.notifier.reopen()
            let notifier = handler.notifier
            state.commits = try configuration.store.watchCommits { commit in
                if let commit { notifier.committed(libraryID: commit.libraryID, through: commit.through) } else { notifier.wakeAll() }
            }
            let context = Unmanaged.passUnretained(self).toOpaque()
            let daemon = configuration.host.withCString { host in
                var options = plmhd_daemon_options(
                    address: host, port: configuration.port, threads: UInt32(max(1, configuration.threadCount)),
                    connection_timeout_seconds: UInt32(clamping: configuration.connectionTimeoutSeconds),
                    connection_memory_limit: Self.connectionMemoryBytes, connection_limit: UInt32(clamping: connectionLimit),
                    per_address_connection_limit: UInt32(clamping: max(0, configuration.maximumConnectionsPerAddress)),
                    listen_backlog: 4096, handler: accessHandler, handler_context: context, completed: completionHandler,
                    completed_context: context, connection_notice: connectionNotice, connection_notice_context: context)
                return plmhd_start_daemon(&options)
            }
            guard let daemon else {
                state.commits?.stop()
                state.commits = nil
                throw StartError(
                    message: "cannot listen on \(configuration.host):\(configuration.port): the address is invalid or the port is in use; "
                        + "choose another --listen address")
            }
            state.daemon = DaemonHandle(pointer: daemon)
            state.port = plmhd_bound_port(daemon)
            state.timer = PeriodicThread(name: "photoledger-server-timer", interval: Self.timerInterval) { [weak self] in self?.tick() }
            records.append(
                LogRecord(
                    level: .info, message: "listening",
                    fields: [
                        .init("address", "\(configuration.host):\(state.port)"), .init("threads", "\(configuration.threadCount)"),
                        .init("max_connections", "\(connectionLimit)"), .init("max_waiting_pulls", "\(configuration.maximumWaitingPulls)"),
                        .init("max_connections_per_address", "\(configuration.maximumConnectionsPerAddress)"),
                    ]))
        }
        for record in records { configuration.logger.log(record) }
    }

    /// Stops accepting connections, answers the waiting pulls (with what their library has),
    /// waits (up to the grace period) for requests in flight to finish, then closes every
    /// connection. Safe to call more than once.
    public func stop() {
        let (handle, timer, commits) = state.withLock { state -> (DaemonHandle?, PeriodicThread?, (any CommitWatch)?) in
            defer {
                state.daemon = nil
                state.timer = nil
                state.commits = nil
            }
            return (state.daemon, state.timer, state.commits)
        }
        commits?.stop()
        guard let daemon = handle?.pointer else { return }
        let listening = MHD_quiesce_daemon(daemon)
        // libmicrohttpd must not stop with suspended connections: every waiting pull is resumed
        // and answered, and no pull starts waiting from now on.
        handler.notifier.close()
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: configuration.shutdownGracePeriod)
        while inFlight.load(ordering: .acquiring) > 0, clock.now < deadline {
            usleep(2_000)
        }
        let unfinished = inFlight.load(ordering: .acquiring)
        timer?.stop()
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

    // MARK: Start

    /// Registers the JSON error bodies for libmicrohttpd's own errors (once per process).
    private static func installHTTPLayerErrorBodies() -> [LogRecord] {
        plmhd_set_error_response_factory(httpLayerErrorResponse)
        guard plmhd_error_responses_replaceable() == 0 else { return [] }
        return [
            LogRecord(
                level: .warning, message: "HTTP-layer errors keep libmicrohttpd's HTML bodies",
                fields: [.init("reason", "the executable does not export its MHD_queue_response; link it with the CHTTPLayerErrors target")]
            )
        ]
    }

    /// Removes what uploads interrupted by a crash left in the blob directory's temporary folder,
    /// and the resumable uploads abandoned for longer than the configuration allows.
    private func removeLeftoverUploads() -> [LogRecord] {
        var records: [LogRecord] = []
        if let (place, removed) = handler.blobs.removeLeftoverUploads(now: configuration.clock()), removed > 0 {
            records.append(
                LogRecord(
                    level: .info, message: "removed unfinished uploads", fields: [.init("files", "\(removed)"), .init("directory", place)]))
        }
        let abandoned = collectAbandonedUploads()
        if abandoned > 0 {
            records.append(LogRecord(level: .info, message: "removed abandoned uploads", fields: [.init("uploads", "\(abandoned)")]))
        }
        return records
    }

    /// Removes the unfinished resumable uploads no request continued for
    /// ``Configuration/abandonedUploadMilliseconds`` (by the configuration's clock), except those
    /// receiving bytes; returns how many. The server does it when it starts and every minute.
    @discardableResult
    public func collectAbandonedUploads() -> Int {
        handler.blobs.collectAbandonedUploads(now: configuration.clock(), idleMilliseconds: configuration.abandonedUploadMilliseconds)
    }

    /// The connection limit for libmicrohttpd: waiting pulls plus other connections, within what
    /// the open-file limit allows once raised (when the configuration asks for it).
    private func connectionLimit() -> (Int, [LogRecord]) {
        let wanted = max(1, configuration.maximumConnections) + max(0, configuration.maximumWaitingPulls)
        let needed = UInt64(wanted + Self.reservedDescriptors)
        var records: [LogRecord] = []
        var limits = OpenFileLimit.current()
        if configuration.raisesOpenFileLimit, limits.soft < needed {
            let (before, after) = OpenFileLimit.raise(to: needed)
            limits = after
            if after.soft > before.soft {
                records.append(
                    LogRecord(
                        level: .info, message: "raised the open-file limit",
                        fields: [.init("from", "\(before.soft)"), .init("to", "\(after.soft)"), .init("hard", "\(after.hard)")]))
            }
        }
        guard limits.soft < needed else { return (wanted, records) }
        let allowed = max(8, Int(clamping: limits.soft) - Self.reservedDescriptors)
        records.append(
            LogRecord(
                level: .warning, message: "the open-file limit caps connections",
                fields: [
                    .init("open_file_limit", "\(limits.soft)"), .init("hard", "\(limits.hard)"), .init("connections", "\(allowed)"),
                    .init("configured", "\(wanted)"),
                    .init("hint", "raise the hard limit of open files (ulimit -Hn, systemd LimitNOFILE=) to \(needed)"),
                ]))
        return (allowed, records)
    }

    // MARK: Timer

    /// Ends the waits that are due; every half second, answers the waiting pulls whose client went
    /// away (libmicrohttpd does not watch suspended connections) and closes connections past their
    /// deadline.
    private func tick() {
        let now = MonotonicClock.milliseconds()
        handler.notifier.expire(now: now)
        let tick = ticks.wrappingAdd(1, ordering: .relaxed).newValue
        if tick % 600 == 0, collecting.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            // Off the timer thread: an S3 store lists and deletes objects.
            Thread.detachNewThread { [self] in
                let removed = collectAbandonedUploads()
                if removed > 0 { log(.info, "removed abandoned uploads", [.init("uploads", "\(removed)")]) }
                collecting.store(false, ordering: .releasing)
            }
        }
        guard tick % 5 == 0 else { return }
        for departed in deadlines.departedWaitingPulls() where handler.notifier.cancel(departed.ticket) {
            // Resumed, the pull is answered; the answer fails on the closed connection, which ends it.
            if let connection = OpaquePointer(bitPattern: departed.connection) { SuspendedConnection(pointer: connection).resume() }
        }
        let expired = deadlines.shutDownExpired(now: now) { socket in _ = shutdown(socket, Int32(SHUT_RDWR)) }
        for connection in expired {
            log(
                .warning, "closed a slow connection",
                [
                    .init("address", connection.address), .init("waiting_for", connection.phase.rawValue),
                    .init(
                        "reason",
                        connection.phase == .head
                            ? "the request head did not arrive within \(configuration.requestHeadTimeout)"
                            : "the request body did not arrive in time"),
                ])
        }
    }

    // MARK: Deadlines

    /// When the next request's head is due on a connection that opened or answered `now`.
    func headDeadline(now: UInt64, afterResponse: Bool) -> UInt64 {
        let idle = afterResponse ? UInt64(max(0, configuration.connectionTimeoutSeconds)) * 1000 : 0
        return now.saturatingAdd(idle).saturatingAdd(Self.milliseconds(configuration.requestHeadTimeout))
    }

    /// When the body of a request whose head arrived `now` is due, for a body of `bytes`.
    func bodyDeadline(now: UInt64, bytes: UInt64) -> UInt64 {
        let rate = UInt64(max(1, configuration.minimumBodyBytesPerSecond))
        let (transfer, overflow) = (bytes / rate).multipliedReportingOverflow(by: 1000)
        return now.saturatingAdd(Self.milliseconds(configuration.requestBodyTimeout)).saturatingAdd(overflow ? .max : transfer)
    }

    private static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds).multipliedReportingOverflow(by: 1000).overflow
            ? .max : UInt64(seconds) * 1000 + UInt64(attoseconds / 1_000_000_000_000_000)
    }
}

extension UInt64 {
    /// `self + other`, or `.max` when that overflows.
    func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}

/// A libmicrohttpd daemon handle. Sendable because libmicrohttpd's daemon functions are
/// thread-safe, and the server hands the handle out of its mutex exactly once to stop it.
struct DaemonHandle: @unchecked Sendable {
    // Safe to share: libmicrohttpd's daemon functions are thread-safe; only stop() takes it out.
    let pointer: OpaquePointer
}
