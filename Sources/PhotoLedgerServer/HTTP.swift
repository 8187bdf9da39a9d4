import Foundation
import SyncProtocol

/// What the server needs from a request's head: captured once, before the body arrives.
public struct RequestHead: Sendable, Hashable {
    /// The method, such as `GET`.
    public var method: String
    /// The decoded path, without the query.
    public var path: String
    /// The `Authorization` header.
    public var authorization: String?
    /// The `Content-Type` header.
    public var contentType: String?
    /// The `Content-Encoding` header.
    public var contentEncoding: String?
    /// The `Content-Length` header, when present and numeric.
    public var contentLength: UInt64?
    /// Whether `Accept-Encoding` lists gzip (not with `q=0`).
    public var acceptsGzip: Bool
    /// Whether `Accept-Encoding` lists zstd (not with `q=0`): preferred to gzip for large bodies.
    public var acceptsZstd: Bool
    /// Whether `Accept` lists the binary event page (`EventPage.contentType`, not
    /// with `q=0`): pulls are then answered in that form rather than JSON.
    public var acceptsEventPages: Bool
    /// Whether `Accept` lists the key store's binary form (`KeyStoreBody.contentType`, not with
    /// `q=0`): the key store's answers are then in that form rather than JSON.
    public var acceptsKeyStoreBodies: Bool
    /// The query arguments the routes use (`since`, `limit`, `wait`, `after`).
    public var query: [String: String]
    /// The `Range` header: a blob download resumed from a byte offset.
    public var range: String?
    /// The `Upload-Offset` header of a resumable upload: the byte of the blob its body starts at.
    public var uploadOffset: String?
    /// The `Upload-Length` header of a resumable upload: the blob's whole size.
    public var uploadLength: String?

    /// Creates a request head.
    public init(
        method: String, path: String, authorization: String? = nil, contentType: String? = nil, contentEncoding: String? = nil,
        contentLength: UInt64? = nil, acceptsGzip: Bool = false, acceptsZstd: Bool = false, acceptsEventPages: Bool = false,
        acceptsKeyStoreBodies: Bool = false, query: [String: String] = [:], range: String? = nil, uploadOffset: String? = nil,
        uploadLength: String? = nil
    ) {
        self.method = method
        self.path = path
        self.authorization = authorization
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.contentLength = contentLength
        self.acceptsGzip = acceptsGzip
        self.acceptsZstd = acceptsZstd
        self.acceptsEventPages = acceptsEventPages
        self.acceptsKeyStoreBodies = acceptsKeyStoreBodies
        self.query = query
        self.range = range
        self.uploadOffset = uploadOffset
        self.uploadLength = uploadLength
    }
}

extension RequestHead {
    /// The `Content-Encoding` as the header checks and the body reader both read it: lowercased,
    /// without surrounding whitespace; nil when absent or empty.
    public var bodyEncoding: String? {
        guard let value = contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased(), !value.isEmpty else { return nil }
        return value
    }
}

/// Whether an `Accept` or `Accept-Encoding` header value accepts `item` (a media type or a
/// coding, in lowercase): listed by name, without `q=0`. Wildcards do not count: the forms
/// this server chooses by are ones a client must name.
func accepts(_ header: String?, _ item: String) -> Bool {
    guard let header else { return false }
    for listed in header.lowercased().split(separator: ",") {
        let parts = listed.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.first == item else { continue }
        let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
        return quality > 0
    }
    return false
}

/// A response ready to send.
public struct HTTPResponse: Sendable {
    /// The body.
    public enum Body: Sendable {
        /// No body.
        case empty
        /// Bytes in memory.
        case bytes([UInt8])
        /// `size` bytes of an open file from `offset`, streamed by the HTTP layer, which closes it.
        case file(descriptor: Int32, offset: Int64, size: Int64)
        /// Bytes read piece by piece while they are sent (a blob from S3-compatible storage).
        case stream(any BlobStream)
    }

    /// The status code.
    public var status: Int
    /// Extra headers (`Content-Length` is set by the HTTP layer).
    public var headers: [(String, String)]
    /// The body.
    public var body: Body

    /// Creates a response.
    public init(status: Int, headers: [(String, String)] = [], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response with `message` as its body.
    public static func json(_ message: some WireMessage, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", SyncRoutes.jsonContentType)], body: .bytes(message.encoded()))
    }
}

/// A request refused with a status and a JSON error body.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// The status code.
    public var status: Int
    /// The error body.
    public var body: ErrorResponse
    /// Extra headers (`Allow`, `WWW-Authenticate`).
    public var headers: [(String, String)]

    /// Creates an error.
    public init(_ status: Int, _ code: ErrorCode, _ message: String, headers: [(String, String)] = [], serverTime: UInt64? = nil) {
        self.status = status
        self.body = ErrorResponse(code: code, message: message, serverTime: serverTime)
        self.headers = headers
    }

    /// The error as a response.
    public var response: HTTPResponse {
        var response = HTTPResponse.json(body, status: status)
        response.headers += headers
        return response
    }

    public var description: String { "\(status) \(body)" }

    /// The answer to a request the HTTP layer refused before the server saw it (libmicrohttpd's
    /// own errors), by status: the connection is closed after it.
    static func refusedByHTTPLayer(status: Int) -> HTTPError {
        let message: String
        switch status {
        case 413:
            return HTTPError(413, .payloadTooLarge, "the declared Content-Length is larger than this server accepts; send smaller bodies")
        case 414:
            message = "the request line is longer than this server accepts; use a shorter URL"
        case 431:
            message = "the request's header fields are larger than this server accepts; send fewer or shorter header fields"
        case 505:
            message = "this server speaks HTTP/1.1 (and HTTP/1.0); send the request as HTTP/1.1"
        case 500..<600:
            return HTTPError(status, .internalError, "the server could not handle the request; retry later")
        default:
            message =
                "the request is not valid HTTP/1.1 (request line, header field syntax, Content-Length or chunked encoding); fix the request"
        }
        return HTTPError(status, .badRequest, message)
    }

    static func badRequest(_ message: String) -> HTTPError { HTTPError(400, .badRequest, message) }
    static func notFound(_ message: String) -> HTTPError { HTTPError(404, .notFound, message) }
    static func forbidden(_ message: String) -> HTTPError { HTTPError(403, .forbidden, message) }
    static func unauthorized(_ message: String) -> HTTPError {
        HTTPError(401, .unauthorized, message, headers: [("WWW-Authenticate", "Bearer realm=\"photoledger\"")])
    }
}

/// The routes of the protocol, parsed from a method and a path.
public enum Route: Sendable, Hashable {
    /// `GET /v1/health`.
    case health
    /// `GET /v1/libraries/{library}`: what the token may do in the library.
    case info(library: String)
    /// `POST …/events`.
    case push(library: String)
    /// `GET …/events`.
    case pull(library: String)
    /// `HEAD`, `GET` or `PUT` `…/blobs/{hash}`; `method` says which.
    case blob(library: String, hash: String, method: String)
    /// `GET` (the bytes held) or `PUT` (more bytes) `…/uploads/{hash}`: a resumable upload.
    case upload(library: String, hash: String, method: String)
    /// `POST …/blobs/missing`.
    case missingBlobs(library: String)
    /// `POST …/blobs/references`: the blobs the events about objects refer to.
    case blobReferences(library: String)
    /// `GET …/chain`.
    case chain(library: String)
    /// `GET …/verify`.
    case verify(library: String)
    /// `GET …/watermark`.
    case watermark(library: String)
    /// `GET` or `POST` `…/keys`: the key store of an end-to-end encrypted library.
    case keys(library: String, method: String)
    /// `POST …/snapshots`: offer a snapshot.
    case offerSnapshot(library: String)
    /// `GET …/snapshots/latest`: the newest snapshot's record.
    case latestSnapshot(library: String)

    /// The library named in the path, if any.
    public var library: String? {
        switch self {
        case .health: return nil
        case .info(let library), .push(let library), .pull(let library), .blob(let library, _, _), .upload(let library, _, _),
            .missingBlobs(let library), .blobReferences(let library),
            .chain(let library), .verify(let library), .watermark(let library), .keys(let library, _), .offerSnapshot(let library),
            .latestSnapshot(let library):
            return library
        }
    }

    /// Whether the route is a push.
    var isPush: Bool {
        if case .push = self { return true }
        return false
    }

    /// Whether the route is a change of the key store.
    var isKeyChange: Bool {
        if case .keys(_, "POST") = self { return true }
        return false
    }

    /// Whether the route takes a blob's raw bytes as its body.
    var takesBlobBody: Bool {
        switch self {
        case .blob(_, _, "PUT"), .upload(_, _, "PUT"): return true
        default: return false
        }
    }

    /// Whether the route takes a JSON request body.
    var takesJSONBody: Bool {
        switch self {
        case .push, .missingBlobs, .blobReferences, .keys(_, "POST"), .offerSnapshot: return true
        default: return false
        }
    }

    /// Parses `method` and `path`; throws 404 for an unknown path, 405 with `Allow` for a known
    /// path with another method, 400 for a blob name that is not a lowercase SHA-256.
    public static func match(method: String, path: String) throws(HTTPError) -> Route {
        func allow(_ methods: [String], _ route: Route) throws(HTTPError) -> Route {
            guard methods.contains(method) else {
                throw HTTPError(
                    405, .methodNotAllowed, "\(method) is not allowed on \(path); use \(methods.joined(separator: " or "))",
                    headers: [("Allow", methods.joined(separator: ", "))])
            }
            return route
        }
        if path == SyncRoutes.health { return try allow(["GET", "HEAD"], .health) }
        let prefix = "/v1/libraries/"
        guard path.hasPrefix(prefix) else { throw HTTPError.notFound("no route for \(path)") }
        let rest = path.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/") else { return try allow(["GET"], .info(library: String(rest))) }
        let library = String(rest[..<slash])
        let tail = String(rest[rest.index(after: slash)...])
        switch tail {
        case "events": return try allow(["GET", "POST"], method == "POST" ? .push(library: library) : .pull(library: library))
        case "chain": return try allow(["GET"], .chain(library: library))
        case "verify": return try allow(["GET"], .verify(library: library))
        case "watermark": return try allow(["GET"], .watermark(library: library))
        case "blobs/missing": return try allow(["POST"], .missingBlobs(library: library))
        case "blobs/references": return try allow(["POST"], .blobReferences(library: library))
        case "keys": return try allow(["GET", "POST"], .keys(library: library, method: method))
        case "snapshots": return try allow(["POST"], .offerSnapshot(library: library))
        case "snapshots/latest": return try allow(["GET"], .latestSnapshot(library: library))
        default:
            if tail.hasPrefix("uploads/") {
                let hash = String(tail.dropFirst("uploads/".count))
                guard BlobHash.isValid(hash) else {
                    throw HTTPError.badRequest("field 'hash': a blob name must be exactly 64 lowercase hexadecimal digits (its SHA-256)")
                }
                return try allow(["GET", "PUT"], .upload(library: library, hash: hash, method: method))
            }
            guard tail.hasPrefix("blobs/") else { throw HTTPError.notFound("no route for \(path)") }
            let hash = String(tail.dropFirst("blobs/".count))
            guard BlobHash.isValid(hash) else {
                throw HTTPError.badRequest("field 'hash': a blob name must be exactly 64 lowercase hexadecimal digits (its SHA-256)")
            }
            return try allow(["GET", "HEAD", "PUT"], .blob(library: library, hash: hash, method: method))
        }
    }
}
