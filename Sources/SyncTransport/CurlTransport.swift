import CCurl
import Foundation
import Synchronization

/// An ``HTTPTransport`` over libcurl, for talking to a real PhotoLedger server.
///
/// - Connections are kept alive and reused: finished libcurl handles go back to a small pool, each
///   used by one request at a time.
/// - Responses are decompressed transparently (gzip, deflate, and whatever else libcurl supports).
/// - TLS peer and host verification are always on for `https` URLs; ``Configuration/caBundlePath``
///   adds trust in a private certificate authority without ever turning verification off.
/// - Redirects are not followed unless ``Configuration/followRedirects`` is set.
/// - Request bodies from files and responses streamed to files never sit whole in memory.
/// - Cancelling the calling task aborts the transfer (within about a second even when the server is
///   silent) and throws `CancellationError`.
///
/// Each transfer blocks a thread of its own, never one of the cooperative pool, so a slow download
/// does not hold up other requests or other tasks; callers bound how many requests run at once.
///
/// Like every libcurl client, a request sent on a reused connection that the server had already
/// closed is sent once more on a new connection (the body is rewound), so requests should be
/// idempotent.
/// Retries are not done here: wrap the transport in a ``RetryingTransport``.
public final class CurlTransport: HTTPTransport {
    /// Time limits and TLS settings for every request of a transport.
    public struct Configuration: Sendable {
        /// The longest a TCP connection and TLS handshake may take.
        public var connectTimeout: Duration
        /// The longest a whole request may take, unless the request sets its own
        /// ``HTTPRequest/timeout``; `nil` for no overall limit (the low-speed limit still applies).
        public var requestTimeout: Duration?
        /// A transfer slower than this many bytes per second for ``lowSpeedTime`` is aborted as timed
        /// out, which catches stalled connections during long blob transfers.
        public var lowSpeedLimit: Int
        /// How long a transfer may stay below ``lowSpeedLimit``; rounded up to whole seconds.
        public var lowSpeedTime: Duration
        /// A PEM file of certificate authorities to trust for `https`, in place of the system's.
        public var caBundlePath: String?
        /// Whether to follow `3xx` redirects (to `http` and `https` URLs only, at most 5).
        public var followRedirects: Bool
        /// How many idle handles, each with its open connections, are kept for reuse.
        public var maximumIdleHandles: Int
        /// The `User-Agent` header sent with every request.
        public var userAgent: String

        /// Creates a configuration; the defaults suit API calls to a sync server.
        public init(
            connectTimeout: Duration = .seconds(10),
            requestTimeout: Duration? = .seconds(60),
            lowSpeedLimit: Int = 1,
            lowSpeedTime: Duration = .seconds(30),
            caBundlePath: String? = nil,
            followRedirects: Bool = false,
            maximumIdleHandles: Int = 4,
            userAgent: String = "PhotoLedger"
        ) {
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedTime = lowSpeedTime
            self.caBundlePath = caBundlePath
            self.followRedirects = followRedirects
            self.maximumIdleHandles = maximumIdleHandles
            self.userAgent = userAgent
        }
    }

    /// The settings every request uses.
    public let configuration: Configuration
    private let pool: EasyHandlePool

    /// Creates a transport.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.pool = EasyHandlePool(maximumIdle: configuration.maximumIdleHandles)
    }

    /// Sends the request over libcurl and returns the response, whatever its status.
    ///
    /// - Throws: ``TransportError`` when no response could be exchanged; `CancellationError` when
    ///   the calling task is cancelled before or during the transfer.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try Task.checkCancellation()
        try RequestValidation.validate(request)
        let handle = try pool.checkOut(for: request.url)
        let cancellation = CancellationFlag()
        let configuration = configuration
        let pool = pool
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread {
                    let result = Result {
                        try CurlTransfer(handle: handle, request: request, configuration: configuration, cancellation: cancellation)
                            .perform()
                    }
                    pool.checkIn(handle)
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }
}

/// Set from the cancelling task, read by the transfer's progress callback.
final class CancellationFlag: Sendable {
    private let state = Atomic<Bool>(false)

    func cancel() { state.store(true, ordering: .releasing) }

    var isCancelled: Bool { state.load(ordering: .acquiring) }
}

/// Checks what libcurl would otherwise reject with a less helpful message.
enum RequestValidation {
    static func validate(_ request: HTTPRequest) throws {
        let shown = URLDisplay.redacted(request.url)
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw TransportError.invalidURL(url: shown, reason: "only http and https URLs are supported")
        }
        guard let host = request.url.host, !host.isEmpty else {
            throw TransportError.invalidURL(url: shown, reason: "the URL has no host")
        }
        let method = request.method.rawValue
        guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" }) else {
            throw TransportError.invalidRequest(reason: "method '\(method)' is not a valid HTTP method token")
        }
        if request.method == .head, request.body != .empty {
            throw TransportError.invalidRequest(reason: "a HEAD request cannot have a body")
        }
        for field in request.headers {
            guard !field.name.isEmpty, !field.name.contains(where: { $0 == ":" || $0.isWhitespace || $0.isNewline }) else {
                throw TransportError.invalidRequest(reason: "header name '\(field.name)' is empty or contains ':' or whitespace")
            }
            if field.value.contains(where: \.isNewline) {
                throw TransportError.invalidRequest(reason: "the value of header '\(field.name)' contains a line break")
            }
        }
    }
}
