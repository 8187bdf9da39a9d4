import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// Sends the head of a resumable upload's `PUT` that announces the bytes from `offset` to the
/// end, then only `body`, and closes its side: an upload cut in the middle. Returns once the
/// server closed the connection, having taken what arrived.
func cutUpload(
    port: UInt16, token: String, hash: String, offset: Int, length: Int, body: some Collection<UInt8>, library: String = "family"
) throws {
    let head = rawRequest(
        "PUT", SyncRoutes.upload(library: library, hash: hash), token: token,
        fields: [
            "Content-Type: application/octet-stream", "Content-Length: \(length - offset)", "\(SyncRoutes.uploadOffsetField): \(offset)",
            "\(SyncRoutes.uploadLengthField): \(length)",
        ])
    let answer = try rawExchangeBytes(port: port, head + Array(body), closeWrite: true)
    #expect(answer.isEmpty, "the server answered a cut upload: \(String(decoding: answer, as: UTF8.self))")
}

extension TestClient {
    /// `GET …/uploads/{hash}`.
    func uploadStatus(_ hash: String, library: String = "family") async throws -> UploadStatus {
        let reply = try await send("GET", SyncRoutes.upload(library: library, hash: hash))
        guard reply.status == 200 else { throw ServerStoreError("upload status: \(reply.status) \(reply.errorMessage)") }
        return try reply.decode(UploadStatus.self)
    }

    /// `PUT …/uploads/{hash}` with the bytes of `blob` from `offset` (to `end`).
    func continueUpload(_ blob: [UInt8], hash: String, from offset: Int, to end: Int? = nil, length: Int? = nil) async throws -> Reply {
        try await send(
            "PUT", SyncRoutes.upload(library: "family", hash: hash), body: Array(blob[offset..<(end ?? blob.count)]), contentType: nil,
            headers: [SyncRoutes.uploadOffsetField: "\(offset)", SyncRoutes.uploadLengthField: "\(length ?? blob.count)"])
    }
}

@Suite("Resumable uploads: an interrupted upload continues from the bytes the server holds")
struct ResumableUploadTests {
    let blob = sampleBytes(3 << 20, seed: 7)
    var hash: String { Hex.encode(SHA256.hash(blob)) }

    func partialFiles(_ fixture: ServerFixture) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: fixture.blobPath + "/tmp/partial").sorted()
    }

    @Test("an upload cut in the middle keeps what arrived; the offset query says how much; the rest completes it")
    func resumesAfterACut() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        #expect(try await client.uploadStatus(hash) == UploadStatus(offset: 0))
        try cutUpload(
            port: fixture.server.port, token: fixture.tokens["anna-phone"]!, hash: hash, offset: 0, length: blob.count,
            body: blob[..<1_000_000])
        #expect(try await client.uploadStatus(hash) == UploadStatus(offset: 1_000_000))
        #expect(try partialFiles(fixture).count == 1)
        // Another device's upload of the same blob is its own.
        #expect(try await fixture.client("ben-laptop").uploadStatus(hash) == UploadStatus(offset: 0))
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash)).status == 404)

        // A body that stops before the end is taken, and the answer says where to go on.
        let more = try await client.continueUpload(blob, hash: hash, from: 1_000_000, to: 2_000_000)
        #expect(more.status == 202)
        #expect(try more.decode(UploadStatus.self) == UploadStatus(offset: 2_000_000))

        let done = try await client.continueUpload(blob, hash: hash, from: 2_000_000)
        #expect(done.status == 201, "\(done.errorMessage)")
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash)).body == blob)
        #expect(try await client.uploadStatus(hash) == UploadStatus(offset: 0, stored: true))
        #expect(try partialFiles(fixture).isEmpty)
        // The answer to the completing request was lost: sending it again finds the blob stored.
        #expect(try await client.continueUpload(blob, hash: hash, from: 2_000_000).status == 200)
    }

    @Test("held bytes that do not hash to the name fail at the end, with a clear error; the upload is discarded, nothing stored")
    func wrongBytesAreDiscarded() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        var forged = Array(blob[..<1_500_000])
        forged[1234] ^= 0xFF
        try cutUpload(
            port: fixture.server.port, token: fixture.tokens["anna-phone"]!, hash: hash, offset: 0, length: blob.count,
            body: forged)
        #expect(try await client.uploadStatus(hash).offset == 1_500_000)
        let refused = try await client.continueUpload(blob, hash: hash, from: 1_500_000)
        #expect(refused.status == 400)
        #expect(refused.errorCode == "hashMismatch")
        #expect(refused.errorMessage.contains("not to the blob's name \(hash)"), "\(refused.errorMessage)")
        #expect(refused.errorMessage.contains("the unfinished upload was discarded: upload the blob again from the start"))
        #expect(try await client.uploadStatus(hash) == UploadStatus(offset: 0))
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash)).status == 404)
        #expect(try partialFiles(fixture).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.blobPath).sorted() == ["tmp"])

        // From the start again, it is stored.
        #expect(try await client.continueUpload(blob, hash: hash, from: 0).status == 201)
    }

    @Test("a request from another byte than the server holds is refused with 409 naming the bytes held; bad fields are named")
    func refusals() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        try cutUpload(
            port: fixture.server.port, token: fixture.tokens["anna-phone"]!, hash: hash, offset: 0, length: blob.count,
            body: blob[..<100_000])
        let elsewhere = try await client.continueUpload(blob, hash: hash, from: 200_000)
        #expect(elsewhere.status == 409)
        #expect(elsewhere.header(SyncRoutes.uploadOffsetField) == "100000")
        #expect(elsewhere.errorMessage.contains("the server holds 100000 bytes of this upload, not 200000"), "\(elsewhere.errorMessage)")
        #expect(try await client.uploadStatus(hash).offset == 100_000)

        let path = SyncRoutes.upload(library: "family", hash: hash)
        let noLength = try await client.send("PUT", path, body: [1], contentType: nil, headers: [SyncRoutes.uploadOffsetField: "0"])
        #expect(noLength.status == 400)
        #expect(noLength.errorMessage.contains("'Upload-Length'"), "\(noLength.errorMessage)")
        let badOffset = try await client.send(
            "PUT", path, body: [1], contentType: nil, headers: [SyncRoutes.uploadOffsetField: "-1", SyncRoutes.uploadLengthField: "9"])
        #expect(badOffset.status == 400)
        #expect(badOffset.errorMessage.contains("field 'Upload-Offset'"), "\(badOffset.errorMessage)")
        let beyond = try await client.continueUpload(blob, hash: hash, from: 100_000, length: 100_001)
        #expect(beyond.status == 400)
        #expect(beyond.errorMessage.contains("goes beyond the blob's Upload-Length"), "\(beyond.errorMessage)")
        let huge = try await client.send(
            "PUT", path, body: [1], contentType: nil,
            headers: [SyncRoutes.uploadOffsetField: "0", SyncRoutes.uploadLengthField: "\(Int64(5) << 40)"])
        #expect(huge.status == 413)
        #expect(
            try await client.send("PUT", path, body: [1], contentType: "text/plain", headers: ["Content-Encoding": "gzip"]).status == 415)
        // Reading devices may not upload; the query is refused to them as well.
        #expect(try await fixture.client("frame").send("GET", path).status == 403)
        #expect(try await fixture.client("frame").continueUpload(blob, hash: hash, from: 0).status == 403)
        #expect(try await client.send("GET", SyncRoutes.upload(library: "family", hash: "xyz")).status == 400)
        // The held bytes are untouched by the refusals.
        #expect(try await client.uploadStatus(hash).offset == 100_000)
    }

    @Test(
        "a refusal made at a request's head reaches a client that sends its whole body before reading: the body is read and dropped, the connection kept"
    )
    func refusalAtTheHeadReachesASendingClient() throws {
        let fixture = try ServerFixture()
        let connection = try RawConnection(port: fixture.server.port)
        let fields = ["\(SyncRoutes.uploadOffsetField): 0", "\(SyncRoutes.uploadLengthField): \(blob.count)"]
        // A reading device may not upload: refused at the head, with 3 MB of body sent at once.
        let path = SyncRoutes.upload(library: "family", hash: hash)
        #expect(connection.send(rawRequest("PUT", path, token: fixture.tokens["frame"]!, fields: fields, body: blob)))
        let refused = try connection.response()
        #expect(refused.status == 403)
        #expect(refused.error?.message.isEmpty == false)
        // The same connection serves the next request: nothing of the dropped body is read as one.
        // It holds nothing of the refused bytes.
        #expect(connection.send(rawRequest("GET", path, token: fixture.tokens["anna-phone"]!)))
        let status = try connection.response()
        #expect(status.status == 200)
        #expect(try UploadStatus.decode(status.body) == UploadStatus(offset: 0))
    }

    @Test("a newer request takes an upload over from one still receiving: the older one stops")
    func newerRequestTakesOver() async throws {
        // The first request pauses while the second one runs: its body deadline and the idle
        // timeout of its connection (libmicrohttpd closes a connection that sends nothing for
        // that long: 60 s by default, which a busy parallel run can reach), neither this test's
        // subject, are set beyond any slow machine's pause.
        let fixture = try ServerFixture {
            $0.requestBodyTimeout = TestPatience.limit
            $0.connectionTimeoutSeconds = Int(TestPatience.limit.components.seconds)
        }
        let client = fixture.client()
        let connection = try RawConnection(port: fixture.server.port)
        connection.send(
            rawRequest(
                "PUT", SyncRoutes.upload(library: "family", hash: hash), token: fixture.tokens["anna-phone"]!,
                fields: [
                    "Content-Length: \(blob.count)", "\(SyncRoutes.uploadOffsetField): 0", "\(SyncRoutes.uploadLengthField): \(blob.count)",
                ]) + Array(blob[..<500_000]))
        // Waits until the server has taken the bytes sent (the bound only ends a broken run).
        let clock = ContinuousClock()
        let deadline = clock.now + TestPatience.limit
        while try await client.uploadStatus(hash).offset < 500_000, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await client.uploadStatus(hash).offset == 500_000)
        let done = try await client.continueUpload(blob, hash: hash, from: 500_000)
        #expect(done.status == 201, "\(done.errorMessage)")
        // The first connection's further bytes are refused.
        connection.send(Array(blob[500_000...]))
        let stopped = try connection.response()
        #expect(stopped.status == 409, "\(stopped.head)")
        #expect(stopped.error?.message.contains("a newer request of this device continues this upload") == true)
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash)).body == blob)
    }

    @Test(
        "unfinished uploads idle past the limit, by the server clock, are removed; a restart keeps the others and removes what belongs to nothing"
    )
    func abandonedAndLeftovers() async throws {
        let fixture = try ServerFixture()
        let first = fixture.client()
        try cutUpload(
            port: fixture.server.port, token: fixture.tokens["anna-phone"]!, hash: hash, offset: 0, length: blob.count,
            body: blob[..<700_000])
        let other = sampleBytes(10_000, seed: 9)
        let otherHash = Hex.encode(SHA256.hash(other))
        try cutUpload(
            port: fixture.server.port, token: fixture.tokens["ben-laptop"]!, hash: otherHash, offset: 0, length: other.count,
            body: other[..<4_000])

        // Files a crash could leave: a whole upload's temporary file, names of no upload, and the
        // unfinished upload of a blob stored meanwhile.
        let temporary = fixture.blobPath + "/tmp"
        for name in ["upload-0A1B", "partial/notes.txt", "partial/12-\(hash)"] {
            #expect(FileManager.default.createFile(atPath: "\(temporary)/\(name)", contents: Data([1, 2, 3])))
        }
        let stored = sampleBytes(1_000, seed: 10)
        let storedHash = Hex.encode(SHA256.hash(stored))
        #expect(
            try await first.send("PUT", SyncRoutes.blob(library: "family", hash: storedHash), body: stored, contentType: nil).status == 201)
        #expect(FileManager.default.createFile(atPath: "\(temporary)/partial/1-\(storedHash)-anna-phone", contents: Data(stored[..<10])))

        try fixture.restart()
        let client = fixture.client()  // the restarted server listens on a port of its own
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).sorted() == ["partial"])
        #expect(try partialFiles(fixture).count == 2)
        #expect(fixture.logger.records.contains { $0.message == "removed unfinished uploads" })
        // Taken up: its digest is computed again from the file, and the rest completes it.
        #expect(try await client.uploadStatus(hash).offset == 700_000)

        // Idle time counts by the server clock, from the last request.
        let day: UInt64 = 24 * 60 * 60 * 1000
        fixture.clock.set(fixture.clock.read() + day - 1)
        #expect(try await client.uploadStatus(hash).offset == 700_000)
        #expect(fixture.server.collectAbandonedUploads() == 0)
        fixture.clock.set(fixture.clock.read() + 2)
        #expect(fixture.server.collectAbandonedUploads() == 1)  // ben-laptop's, untouched since the restart
        #expect(try await fixture.client("ben-laptop").uploadStatus(otherHash).offset == 0)
        #expect(try partialFiles(fixture).count == 1)

        #expect(try await client.continueUpload(blob, hash: hash, from: 700_000).status == 201)
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: hash)).body == blob)
        #expect(try partialFiles(fixture).isEmpty)
    }
}
