import Foundation

/// The body of a request or a response: bytes in memory, or a file.
///
/// A file body is streamed: a request reads it piece by piece while sending, and a response with a
/// ``HTTPRequest/responseBodyDestination`` is written piece by piece, so a large photo or video is
/// never whole in memory.
public enum HTTPBody: Sendable, Equatable {
    /// Bytes held in memory.
    case bytes([UInt8])
    /// The contents of a local file.
    case file(URL)

    /// An empty body.
    public static let empty = HTTPBody.bytes([])

    /// The bytes of an in-memory body; empty for a file body.
    public var bytes: [UInt8] {
        if case .bytes(let bytes) = self { return bytes }
        return []
    }

    /// The file of a file body, or `nil` for bytes in memory.
    public var fileURL: URL? {
        if case .file(let url) = self { return url }
        return nil
    }
}

/// How far a transfer has come, reported while it runs.
///
/// Counts are bytes on the wire: a gzip-encoded response counts its compressed bytes.
public struct TransferProgress: Sendable, Equatable {
    /// Request body bytes sent so far.
    public var bytesSent: Int64
    /// Request body bytes to send in all, or `nil` when not known yet.
    public var totalBytesToSend: Int64?
    /// Response body bytes received so far.
    public var bytesReceived: Int64
    /// Response body bytes expected in all (from `Content-Length`), or `nil` when not known.
    public var totalBytesToReceive: Int64?

    /// Creates a progress report.
    public init(bytesSent: Int64, totalBytesToSend: Int64?, bytesReceived: Int64, totalBytesToReceive: Int64?) {
        self.bytesSent = bytesSent
        self.totalBytesToSend = totalBytesToSend
        self.bytesReceived = bytesReceived
        self.totalBytesToReceive = totalBytesToReceive
    }
}

/// An HTTP request: method, URL, headers, an optional body and how to receive the response body.
///
/// ```swift
/// var request = HTTPRequest(method: .post, url: serverURL.appending(path: "v1/events"), body: .bytes(payload))
/// request.headers["Content-Type"] = "application/json"
/// request.headers["Authorization"] = "Bearer \(token)"
/// let response = try await transport.send(request)
/// ```
///
/// The description never shows credential header values.
public struct HTTPRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The method, for example ``HTTPMethod/get``.
    public var method: HTTPMethod
    /// The absolute `http` or `https` URL.
    public var url: URL
    /// Header fields to send. The transport adds `Host`, `Content-Length`, `Accept-Encoding` and
    /// `User-Agent` itself; a `Content-Length` given here is ignored in favour of the body's size.
    public var headers: HTTPHeaders
    /// The body to send; ``HTTPBody/empty`` for none.
    public var body: HTTPBody
    /// When set, a successful (2xx) response body is streamed into this file instead of memory.
    ///
    /// The file appears only once the whole body has arrived (it is written beside the destination
    /// and renamed into place), so a failed or cancelled transfer leaves no partial file. A non-2xx
    /// response body, usually a short error document, is returned in memory instead.
    public var responseBodyDestination: URL?
    /// With a ``responseBodyDestination``: the bytes of an interrupted transfer are kept beside the
    /// destination (as `.NAME.partial`), and the next request for the same destination asks only
    /// for the rest (`Range: bytes=N-`). A 206 answer is appended to them, a 200 answer replaces
    /// them, a 416 answer (the kept bytes are not a prefix the server can continue) discards them.
    /// Whoever adopts the file checks its bytes (a content hash): a resumed file is whole only if
    /// the server's blob did not change, which holds for content-addressed blobs.
    public var resumesResponseBody = false
    /// With a ``responseBodyDestination``: the transport hashes the body (SHA-256) as it writes the
    /// file, kept bytes of an earlier transfer included, and gives the digest as the response's
    /// ``HTTPResponse/bodyFileSHA256``, so whoever adopts the file need not read it again.
    /// Transports that do not hash leave that `nil`.
    public var hashesResponseBody = false
    /// With a ``responseBodyDestination``: the transport starts writing the body to the disk as it
    /// arrives and flushes the file (`fsync`) before it is renamed into place, on the transfer's
    /// own thread, and says so in ``HTTPResponse/bodyFileIsFlushed``. Transports that do not flush
    /// leave that false.
    public var flushesResponseBody = false
    /// For a ``HTTPBody/file(_:)`` body: the byte of the file the body starts at, so only the rest
    /// is sent (a resumed upload); 0 sends the whole file. A value beyond the file's end is an error.
    public var bodyFileOffset: Int64 = 0
    /// The longest the whole exchange may take, overriding the transport's default; `nil` keeps the
    /// default. Large blob transfers usually want a longer limit than small API calls.
    public var timeout: Duration?
    /// Called on the transfer's thread as bytes go out and come in, with non-decreasing counts. It
    /// must return quickly.
    public var progress: (@Sendable (TransferProgress) -> Void)?

    /// Creates a request.
    public init(
        method: HTTPMethod = .get,
        url: URL,
        headers: HTTPHeaders = [:],
        body: HTTPBody = .empty,
        responseBodyDestination: URL? = nil,
        timeout: Duration? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.responseBodyDestination = responseBodyDestination
        self.timeout = timeout
        self.progress = progress
    }

    /// The method and the URL (without credentials), the headers with credentials redacted, and the
    /// body's size or file.
    public var description: String {
        var text = "\(method) \(URLDisplay.redacted(url)) \(headers)"
        switch body {
        case .bytes(let bytes) where !bytes.isEmpty: text += " body: \(bytes.count) bytes"
        case .file(let file): text += " body: file \(file.path)" + (bodyFileOffset > 0 ? " from byte \(bodyFileOffset)" : "")
        case .bytes: break
        }
        return text
    }

    /// Same as ``description``: credentials are redacted.
    public var debugDescription: String { description }
}

/// An HTTP response, whatever its status: the transport does not turn 4xx or 5xx into errors.
public struct HTTPResponse: Sendable, Equatable, CustomStringConvertible {
    /// The status code, for example 200 or 503.
    public var status: Int
    /// The header fields of the final response, looked up without regard to case.
    public var headers: HTTPHeaders
    /// The body: bytes in memory, or ``HTTPBody/file(_:)`` when it was streamed into the request's
    /// ``HTTPRequest/responseBodyDestination``.
    public var body: HTTPBody
    /// The SHA-256 of the body file's bytes as the transport wrote them, when the request asked
    /// for it (``HTTPRequest/hashesResponseBody``) and the transport hashes; otherwise `nil`.
    public var bodyFileSHA256: [UInt8]?
    /// Whether the body file was flushed to the disk before it was renamed into place (see
    /// ``HTTPRequest/flushesResponseBody``).
    public var bodyFileIsFlushed = false

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = [:], body: HTTPBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Whether the status is in 200...299.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The status, the headers (credentials redacted) and the body's size or file.
    public var description: String {
        switch body {
        case .bytes(let bytes): "HTTP \(status) \(headers) body: \(bytes.count) bytes"
        case .file(let file): "HTTP \(status) \(headers) body: file \(file.path)"
        }
    }
}

/// Sends HTTP requests. ``CurlTransport`` talks to a real server; tests substitute an in-memory
/// implementation, and ``RetryingTransport`` adds retries to any of them.
///
/// Any HTTP status is returned as an ``HTTPResponse``; only failures to exchange a response at all
/// (see ``TransportError``) and cancellation (`CancellationError`) are thrown.
public protocol HTTPTransport: Sendable {
    /// Sends the request and returns the server's response.
    ///
    /// - Throws: ``TransportError`` when no response could be exchanged, `CancellationError` when the
    ///   calling task was cancelled.
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// Renders URLs for messages without user credentials.
enum URLDisplay {
    /// The URL with any user name and password removed.
    static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            components.user != nil || components.password != nil
        else { return url.absoluteString }
        components.user = nil
        components.password = nil
        return components.string ?? "<url>"
    }

    /// `scheme://host:port` of the URL, with the default port made explicit.
    static func origin(_ url: URL) -> String {
        guard let scheme = url.scheme, let host = url.host else { return redacted(url) }
        let port = url.port ?? (scheme.lowercased() == "https" ? 443 : 80)
        let bracketedHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(bracketedHost):\(port)"
    }
}
