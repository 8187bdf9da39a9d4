import Foundation

/// The paths, limits and name rules of the sync protocol, shared by client and server.
///
/// All routes are under `/v1`; every one except ``health`` needs `Authorization: Bearer <token>`.
public enum SyncRoutes {
    /// The media type of a `Content-Type` value, without parameters, in lowercase.
    public static func mediaType(_ contentType: String) -> String {
        String(contentType.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// `GET /v1/health`.
    public static let health = "/v1/health"

    /// `GET /v1/libraries/{library}`: the ``LibraryInfo`` of the token's library.
    public static func library(_ library: String) -> String { "/v1/libraries/\(library)" }

    /// `POST` (push) and `GET` (pull) `/v1/libraries/{library}/events`.
    public static func events(library: String) -> String { "/v1/libraries/\(library)/events" }

    /// `GET /v1/libraries/{library}/events?since=N&limit=M`, with `&wait=S` when `wait` is given:
    /// the server then holds the request up to `S` seconds (at most ``maximumPullWaitSeconds``)
    /// while the library has no events after `since`.
    public static func pull(library: String, since: Int64, limit: Int = defaultPageLimit, wait: Int? = nil) -> String {
        "\(events(library: library))?since=\(since)&limit=\(limit)" + (wait.map { "&wait=\($0)" } ?? "")
    }

    /// `HEAD`, `PUT` and `GET` `/v1/libraries/{library}/blobs/{sha256}`.
    public static func blob(library: String, hash: String) -> String { "/v1/libraries/\(library)/blobs/\(hash)" }

    /// `GET` (how many bytes the server holds) and `PUT` (more bytes, from `Upload-Offset`)
    /// `/v1/libraries/{library}/uploads/{sha256}`: a resumable upload of a blob, kept per
    /// library, blob and device until it is complete or abandoned.
    public static func upload(library: String, hash: String) -> String { "/v1/libraries/\(library)/uploads/\(hash)" }

    /// The request field of a resumable upload naming the byte of the blob its body starts at.
    public static let uploadOffsetField = "Upload-Offset"
    /// The request field of a resumable upload giving the blob's whole size, in bytes.
    public static let uploadLengthField = "Upload-Length"

    /// `POST /v1/libraries/{library}/blobs/missing`.
    public static func missingBlobs(library: String) -> String { "/v1/libraries/\(library)/blobs/missing" }

    /// `POST /v1/libraries/{library}/blobs/references`: a ``BlobReferencesRequest``.
    public static func blobReferences(library: String) -> String { "/v1/libraries/\(library)/blobs/references" }

    /// `GET` (every entry) or `POST` (changes) `/v1/libraries/{library}/keys`: the library's key
    /// store for end-to-end encryption.
    public static func keys(library: String, after: Int64? = nil) -> String {
        "/v1/libraries/\(library)/keys" + (after.map { "?after=\($0)" } ?? "")
    }

    /// `GET /v1/libraries/{library}/chain`.
    public static func chain(library: String) -> String { "/v1/libraries/\(library)/chain" }

    /// `GET /v1/libraries/{library}/verify`.
    public static func verify(library: String) -> String { "/v1/libraries/\(library)/verify" }

    /// `GET /v1/libraries/{library}/watermark`: the ``CompactionWatermark`` of the library.
    public static func watermark(library: String) -> String { "/v1/libraries/\(library)/watermark" }

    /// The page size of a pull without `limit`.
    public static let defaultPageLimit = 1000
    /// The largest page a pull returns.
    public static let maximumPageLimit = 5000
    /// The longest `wait` a pull may ask for, in seconds.
    public static let maximumPullWaitSeconds = 300

    /// The JSON media type of request and response bodies.
    public static let jsonContentType = "application/json"
}

/// Library names: 1–64 characters of `A–Z a–z 0–9 . _ -`.
public enum LibraryName {
    /// Why `name` cannot name a library, or nil when it can.
    public static func problem(with name: String) -> String? {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count <= 64 else { return "a library name must have 1 to 64 characters" }
        let allowed = utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        return allowed ? nil : "a library name may contain only letters, digits, '.', '_' and '-'"
    }
}

/// Blob names: the lowercase hex SHA-256 of the bytes, exactly 64 characters.
public enum BlobHash {
    /// Whether `name` is exactly 64 lowercase hexadecimal digits.
    public static func isValid(_ name: String) -> Bool {
        let utf8 = name.utf8
        return utf8.count == 64
            && utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
