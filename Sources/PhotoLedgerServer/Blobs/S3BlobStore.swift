import Foundation
import LedgerCore
import Synchronization

/// Blobs as objects in S3-compatible storage (AWS S3, MinIO, …), shared by every server process
/// that names the same bucket and prefix: the object `PREFIX/ab/abcdef…` holds the blob whose
/// SHA-256 is `abcdef…`.
///
/// Uploads are hashed as they arrive. A blob up to the part size is stored with one `PUT` once
/// its hash matched; a larger one goes up in parts of a multipart upload under the name it
/// claims, which S3 keeps invisible until the upload is completed, and it is completed only once
/// the hash matched (otherwise aborted). Downloads stream from S3 to the client piece by piece.
public final class S3BlobStore: BlobStore {
    /// Where the blobs are.
    public let configuration: S3Configuration
    let client: S3Client
    /// Which requests of this process write which resumable uploads.
    let uploads = ResumableWriters()

    /// Opens the store and checks that the bucket exists and the credentials may use it.
    ///
    /// - Throws: ``S3Error`` when the service is unreachable, refuses the credentials or has
    ///   no such bucket.
    public init(configuration: S3Configuration) throws {
        self.configuration = configuration
        client = try S3Client(configuration: configuration)
        let response = try client.send("HEAD", key: "")
        switch response.status {
        case 200..<300:
            return
        case 301, 307, 400:
            throw S3Error(
                .failed, "the bucket answered \(response.status): it may be in another region than \(configuration.region); set AWS_REGION",
                url: configuration.description)
        case 403:
            throw S3Error(
                .denied,
                "access to the bucket is denied (403): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION, and the key's permissions",
                url: configuration.description)
        case 404:
            throw S3Error(.failed, "the bucket '\(configuration.bucket)' does not exist; create it first", url: configuration.description)
        default:
            throw S3Error(.failed, "the bucket check answered \(response.status) \(response.errorSummary)", url: configuration.description)
        }
    }

    /// Starts an upload of the blob that claims the name `hash`.
    public func beginUpload(of hash: String, limit: Int64) throws -> any BlobUpload {
        S3BlobUpload(client: client, key: configuration.key(for: hash), limit: limit)
    }

    /// Deletes the blob's object (S3 answers a delete of a missing object with success too).
    public func remove(_ hash: String) throws {
        let response = try client.send("DELETE", key: configuration.key(for: hash))
        guard (200..<300).contains(response.status) || response.status == 404 else {
            throw S3Error(
                .failed, "deleting blob \(hash) answered \(response.status) \(response.errorSummary)", url: configuration.description)
        }
    }

    /// Whether the blob's object exists (`HEAD`).
    public func holds(_ hash: String) throws -> Bool {
        let response = try client.send("HEAD", key: configuration.key(for: hash))
        switch response.status {
        case 200..<300: return true
        case 404: return false
        default:
            throw S3Error(
                .failed, "looking up blob \(hash) answered \(response.status) \(response.errorSummary)", url: configuration.description)
        }
    }

    /// The blob streamed from its object, or nil when there is no such object.
    public func content(of hash: String, from offset: Int64) throws -> BlobContent? {
        try S3BlobStream.open(client: client, key: configuration.key(for: hash), from: offset).map { .stream($0) }
    }
}

/// An upload to S3: hashed as it arrives, sent in parts once it outgrows one part.
final class S3BlobUpload: BlobUpload {
    private let client: S3Client
    private let key: String
    private let limit: Int64
    private var digest = SHA256()
    private var buffer: [UInt8] = []
    private var uploadID: String?
    private var parts: [String] = []  // ETags, in part order
    private var completed = false
    private(set) var size: Int64 = 0

    init(client: S3Client, key: String, limit: Int64) {
        self.client = client
        self.key = key
        self.limit = limit
    }

    deinit {
        if let uploadID, !completed {
            _ = try? client.send("DELETE", key: key, query: [("uploadId", uploadID)])
        }
    }

    private var partSize: Int { client.configuration.partSize }

    func append(_ chunk: UnsafeRawBufferPointer) throws(BlobUploadFailure) {
        guard size + Int64(chunk.count) <= limit else { throw .tooLarge(limit: limit) }
        digest.update(chunk)
        size += Int64(chunk.count)
        var rest = chunk[...]
        while !rest.isEmpty {
            let room = partSize - buffer.count
            buffer.append(contentsOf: rest.prefix(room))
            rest = rest.dropFirst(room)
            if buffer.count == partSize, !rest.isEmpty || uploadID != nil {
                try sendPart()
            }
        }
    }

    /// Sends the buffer as the next part, starting the multipart upload the first time.
    private func sendPart() throws(BlobUploadFailure) {
        let uploadID: String
        if let started = self.uploadID {
            uploadID = started
        } else {
            uploadID = try start()
            self.uploadID = uploadID
        }
        let response = try request("PUT", [("partNumber", "\(parts.count + 1)"), ("uploadId", uploadID)], buffer)
        guard let etag = response.headers["etag"] else { throw .io("S3 answered an uploaded part without its ETag") }
        parts.append(etag)
        buffer.removeAll(keepingCapacity: true)
    }

    private func start() throws(BlobUploadFailure) -> String {
        let response = try request("POST", [("uploads", "")], [])
        let text = String(decoding: response.body, as: UTF8.self)
        guard let start = text.range(of: "<UploadId>"), let end = text.range(of: "</UploadId>", range: start.upperBound..<text.endIndex)
        else {
            throw .io("S3 answered the start of a multipart upload without an UploadId")
        }
        return String(text[start.upperBound..<end.lowerBound])
    }

    func commit(as hash: String) throws(BlobUploadFailure) -> Bool {
        let actual = Hex.encode(digest.finalizeAndReset())
        guard actual == hash, key.hasSuffix(hash) else { throw .hashMismatch(actual: actual) }
        guard let uploadID else {
            if try request("HEAD", [], nil, accepting: [200, 404]).status == 200 { return false }
            try request("PUT", [], buffer)
            return true
        }
        if !buffer.isEmpty { try sendPart() }
        var document = "<CompleteMultipartUpload>"
        for (index, etag) in parts.enumerated() { document += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(etag)</ETag></Part>" }
        document += "</CompleteMultipartUpload>"
        let response = try request("POST", [("uploadId", uploadID)], Array(document.utf8))
        // S3 may answer 200 with an error document when completion fails late.
        guard !String(decoding: response.body.prefix(512), as: UTF8.self).contains("<Error>") else {
            throw .io("S3 could not complete the multipart upload: \(response.errorSummary)")
        }
        completed = true
        return true
    }

    @discardableResult
    private func request(_ method: String, _ query: [(String, String)], _ body: [UInt8]?, accepting: Set<Int> = [200])
        throws(BlobUploadFailure)
        -> S3Client.Response
    {
        try client.send(method, key: key, query: query, body: body, accepting: accepting, failure: BlobUploadFailure.io)
    }
}

/// A blob read from S3 while it is sent: a thread runs the GET and writes what arrives into a
/// local socket pair, which the HTTP layer reads from; each side waits for the other, so at most
/// the socket's buffer is held in memory.
final class S3BlobStream: BlobStream {
    let size: Int64
    private let readEnd: Int32
    private let received = Atomic<Int64>(0)

    private init(size: Int64, readEnd: Int32) {
        self.size = size
        self.readEnd = readEnd
    }

    deinit { close(readEnd) }

    /// Starts the GET; nil when S3 has no such object.
    static func open(client: S3Client, key: String, from offset: Int64 = 0) throws -> S3BlobStream? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw S3Error(.failed, "cannot create a socket pair: \(String(cString: strerror(errno)))", url: key)
        }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let response: S3Client.Response
        do {
            response = try client.startDownload(
                key: key, from: offset,
                sink: { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let sent = send(writeEnd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                        if sent < 0, errno == EINTR { continue }
                        guard sent > 0 else { return false }  // the reader went away
                        offset += sent
                    }
                    return true
                },
                onEnd: { close(writeEnd) })
        } catch {
            close(readEnd)
            throw error
        }
        guard response.status == (offset > 0 ? 206 : 200), let length = response.headers["content-length"].flatMap({ Int64($0) }) else {
            close(readEnd)
            if response.status == 404 { return nil }
            throw S3Error(.failed, "S3 answered the download with \(response.status) \(response.errorSummary)", url: key)
        }
        return S3BlobStream(size: length, readEnd: readEnd)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let count = recv(readEnd, buffer.baseAddress, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw S3Error(.failed, "reading a blob stream failed: \(String(cString: strerror(errno)))", url: "-") }
            let total = received.add(Int64(count), ordering: .relaxed).newValue
            guard count > 0 || total == size else {
                throw S3Error(.failed, "the download from S3 ended after \(total) of \(size) bytes", url: "-")
            }
            return count
        }
    }

    func cancel() {
        shutdown(readEnd, Int32(SHUT_RDWR))
    }
}
