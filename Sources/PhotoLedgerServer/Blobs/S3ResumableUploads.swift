import Foundation
import LedgerCore
import SyncProtocol
import Synchronization

/// Resumable uploads in S3: a multipart upload under the blob's key, whose parts hold the bytes
/// received so far, and a small marker object, `PREFIX/uploads/<library row>/<device>/<hash>`,
/// that names it: its upload id, the blob's size, the parts sent (size and ETag) and the state of
/// the SHA-256 over them, and when it was last used. The marker is rewritten after each part, so
/// any server process sharing the bucket, or this one after a restart, continues the upload after
/// its last part (checked against S3's list of the parts); the bytes received after the last part
/// are not kept. Bytes are hashed as they are sent; S3 makes the object visible only when the
/// upload is completed, which happens only once the whole hashed to its name.
extension S3BlobStore {
    /// What a marker records.
    struct Marker: Equatable {
        var uploadID: String
        var length: Int64
        var touched: UInt64
        var digest: [UInt8]
        /// Each part's size and ETag, in part order from 1.
        var parts: [(size: Int64, etag: String)]

        var held: Int64 { parts.reduce(0) { $0 + $1.size } }

        static func == (left: Marker, right: Marker) -> Bool {
            left.uploadID == right.uploadID && left.length == right.length && left.touched == right.touched && left.digest == right.digest
                && left.parts.map(\.size) == right.parts.map(\.size) && left.parts.map(\.etag) == right.parts.map(\.etag)
        }

        var encoded: [UInt8] {
            var text = "photoledger-upload 1\nupload-id \(uploadID)\nlength \(length)\ntouched \(touched)\ndigest \(Hex.encode(digest))\n"
            for part in parts { text += "part \(part.size) \(part.etag)\n" }
            return Array(text.utf8)
        }

        init(uploadID: String, length: Int64, touched: UInt64, digest: [UInt8], parts: [(size: Int64, etag: String)]) {
            self.uploadID = uploadID
            self.length = length
            self.touched = touched
            self.digest = digest
            self.parts = parts
        }

        /// A marker's content, or nil when it is not one.
        init?(_ bytes: [UInt8]) {
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
            guard lines.first == "photoledger-upload 1" else { return nil }
            var uploadID: String?, length: Int64?, touched: UInt64?, digest: [UInt8]?
            var parts: [(size: Int64, etag: String)] = []
            for line in lines.dropFirst() {
                let fields = line.split(separator: " ", maxSplits: 2)
                guard fields.count >= 2 else { return nil }
                switch fields[0] {
                case "upload-id": uploadID = String(fields[1])
                case "length": length = Int64(fields[1])
                case "touched": touched = UInt64(fields[1])
                case "digest": digest = Hex.decode(String(fields[1]))
                case "part":
                    guard fields.count == 3, let size = Int64(fields[1]), size > 0 else { return nil }
                    parts.append((size, String(fields[2])))
                default: return nil
                }
            }
            guard let uploadID, let length, let touched, let digest else { return nil }
            self.init(uploadID: uploadID, length: length, touched: touched, digest: digest, parts: parts)
        }
    }

    /// The marker's key for `key`.
    func markerKey(_ key: PartialUploadKey) -> String {
        markerPrefix + "\(key.libraryID)/\(key.device.rawValue)/\(key.hash)"
    }

    /// The prefix of every marker's key.
    var markerPrefix: String { (configuration.prefix.isEmpty ? "" : configuration.prefix + "/") + "uploads/" }

    /// The marker of `key`, checked against S3's list of the upload's parts, or nil when there
    /// is no upload to continue (an unreadable marker, or parts S3 no longer has, are discarded).
    func loadMarker(_ key: PartialUploadKey) throws(UploadResumeRefusal) -> Marker? {
        let response = try s3("GET", markerKey(key), accepting: [200, 404])
        guard response.status == 200 else { return nil }
        guard let marker = Marker(response.body), marker.length >= 0,
            ResumableDigest(state: marker.digest, length: marker.held) != nil
        else {
            _ = try? s3("DELETE", markerKey(key), accepting: [200, 204, 404])
            return nil
        }
        let listed = try s3("GET", configuration.key(for: key.hash), [("uploadId", marker.uploadID)], accepting: [200, 404])
        let held = listed.status == 200 ? S3XML.blocks("Part", in: listed.body) : []
        var sizes: [Int: (size: Int64, etag: String)] = [:]
        for part in held {
            guard let number = S3XML.value("PartNumber", in: part).flatMap({ Int($0) }),
                let size = S3XML.value("Size", in: part).flatMap({ Int64($0) }), let etag = S3XML.value("ETag", in: part)
            else { continue }
            sizes[number] = (size, etag)
        }
        let complete = marker.parts.enumerated().allSatisfy { index, part in
            sizes[index + 1].map { $0.size == part.size && S3XML.sameETag($0.etag, part.etag) } ?? false
        }
        guard complete else {
            discard(key, uploadID: marker.uploadID)
            return nil
        }
        return marker
    }

    /// Aborts the multipart upload and removes the marker.
    func discard(_ key: PartialUploadKey, uploadID: String?) {
        if let uploadID { _ = try? s3("DELETE", configuration.key(for: key.hash), [("uploadId", uploadID)], accepting: [200, 204, 404]) }
        _ = try? s3("DELETE", markerKey(key), accepting: [200, 204, 404])
    }

    /// One request; a status outside `accepting` is an I/O failure naming it.
    @discardableResult
    func s3(_ method: String, _ key: String, _ query: [(String, String)] = [], body: [UInt8]? = nil, accepting: Set<Int> = [200])
        throws(UploadResumeRefusal) -> S3Client.Response
    {
        try client.send(method, key: key, query: query, body: body, accepting: accepting, failure: UploadResumeRefusal.io)
    }

    /// The bytes held of `key`'s upload: the sum of the parts its marker names.
    public func heldBytes(of key: PartialUploadKey, now: UInt64) throws -> Int64 {
        guard var marker = try loadMarker(key) else { return 0 }
        marker.touched = max(marker.touched, now)
        try s3("PUT", markerKey(key), body: marker.encoded)
        return marker.held
    }

    /// Continues `key`'s upload of a `length`-byte blob from `offset` (see `BlobStore`).
    public func resumeUpload(_ key: PartialUploadKey, from offset: Int64, length: Int64, now: UInt64) throws(UploadResumeRefusal)
        -> any BlobUpload
    {
        let writer = uploads.takeOver(key)
        do throws(UploadResumeRefusal) {
            var marker = try loadMarker(key)
            if let found = marker, found.length != length || found.held > length {
                discard(key, uploadID: found.uploadID)  // begun for a blob of another size
                marker = nil
            }
            let held = marker?.held ?? 0
            guard offset == held else { throw UploadResumeRefusal.offsetMismatch(held: held) }
            return S3ResumedUpload(store: self, key: key, writer: writer, length: length, now: now, marker: marker)
        } catch {
            uploads.release(key, writer)
            throw error
        }
    }

    /// Removes the resumable uploads whose marker was last used `idleMilliseconds` before `now`,
    /// except those receiving bytes in this process, and the multipart uploads no marker names
    /// that S3 says began as long ago (a whole upload a crash cut short); returns how many.
    public func collectAbandonedUploads(now: UInt64, idleMilliseconds: UInt64) -> Int {
        var removed = 0
        var named: Set<String> = []
        for markerKey in (try? listKeys(prefix: markerPrefix)) ?? [] {
            let parts = markerKey.dropFirst(markerPrefix.count).split(separator: "/")
            guard parts.count == 3, let library = Int64(parts[0]), BlobHash.isValid(String(parts[2])) else { continue }
            let key = PartialUploadKey(libraryID: library, device: DeviceID(String(parts[1])), hash: String(parts[2]))
            guard let response = try? s3("GET", markerKey, accepting: [200, 404]), response.status == 200 else { continue }
            guard let marker = Marker(response.body) else {
                _ = try? s3("DELETE", markerKey, accepting: [200, 204, 404])
                removed += 1
                continue
            }
            named.insert(marker.uploadID)
            guard !uploads.isReceiving(key), now >= marker.touched, now - marker.touched >= idleMilliseconds else { continue }
            discard(key, uploadID: marker.uploadID)
            removed += 1
        }
        let blobPrefix = configuration.prefix.isEmpty ? "" : configuration.prefix + "/"
        guard let listed = try? s3("GET", "", [("prefix", blobPrefix), ("uploads", "")]) else { return removed }
        for upload in S3XML.blocks("Upload", in: listed.body) {
            guard let key = S3XML.value("Key", in: upload), let id = S3XML.value("UploadId", in: upload), !named.contains(id),
                !key.hasPrefix(markerPrefix), let initiated = S3XML.value("Initiated", in: upload).flatMap(S3XML.milliseconds),
                now >= initiated, now - initiated >= idleMilliseconds
            else { continue }
            if (try? s3("DELETE", key, [("uploadId", id)], accepting: [200, 204, 404])) != nil { removed += 1 }
        }
        return removed
    }

    /// The keys under `prefix` (ListObjectsV2, every page).
    private func listKeys(prefix: String) throws(UploadResumeRefusal) -> [String] {
        var keys: [String] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try s3("GET", "", query)
            keys += S3XML.blocks("Contents", in: response.body).compactMap { S3XML.value("Key", in: $0) }
            token = S3XML.value("IsTruncated", in: response.body) == "true" ? S3XML.value("NextContinuationToken", in: response.body) : nil
        } while token != nil
        return keys
    }
}

/// Which requests of this process may write which resumable uploads: a newer request takes an
/// upload over from an older one (a client that reconnected while the server still held its
/// first connection), and uploads receiving bytes are not collected.
final class ResumableWriters: Sendable {
    private let state = Mutex<(next: UInt64, writers: [PartialUploadKey: (writer: UInt64, receiving: Bool)])>((1, [:]))

    /// A new writer of `key`, which becomes the only one that may write it.
    func takeOver(_ key: PartialUploadKey) -> UInt64 {
        state.withLock { state in
            defer { state.next += 1 }
            state.writers[key] = (state.next, true)
            return state.next
        }
    }

    /// Whether `writer` is still the one that may write `key`.
    func mayWrite(_ key: PartialUploadKey, _ writer: UInt64) -> Bool { state.withLock { $0.writers[key]?.writer == writer } }

    /// Whether a request of this process is writing `key`.
    func isReceiving(_ key: PartialUploadKey) -> Bool { state.withLock { $0.writers[key]?.receiving ?? false } }

    /// `writer` is done with `key`.
    func release(_ key: PartialUploadKey, _ writer: UInt64) {
        state.withLock { state in
            if state.writers[key]?.writer == writer { state.writers[key] = nil }
        }
    }
}

/// A request's part of a resumable upload to S3: bytes go into parts of the multipart upload,
/// the marker is rewritten after each, and the last part completes it once the whole hashed to
/// its name. A blob no larger than one part is stored with one `PUT` and keeps nothing between
/// requests.
final class S3ResumedUpload: BlobUpload {
    private let store: S3BlobStore
    private let key: PartialUploadKey
    private let writer: UInt64
    private let length: Int64
    private let now: UInt64
    private var uploadID: String?
    private var parts: [(size: Int64, etag: String)]
    private var digest: ResumableDigest
    private var buffer: [UInt8] = []
    private var held: Int64

    init(store: S3BlobStore, key: PartialUploadKey, writer: UInt64, length: Int64, now: UInt64, marker: S3BlobStore.Marker?) {
        self.store = store
        self.key = key
        self.writer = writer
        self.length = length
        self.now = now
        uploadID = marker?.uploadID
        parts = marker?.parts ?? []
        held = marker?.held ?? 0
        digest = marker.flatMap { ResumableDigest(state: $0.digest, length: $0.held) } ?? ResumableDigest()
    }

    deinit { store.uploads.release(key, writer) }

    private var blobKey: String { store.configuration.key(for: key.hash) }
    private var partSize: Int { store.configuration.partSize }

    var size: Int64 { held + Int64(buffer.count) }

    private func checkWriter() throws(BlobUploadFailure) {
        guard store.uploads.mayWrite(key, writer) else { throw .superseded }
    }

    private func wrap<T>(_ body: () throws(UploadResumeRefusal) -> T) throws(BlobUploadFailure) -> T {
        do {
            return try body()
        } catch {
            switch error {
            case .io(let detail): throw .io(detail)
            case .offsetMismatch, .unsupported: throw .io("\(error)")
            }
        }
    }

    func append(_ chunk: UnsafeRawBufferPointer) throws(BlobUploadFailure) {
        try checkWriter()
        guard size + Int64(chunk.count) <= length else {
            store.discard(key, uploadID: uploadID)
            uploadID = nil
            throw .tooLarge(limit: length)
        }
        var rest = chunk[...]
        while !rest.isEmpty {
            let room = partSize - buffer.count
            buffer.append(contentsOf: rest.prefix(room))
            rest = rest.dropFirst(room)
            // A blob of one part waits for the commit and its single PUT.
            if buffer.count == partSize, uploadID != nil || size < length { try sendPart(recording: true) }
        }
    }

    /// Sends the buffer as the next part (starting the multipart upload the first time), and
    /// records it in the marker when `recording`.
    private func sendPart(recording: Bool) throws(BlobUploadFailure) {
        let uploadID: String
        if let started = self.uploadID {
            uploadID = started
        } else {
            uploadID = try start()
            self.uploadID = uploadID
        }
        let response = try wrap { () throws(UploadResumeRefusal) in
            try store.s3("PUT", blobKey, [("partNumber", "\(parts.count + 1)"), ("uploadId", uploadID)], body: buffer)
        }
        guard let etag = response.headers["etag"] else { throw .io("S3 answered an uploaded part without its ETag") }
        buffer.withUnsafeBytes { digest.update($0) }
        parts.append((Int64(buffer.count), etag))
        held += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
        guard recording else { return }
        let marker = S3BlobStore.Marker(uploadID: uploadID, length: length, touched: now, digest: digest.state, parts: parts)
        _ = try wrap { () throws(UploadResumeRefusal) in try store.s3("PUT", store.markerKey(key), body: marker.encoded) }
    }

    private func start() throws(BlobUploadFailure) -> String {
        let response = try wrap { () throws(UploadResumeRefusal) in try store.s3("POST", blobKey, [("uploads", "")], body: []) }
        guard let id = S3XML.value("UploadId", in: response.body) else {
            throw .io("S3 answered the start of a multipart upload without an UploadId")
        }
        return id
    }

    func commit(as hash: String) throws(BlobUploadFailure) -> Bool {
        try checkWriter()
        var whole = digest
        buffer.withUnsafeBytes { whole.update($0) }
        let actual = whole.hex
        guard actual == hash else {
            store.discard(key, uploadID: uploadID)
            uploadID = nil
            throw .hashMismatch(actual: actual)
        }
        guard let uploadID else {
            let stored = try wrap { () throws(UploadResumeRefusal) in try store.s3("HEAD", blobKey, accepting: [200, 404]).status == 200 }
            if !stored { _ = try wrap { () throws(UploadResumeRefusal) in try store.s3("PUT", blobKey, body: buffer) } }
            return !stored
        }
        if !buffer.isEmpty { try sendPart(recording: false) }
        var document = "<CompleteMultipartUpload>"
        for (index, part) in parts.enumerated() {
            document += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(part.etag)</ETag></Part>"
        }
        document += "</CompleteMultipartUpload>"
        let response = try wrap { () throws(UploadResumeRefusal) in
            try store.s3("POST", blobKey, [("uploadId", uploadID)], body: Array(document.utf8))
        }
        // S3 may answer 200 with an error document when completion fails late.
        guard !String(decoding: response.body.prefix(512), as: UTF8.self).contains("<Error>") else {
            throw .io("S3 could not complete the multipart upload: \(response.errorSummary)")
        }
        self.uploadID = nil
        _ = try? store.s3("DELETE", store.markerKey(key), accepting: [200, 204, 404])
        return true
    }
}

/// The little of S3's XML answers the store reads: the text of elements by name.
enum S3XML {
    /// The contents of every `<name>…</name>` in `body`, in order.
    static func blocks(_ name: String, in body: [UInt8]) -> [String] {
        let text = String(decoding: body, as: UTF8.self)
        var found: [String] = []
        var rest = text[...]
        while let start = rest.range(of: "<\(name)>"), let end = rest.range(of: "</\(name)>", range: start.upperBound..<rest.endIndex) {
            found.append(String(rest[start.upperBound..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// The contents of the first `<name>…</name>` in `text`, entities decoded.
    static func value(_ name: String, in text: String) -> String? {
        blocks(name, in: Array(text.utf8)).first.map(unescape)
    }

    /// The contents of the first `<name>…</name>` in `body`, entities decoded.
    static func value(_ name: String, in body: [UInt8]) -> String? { blocks(name, in: body).first.map(unescape) }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#34;", with: "\"")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// Whether two ETags are the same, with or without their quotes.
    static func sameETag(_ left: String, _ right: String) -> Bool {
        let strip = { (value: String) in value.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        return strip(left) == strip(right)
    }

    /// An ISO 8601 time (`2026-12-01T23:58:12.000Z`) in Unix milliseconds.
    static func milliseconds(_ text: String) -> UInt64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
        return date.map { UInt64(max(0, $0.timeIntervalSince1970 * 1000)) }
    }
}
