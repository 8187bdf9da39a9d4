import Foundation

/// Where and how to reach an S3-compatible bucket: AWS S3, MinIO, or any store that speaks the
/// S3 protocol with AWS Signature Version 4.
public struct S3Configuration: Sendable, CustomStringConvertible {
    /// How a bucket is named in request URLs.
    public enum Addressing: String, Sendable {
        /// `https://ENDPOINT/BUCKET/KEY`: MinIO and most self-hosted stores.
        case path
        /// `https://BUCKET.ENDPOINT/KEY`: AWS S3's default.
        case virtualHosted = "virtual"
    }

    /// The environment variable naming the endpoint (`https://s3.eu-west-1.amazonaws.com`,
    /// `http://127.0.0.1:9000`); without it, AWS S3 in the region.
    public static let endpointVariable = "PHOTOLEDGER_S3_ENDPOINT"
    /// The environment variable choosing the addressing (`path` or `virtual`); without it, path
    /// style for an endpoint given, virtual-hosted style for AWS S3.
    public static let addressingVariable = "PHOTOLEDGER_S3_ADDRESSING"

    /// The service's base URL (scheme, host, port).
    public var endpoint: URL
    /// The region requests are signed for.
    public var region: String
    /// The bucket.
    public var bucket: String
    /// The key prefix blobs are stored under (no leading or trailing slash; may be empty).
    public var prefix: String
    /// The access key identifier.
    public var accessKeyID: String
    /// The secret access key (never shown).
    public var secretAccessKey: String
    /// A session token for temporary credentials, when there is one (never shown).
    public var sessionToken: String?
    /// How the bucket is named in URLs.
    public var addressing: Addressing
    /// The size of each part of a multipart upload; blobs up to this size are sent in one request.
    public var partSize = 8 << 20

    /// A configuration for `s3://BUCKET/PREFIX`, with the rest given here.
    public init(
        endpoint: URL, region: String, bucket: String, prefix: String, accessKeyID: String, secretAccessKey: String,
        sessionToken: String? = nil, addressing: Addressing
    ) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.prefix = prefix
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.addressing = addressing
    }

    /// The configuration for `url` (`s3://BUCKET/PREFIX`) from the environment:
    /// `PHOTOLEDGER_S3_ENDPOINT`, `PHOTOLEDGER_S3_ADDRESSING`, `AWS_REGION` (or
    /// `AWS_DEFAULT_REGION`, else `us-east-1`), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN` (optional).
    public static func fromEnvironment(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> S3Configuration
    {
        let (bucket, prefix) = try parse(url)
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"
        guard let accessKeyID = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") else {
            throw S3Error(.configuration, "blobs in \(url) need credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", url: url)
        }
        let endpointText = value(endpointVariable) ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText), let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https",
            endpoint.host != nil
        else {
            throw S3Error(
                .configuration, "\(endpointVariable) must be an http or https URL such as http://127.0.0.1:9000", url: endpointText)
        }
        let addressing: Addressing
        if let chosen = value(addressingVariable) {
            guard let parsed = Addressing(rawValue: chosen) else {
                throw S3Error(.configuration, "\(addressingVariable) must be 'path' or 'virtual', not '\(chosen)'", url: url)
            }
            addressing = parsed
        } else {
            addressing = value(endpointVariable) == nil ? .virtualHosted : .path
        }
        return S3Configuration(
            endpoint: endpoint, region: region, bucket: bucket, prefix: prefix, accessKeyID: accessKeyID, secretAccessKey: secret,
            sessionToken: value("AWS_SESSION_TOKEN"), addressing: addressing)
    }

    /// The bucket and prefix of `s3://BUCKET/PREFIX`.
    static func parse(_ url: String) throws -> (bucket: String, prefix: String) {
        guard url.hasPrefix("s3://") else { throw S3Error(.configuration, "a blob store URL must start with s3://", url: url) }
        let rest = url.dropFirst("s3://".count)
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = String(rest.dropFirst(bucket.count)).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let bucketCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789.-")
        guard (3...63).contains(bucket.count), bucket.unicodeScalars.allSatisfy(bucketCharacters.contains) else {
            throw S3Error(.configuration, "the bucket name must be 3-63 of a-z 0-9 . -", url: url)
        }
        let prefixCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/")
        guard prefix.unicodeScalars.allSatisfy(prefixCharacters.contains), !prefix.contains("//") else {
            throw S3Error(.configuration, "the prefix may hold only A-Z a-z 0-9 . _ - and single slashes", url: url)
        }
        return (bucket, prefix)
    }

    /// `s3://BUCKET/PREFIX at ENDPOINT`, without credentials.
    public var description: String {
        "s3://\(bucket)\(prefix.isEmpty ? "" : "/" + prefix) at \(endpoint.absoluteString) (\(region), \(addressing.rawValue) addressing)"
    }

    /// The key of the blob named `hash`: `PREFIX/ab/abcdef…`.
    func key(for hash: String) -> String {
        (prefix.isEmpty ? "" : prefix + "/") + "\(hash.prefix(2))/\(hash)"
    }

    /// The URL of `key` with a canonical query (sorted, encoded, `name=value`).
    func url(key: String, query: [(String, String)] = []) -> String {
        var base = endpoint.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var url: String
        switch addressing {
        case .path:
            url = key.isEmpty ? "\(base)/\(bucket)" : "\(base)/\(bucket)/\(key)"
        case .virtualHosted:
            var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false)!
            components.host = "\(bucket).\(endpoint.host!)"
            components.path = "/\(key)"
            url = components.string!
        }
        if !query.isEmpty {
            // A slash stays as it is: libcurl's Signature Version 4 encodes the query for the signed
            // request itself, so a %2F here would be signed as %252F (a listing by prefix was refused).
            url +=
                "?"
                + query.sorted { $0.0 < $1.0 }.map {
                    "\(Self.encode($0.0))=\(Self.encode($0.1).replacingOccurrences(of: "%2F", with: "/"))"
                }
                .joined(separator: "&")
        }
        return url
    }

    /// AWS's URI encoding: unreserved characters as they are, every other byte as %XX.
    static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(UnicodeScalar(byte))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }
}

/// A failure of the S3 blob store: what happened, at which URL (never with credentials), and
/// what to do.
public struct S3Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is.
    public enum Code: Sendable, Equatable {
        /// The configuration or the environment is incomplete or invalid.
        case configuration
        /// The service could not be reached.
        case unreachable
        /// The service refused the credentials or the signature.
        case denied
        /// The service answered with an error.
        case failed
    }

    /// What kind of failure it is.
    public let code: Code
    /// What happened and what to do.
    public let message: String
    /// The request's URL or the blob store's URL.
    public let url: String

    init(_ code: Code, _ message: String, url: String) {
        self.code = code
        self.message = message
        self.url = url
    }

    public var description: String { "S3 blob store (\(url)): \(message)" }
}
