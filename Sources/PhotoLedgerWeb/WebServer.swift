import CMicroHTTPD
import Dispatch
import Foundation
import PhotoLedger
import Synchronization

/// The web view of a library: an HTTP server (libmicrohttpd, a thread per connection) that
/// serves the library's albums, assets, history, sync status and quarantine to a browser, makes
/// the common changes as change blocks, and pushes every change of the library to open pages.
///
/// It listens on loopback unless told otherwise, and a non-loopback address needs a password.
/// Every request must name this server in `Host` and, when it has an `Origin`, come from it; every
/// page needs a session, opened by ``launchURL`` or the password; every change also needs the
/// session's CSRF token.
public final class WebServer: Sendable {
    /// Where and how the server listens.
    public struct Configuration: Sendable {
        /// The address to bind: IPv4 (`127.0.0.1`, the default) or IPv6 (`::1`, with or without
        /// brackets).
        public var address: String
        /// The port; 0 picks a free one.
        public var port: UInt16
        /// The password a login form takes; required unless the address is loopback.
        public var password: String?
        /// Other names the `Host` header may use for this server (such as the machine's name),
        /// beside the address, `localhost` and `127.0.0.1`.
        public var hostNames: [String]
        /// How often the library's log is checked for commits of other processes.
        public var watchInterval: Duration
        /// How long a live stream stays silent before it sends a keep-alive comment.
        public var keepAlive: Duration
        /// The most connections served at once.
        public var connectionLimit: Int
        /// How long a session may go unused before it ends (the person logs in again).
        public var sessionIdleTimeout: Duration
        /// How long a session lasts at most, used or not.
        public var sessionLifetime: Duration
        /// The clock sessions are timed by (tests pass their own).
        public var clock: @Sendable () -> Date

        /// Loopback on a free port, no password.
        public init(
            address: String = "127.0.0.1", port: UInt16 = 0, password: String? = nil, hostNames: [String] = [],
            watchInterval: Duration = .milliseconds(500), keepAlive: Duration = .seconds(15), connectionLimit: Int = 64,
            sessionIdleTimeout: Duration = .seconds(12 * 3600), sessionLifetime: Duration = .seconds(7 * 86_400),
            clock: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.address = address
            self.port = port
            self.password = password
            self.hostNames = hostNames
            self.watchInterval = watchInterval
            self.keepAlive = keepAlive
            self.connectionLimit = connectionLimit
            self.sessionIdleTimeout = sessionIdleTimeout
            self.sessionLifetime = sessionLifetime
            self.clock = clock
        }

        /// Whether the address is a loopback address (127.0.0.0/8, `::1`, or 127.0.0.0/8 mapped
        /// into IPv6).
        public var isLoopback: Bool { ListeningAddress(address)?.isLoopback ?? false }
    }

    /// The address pages are served at, such as `http://127.0.0.1:8080/`.
    public let url: URL
    /// The address that opens a session in a browser (it carries the launch token, a secret:
    /// print it only to the person who started the server).
    public let launchURL: URL
    /// The port the server listens on.
    public let port: UInt16

    let application: WebApplication
    private let daemon: Mutex<DaemonHandle?>
    /// What libmicrohttpd's callbacks reach; it lives as long as the server.
    private let context: DaemonContext

    /// Starts serving `library`.
    ///
    /// - Throws: ``WebServerError`` when the configuration is refused (a non-loopback address
    ///   without a password, an address that is not IPv4) or the port cannot be bound.
    public init(library: PhotoLibrary, configuration: Configuration = Configuration()) throws(WebServerError) {
        guard let listening = ListeningAddress(configuration.address) else {
            throw WebServerError(
                "'\(configuration.address)' is not an IPv4 or IPv6 address",
                hint: "listen on 127.0.0.1 (the default) or [::1], or on an address of this machine such as 192.168.1.10")
        }
        let address = listening.text
        for (name, duration) in [("idle time", configuration.sessionIdleTimeout), ("lifetime", configuration.sessionLifetime)]
        where duration <= .zero {
            throw WebServerError(
                "a session \(name) of \(duration) would end every session at once", hint: "give a positive number of minutes")
        }
        if !listening.isLoopback, (configuration.password ?? "").isEmpty {
            throw WebServerError(
                "listening on \(listening.host) would let other machines reach the library, and no password is set",
                hint: "set a password with --password-file FILE (or PHOTOLEDGER_WEB_PASSWORD), or listen on 127.0.0.1 or [::1]")
        }
        let context = DaemonContext()
        self.context = context
        let handle = address.withCString { address in
            plmhd_start_threaded_daemon(
                address, configuration.port, UInt32(max(1, configuration.connectionLimit)), 120, webAccessHandler,
                Unmanaged.passUnretained(context).toOpaque(), webRequestCompleted, nil)
        }
        guard let handle else {
            throw WebServerError(
                "cannot listen on \(listening.host):\(configuration.port) (the port is taken or the address is not this machine's)",
                hint: "choose another port with --listen \(listening.host):PORT, or stop the program using it")
        }
        port = plmhd_bound_port(handle)
        let host = "\(listening.host):\(port)"
        url = URL(string: "http://\(host)/")!
        let loopbackNames = listening.isIPv6 ? ["[::1]", "localhost"] : ["127.0.0.1", "localhost"]
        let access = WebAccess(
            hosts: Array(Set([listening.host] + loopbackNames + configuration.hostNames)), port: port, password: configuration.password,
            idleTimeout: configuration.sessionIdleTimeout.timeInterval, lifetime: configuration.sessionLifetime.timeInterval,
            clock: configuration.clock)
        launchURL = URL(string: "http://\(host)/login?token=\(access.launchToken)")!
        let feed = LiveChangeFeed(library: library, watchInterval: configuration.watchInterval)
        application = WebApplication(library: library, access: access, feed: feed, keepAlive: configuration.keepAlive.dispatchInterval)
        daemon = Mutex(DaemonHandle(pointer: handle))
        context.application.withLock { $0 = application }
    }

    /// Stops serving: ends the live streams, closes the connections and waits for their threads.
    public func stop() {
        guard
            let handle = daemon.withLock({ handle -> DaemonHandle? in
                defer { handle = nil }
                return handle
            })
        else { return }
        application.feed.stop()
        // The closed streams end with their last chunk once their connection's thread reads the
        // end: give them a moment to go out (libmicrohttpd releases a stream's response after
        // sending it) before the daemon closes every connection.
        let deadline = ContinuousClock.now.advanced(by: .seconds(2))
        while application.feed.subscriberCount > 0, ContinuousClock.now < deadline { usleep(2_000) }
        MHD_stop_daemon(handle.pointer)
    }

    deinit { stop() }
}

/// Why the web view could not start, and what to do.
public struct WebServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    /// What to do about it.
    public let hint: String

    init(_ message: String, hint: String) {
        self.message = message
        self.hint = hint
    }

    public var description: String { "\(message); \(hint)" }
}

/// An address to listen on, checked and written the ways it is used.
struct ListeningAddress {
    /// The address as the socket takes it (`127.0.0.1`, `::1`).
    let text: String
    /// Whether it is IPv6.
    let isIPv6: Bool
    /// Whether it is a loopback address.
    let isLoopback: Bool

    /// Parses an IPv4 dotted quad or an IPv6 address (with or without brackets); nil for
    /// anything else, host names included.
    init?(_ address: String) {
        var text = address
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        if !address.hasPrefix("["), inet_pton(AF_INET, text, &ipv4) == 1 {
            self.text = text
            isIPv6 = false
            isLoopback = UInt32(bigEndian: ipv4.s_addr) >> 24 == 127
        } else if inet_pton(AF_INET6, text, &ipv6) == 1, let canonical = Self.canonical(ipv6) {
            self.text = canonical
            isIPv6 = true
            let bytes = withUnsafeBytes(of: ipv6) { Array($0) }
            let mappedIPv4 = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            isLoopback = bytes == [UInt8](repeating: 0, count: 15) + [1] || (mappedIPv4 && bytes[12] == 127)
        } else {
            return nil
        }
    }

    /// The address as a URL's or `Host` header's host: IPv6 in brackets.
    var host: String { isIPv6 ? "[\(text)]" : text }

    /// The shortest text of an IPv6 address (`::1`), as `inet_ntop` writes it.
    static func canonical(_ address: in6_addr) -> String? {
        var address = address
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(INET6_ADDRSTRLEN))
        defer { buffer.deallocate() }
        guard inet_ntop(AF_INET6, &address, buffer, socklen_t(INET6_ADDRSTRLEN)) != nil else { return nil }
        return String(cString: buffer)
    }
}

extension Duration {
    /// The duration in seconds.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// The daemon's handle.
private struct DaemonHandle: @unchecked Sendable {
    // Safe to share: only stop() uses it, once, taking it out of the mutex.
    let pointer: OpaquePointer
}

/// What libmicrohttpd's callbacks reach: the routes, set once the server is complete (requests
/// that come earlier are refused), and the counter of request identifiers.
private final class DaemonContext: Sendable {
    let application = Mutex<WebApplication?>(nil)
    private let requestCounter = Atomic<UInt64>(0)

    func nextRequestID() -> String { String(requestCounter.wrappingAdd(1, ordering: .relaxed).newValue) }
}

/// One request from its head to its answer, touched only by its connection's thread.
private final class Exchange {
    var request: WebRequest
    var tooLarge = false

    init(_ request: WebRequest) { self.request = request }
}

/// The most bytes a request body may have (changes are small JSON objects).
private let maximumBodySize = 1 << 20

private func header(_ connection: OpaquePointer?, kind: MHD_ValueKind) -> [String: String] {
    final class Collector {
        var values: [String: String] = [:]
    }
    let collector = Collector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values(
            connection, kind,
            { context, _, key, value in
                guard let context, let key else { return .YES }
                let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
                let name = String(cString: key)
                let text = value.map { String(cString: $0) } ?? ""
                if collector.values[name] == nil { collector.values[name] = text }
                return .YES
            }, Unmanaged.passUnretained(collector).toOpaque())
    }
    return collector.values
}

private let webAccessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, uploadData, uploadSize, connectionContext in
    guard let context, let connection, let connectionContext, let uploadSize else { return .NO }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(context).takeUnretainedValue()
    guard let application = daemon.application.withLock({ $0 }) else { return .NO }
    guard let existing = connectionContext.pointee else {
        let headers = Dictionary(
            header(connection, kind: .HEADER_KIND).map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        let request = WebRequest(
            method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
            query: header(connection, kind: .GET_ARGUMENT_KIND), headers: headers)
        connectionContext.pointee = Unmanaged.passRetained(Exchange(request)).toOpaque()
        return .YES
    }
    let exchange = Unmanaged<Exchange>.fromOpaque(existing).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        if exchange.request.body.count + uploadSize.pointee > maximumBodySize {
            exchange.tooLarge = true
        } else if let uploadData {
            exchange.request.body.append(UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
        }
        uploadSize.pointee = 0
        return .YES
    }
    let start = ContinuousClock.now
    var response =
        exchange.tooLarge
        ? WebError(413, "bodyTooLarge", "the request body is larger than \(maximumBodySize) bytes; changes are small JSON objects").response
        : application.respond(to: exchange.request)
    // How long the answer took to make, for the browser's resource timings (same origin only).
    let milliseconds = (ContinuousClock.now - start).timeInterval * 1000
    response.headers.append(("Server-Timing", "app;dur=\((milliseconds * 100).rounded() / 100)"))
    return queue(response, on: connection, requestID: daemon.nextRequestID(), keepAlive: application.keepAlive)
}

private let webRequestCompleted: MHD_RequestCompletedCallback = { _, _, connectionContext, _ in
    guard let connectionContext, let existing = connectionContext.pointee else { return }
    Unmanaged<Exchange>.fromOpaque(existing).release()
    connectionContext.pointee = nil
}

/// Hands a response to libmicrohttpd. Every response carries `X-Request-Id`: a process that also
/// runs the sync server (which replaces libmicrohttpd's own error pages, those without it) leaves
/// the web view's answers alone. Security headers go on every answer.
private func queue(_ response: WebResponse, on connection: OpaquePointer, requestID: String, keepAlive: DispatchTimeInterval) -> MHD_Result
{
    let handle: OpaquePointer?
    switch response.body {
    case .bytes(let data):
        handle = data.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .eventStream(let subscription):
        let box = Unmanaged.passRetained(StreamBox(subscription, keepAlive: keepAlive)).toOpaque()
        handle = MHD_create_response_from_callback(UInt64.max, 4096, readLiveStream, box, releaseLiveStream)
        if handle == nil { Unmanaged<StreamBox>.fromOpaque(box).release() }
    case .file(let slice):
        // libmicrohttpd owns the descriptor from here: it closes it with the response.
        let descriptor = slice.take()
        handle = MHD_create_response_from_fd_at_offset64(slice.length, descriptor, slice.offset)
        if handle == nil { close(descriptor) }
    }
    guard let handle else { return .NO }
    defer { MHD_destroy_response(handle) }
    for (name, value) in response.headers { MHD_add_response_header(handle, name, value) }
    MHD_add_response_header(handle, "X-Request-Id", requestID)
    MHD_add_response_header(handle, "X-Content-Type-Options", "nosniff")
    MHD_add_response_header(handle, "X-Frame-Options", "DENY")
    return MHD_queue_response(connection, UInt32(response.status), handle)
}

/// Holds a live stream for libmicrohttpd's callbacks.
private final class StreamBox {
    let subscription: LiveSubscription
    let keepAlive: DispatchTimeInterval

    init(_ subscription: LiveSubscription, keepAlive: DispatchTimeInterval) {
        self.subscription = subscription
        self.keepAlive = keepAlive
    }
}

private let readLiveStream: MHD_ContentReaderCallback = { context, _, buffer, maximum in
    guard let context, let buffer else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
    let box = Unmanaged<StreamBox>.fromOpaque(context).takeUnretainedValue()
    guard let count = box.subscription.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: maximum), keepAlive: box.keepAlive)
    else {
        return -1  // MHD_CONTENT_READER_END_OF_STREAM
    }
    return count
}

private let releaseLiveStream: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    Unmanaged<StreamBox>.fromOpaque(context).takeRetainedValue().subscription.finish()
}
