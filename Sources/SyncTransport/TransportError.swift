/// A failure to exchange an HTTP request and response.
///
/// HTTP statuses such as 401 or 503 are not errors of the transport: they arrive as an
/// ``HTTPResponse``. Cancellation of the calling task is reported as `CancellationError`.
/// Descriptions name the URL (without user credentials) and say what to do; they never contain
/// header values, so an `Authorization` token cannot leak into logs.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server could not be reached: the host name did not resolve, or the connection was refused.
    /// `origin` is `scheme://host:port`; `detail` is libcurl's message.
    case unreachable(origin: String, detail: String)
    /// Connecting, or the whole exchange, took longer than its time limit.
    case timedOut(url: String, detail: String)
    /// The connection broke before a complete response arrived (reset, closed without an answer).
    case connectionLost(url: String, detail: String)
    /// The TLS handshake or the server's certificate failed verification.
    case tlsFailure(url: String, detail: String)
    /// The URL is malformed or not `http`/`https`.
    case invalidURL(url: String, reason: String)
    /// The request itself cannot be sent, for example a header containing a line break. Names a
    /// header at most, never its value.
    case invalidRequest(reason: String)
    /// A local file could not be read (request body) or written (response destination).
    case localFile(path: String, detail: String)
    /// Any other libcurl failure: its code and message.
    case other(url: String, curlCode: Int, message: String)

    /// Whether trying the same request again later may succeed: unreachable, timed out, connection lost.
    public var isRetryable: Bool {
        switch self {
        case .unreachable, .timedOut, .connectionLost: true
        case .tlsFailure, .invalidURL, .invalidRequest, .localFile, .other: false
        }
    }

    /// What happened and what to do about it.
    public var description: String {
        switch self {
        case .unreachable(let origin, let detail):
            "cannot reach \(origin) — is the server running? Check the address and the network (\(detail))"
        case .timedOut(let url, let detail):
            "request to \(url) timed out; the server or the network is slow or stalled, try again later (\(detail))"
        case .connectionLost(let url, let detail):
            "connection to \(url) was lost before a complete response arrived; try again (\(detail))"
        case .tlsFailure(let url, let detail):
            "TLS failure talking to \(url): the server's certificate could not be verified or the server does not "
                + "speak TLS on this port; check the URL scheme and port, the server's certificate and the CA bundle (\(detail))"
        case .invalidURL(let url, let reason):
            "invalid URL \(url): \(reason)"
        case .invalidRequest(let reason):
            "invalid request: \(reason)"
        case .localFile(let path, let detail):
            "cannot use local file \(path): \(detail); check that it exists, is readable or writable, and that the disk has space"
        case .other(let url, let curlCode, let message):
            "request to \(url) failed: libcurl error \(curlCode): \(message)"
        }
    }
}
