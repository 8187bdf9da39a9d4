import Foundation
import LedgerCore
import Synchronization
import Testing

@testable import SyncTransport

/// CurlTransport against the scripted server on loopback.
@Suite("CurlTransport on loopback")
struct CurlTransportTests {
    let transport = CurlTransport(configuration: .init(connectTimeout: .seconds(5), requestTimeout: .seconds(20)))

    static let gzipBody = Array(String(repeating: "PhotoLedger gzip test line\n", count: 100).utf8)
    /// `gzip.compress(gzipBody, mtime=0)`, computed once with Python.
    static let gzipEncoded: [UInt8] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x0b, 0xc8, 0xc8, 0x2f, 0xc9, 0xf7, 0x49, 0x4d, 0x49, 0x4f,
        0x2d, 0x52, 0x48, 0xaf, 0xca, 0x2c, 0x50, 0x28, 0x49, 0x2d, 0x2e, 0x51, 0xc8, 0xc9, 0xcc, 0x4b, 0xe5, 0x0a, 0x18, 0x95,
        0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0x1a, 0x95, 0xa2, 0xa5,
        0x14, 0x00, 0x88, 0xe9, 0x92, 0x50, 0x8c, 0x0a, 0x00, 0x00,
    ]

    // MARK: - Round trips

    @Test func getReturnsStatusHeadersAndBodyAndSendsRequestHeaders() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(headers: [("X-Answer", "42")], body: Array("hello".utf8)))])
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.url("/v1/ping?x=1"), headers: ["X-Client": "test"]))
        #expect(response.status == 200)
        #expect(response.headers["x-answer"] == "42")
        #expect(response.headers["CONTENT-LENGTH"] == "5")
        #expect(response.body == .bytes(Array("hello".utf8)))
        let received = try #require(server.requests.first)
        #expect(received.method == "GET")
        #expect(received.path == "/v1/ping?x=1")
        #expect(received.header("X-Client") == "test")
        #expect(received.header("Expect") == nil)
        #expect(received.header("User-Agent") == "PhotoLedger")
    }

    @Test func postSendsBodyWithoutAnInventedContentType() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(status: 201, body: Array("created".utf8)))])
        defer { server.stop() }
        let payload = Array(#"{"events":[]}"#.utf8)
        let withType = HTTPRequest(
            method: .post, url: server.url("/v1/events"), headers: ["Content-Type": "application/json"], body: .bytes(payload))
        let response = try await transport.send(withType)
        _ = try await transport.send(HTTPRequest(method: .post, url: server.url("/raw"), body: .bytes([1, 2, 3])))
        #expect(response.status == 201)
        #expect(response.body.bytes == Array("created".utf8))
        let requests = server.requests
        #expect(requests.map(\.method) == ["POST", "POST"])
        #expect(requests[0].body == payload)
        #expect(requests[0].header("Content-Type") == "application/json")
        #expect(requests[0].header("Content-Length") == "\(payload.count)")
        #expect(requests[1].body == [1, 2, 3])
        #expect(requests[1].header("Content-Type") == nil)
    }

    @Test func putSendsBody() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(status: 204))])
        defer { server.stop() }
        let body = patternBytes(count: 10_000)
        let response = try await transport.send(HTTPRequest(method: .put, url: server.url("/blob/1"), body: .bytes(body)))
        #expect(response.status == 204)
        #expect(response.body == .empty)
        #expect(server.requests.first?.method == "PUT")
        #expect(server.requests.first?.body == body)
    }

    @Test func headReturnsHeadersWithoutBody() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(headers: [("ETag", "\"abc\"")], body: patternBytes(count: 1234)))])
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(method: .head, url: server.url("/blob/1")))
        #expect(response.status == 200)
        #expect(response.headers["etag"] == "\"abc\"")
        #expect(response.headers["Content-Length"] == "1234")
        #expect(response.body == .empty)
        #expect(server.requests.first?.method == "HEAD")
    }

    @Test func otherMethodsAreSentAsGiven() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(status: 204))])
        defer { server.stop() }
        _ = try await transport.send(HTTPRequest(method: .delete, url: server.url("/blob/1")))
        _ = try await transport.send(HTTPRequest(method: .patch, url: server.url("/album/1"), body: .bytes([9])))
        #expect(server.requests.map(\.method) == ["DELETE", "PATCH"])
        #expect(server.requests.last?.body == [9])
    }

    @Test(arguments: [400, 401, 404, 409, 500, 503])
    func errorStatusesAreResponsesNotErrors(status: Int) async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(status: status, body: Array("{\"error\":\"x\"}".utf8)))])
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.url()))
        #expect(response.status == status)
        #expect(!response.isSuccess)
        #expect(response.body.bytes == Array("{\"error\":\"x\"}".utf8))
    }

    @Test func gzipEncodedBodyIsDecodedTransparently() async throws {
        let response = Self.gzipEncoded
        let server = try ScriptedHTTPServer(script: [.respond(.init(headers: [("Content-Encoding", "gzip")], body: response))])
        defer { server.stop() }
        let result = try await transport.send(HTTPRequest(url: server.url("/v1/pull")))
        #expect(result.body.bytes == Self.gzipBody)
        let acceptEncoding = try #require(server.requests.first?.header("Accept-Encoding"))
        #expect(acceptEncoding.contains("gzip"))
    }

    @Test func chunkedBodyIsReassembled() async throws {
        let body = patternBytes(count: 100_000)
        let server = try ScriptedHTTPServer(script: [.respond(.init(body: body, chunkSize: 7_000))])
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.url()))
        #expect(response.body.bytes == body)
        #expect(response.headers["Transfer-Encoding"] == "chunked")
    }

    // MARK: - Connections

    @Test func consecutiveRequestsReuseOneConnection() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(body: Array("ok".utf8)))])
        defer { server.stop() }
        _ = try await transport.send(HTTPRequest(url: server.url("/1")))
        _ = try await transport.send(HTTPRequest(method: .post, url: server.url("/2"), body: .bytes([1])))
        _ = try await transport.send(HTTPRequest(url: server.url("/3")))
        #expect(server.requests.count == 3)
        #expect(server.acceptedConnections == 1)
    }

    @Test func concurrentRequestsAllComplete() async throws {
        let server = try ScriptedHTTPServer { request in .respond(.init(body: Array(request.path.utf8))) }
        defer { server.stop() }
        let transport = transport
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<8 {
                group.addTask {
                    String(decoding: try await transport.send(HTTPRequest(url: server.url("/\(index)"))).body.bytes, as: UTF8.self)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(bodies) == Set((0..<8).map { "/\($0)" }))
    }

    @Test func aConnectionTheServerDroppedIsReplacedAndTheBodyResent() async throws {
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(body: Array("first".utf8))),
            .closeWithoutAnswer,
            .respond(.init(body: Array("second".utf8))),
        ])
        defer { server.stop() }
        let body = patternBytes(count: 200_000)
        _ = try await transport.send(HTTPRequest(url: server.url("/1")))
        let response = try await transport.send(HTTPRequest(method: .post, url: server.url("/2"), body: .bytes(body)))
        #expect(response.body.bytes == Array("second".utf8))
        #expect(server.acceptedConnections == 2)
        #expect(server.requests.suffix(2).map(\.body) == [body, body])
    }

    @Test func serverClosingAfterAResponseDoesNotBreakTheNextRequest() async throws {
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(body: Array("closing".utf8), close: true)),
            .respond(.init(body: Array("dropping".utf8), dropConnection: true)),
            .respond(.init(body: Array("fresh".utf8))),
        ])
        defer { server.stop() }
        var bodies: [String] = []
        for path in ["/1", "/2", "/3"] {
            let response = try await transport.send(HTTPRequest(method: .put, url: server.url(path), body: .bytes([1, 2])))
            bodies.append(String(decoding: response.body.bytes, as: UTF8.self))
        }
        #expect(bodies == ["closing", "dropping", "fresh"])
        #expect(server.acceptedConnections == 3)
    }

    @Test func redirectsAreNotFollowedByDefault() async throws {
        let server = try ScriptedHTTPServer { request in
            request.path == "/old"
                ? .respond(.init(status: 302, headers: [("Location", "/new")])) : .respond(.init(body: Array("new".utf8)))
        }
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.url("/old")))
        #expect(response.status == 302)
        #expect(response.headers["location"] == "/new")
        #expect(server.requests.map(\.path) == ["/old"])

        let following = CurlTransport(configuration: .init(followRedirects: true))
        let followed = try await following.send(HTTPRequest(url: server.url("/old")))
        #expect(followed.status == 200)
        #expect(followed.body.bytes == Array("new".utf8))
        #expect(followed.headers["Location"] == nil)
    }

    @Test func transfersRunInParallel() async throws {
        // Each request is held at the server until all six have arrived: only a transport that
        // runs them at the same time gets six 200s (a serial one would see 504s after the wait).
        let arrived = Mutex(0)
        let server = try ScriptedHTTPServer { _ in
            arrived.withLock { $0 += 1 }
            let deadline = Date().addingTimeInterval(15)
            while arrived.withLock({ $0 }) < 6 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            return .respond(.init(status: arrived.withLock { $0 } >= 6 ? 200 : 504))
        }
        defer { server.stop() }
        let transport = transport
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<6 {
                group.addTask { try await transport.send(HTTPRequest(url: server.url("/\(index)"))).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 6))
        #expect(server.acceptedConnections == 6)
    }

    // MARK: - Failures

    @Test func refusedConnectionIsUnreachableWithAClearMessage() async throws {
        let port = try closedLoopbackPort()
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/ping")!))
        }
        guard case .unreachable(let origin, _) = error else {
            Issue.record("expected unreachable, got \(error)")
            return
        }
        #expect(origin == "http://127.0.0.1:\(port)")
        #expect(error.description.hasPrefix("cannot reach http://127.0.0.1:\(port) — is the server running?"))
        #expect(error.isRetryable)
    }

    @Test func slowServerTimesOut() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(delay: .seconds(10)))])
        defer { server.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: server.url(), timeout: .milliseconds(300)))
        }
        guard case .timedOut = error else {
            Issue.record("expected timedOut, got \(error)")
            return
        }
        #expect(clock.now - start < .seconds(5))  // the server would answer after 10 s
        #expect(error.isRetryable)
    }

    @Test func unansweredConnectionAttemptTimesOut() async throws {
        let listener = try FullBacklogListener()
        defer { listener.close() }
        let transport = CurlTransport(configuration: .init(connectTimeout: .milliseconds(300)))
        let clock = ContinuousClock()
        let start = clock.now
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: URL(string: "http://127.0.0.1:\(listener.port)/")!))
        }
        guard case .timedOut(_, let detail) = error else {
            Issue.record("expected timedOut, got \(error)")
            return
        }
        // libcurl says "Failed to connect …" or "Connection timeout after …", depending on the phase it was in.
        #expect(detail.lowercased().contains("connect"))
        #expect(clock.now - start < .seconds(5))  // the listener never accepts
    }

    @Test func stalledDownloadTimesOutThroughTheLowSpeedLimit() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(body: patternBytes(count: 100_000), stallAfterBodyBytes: 0))])
        defer { server.stop() }
        let impatient = CurlTransport(configuration: .init(requestTimeout: nil, lowSpeedLimit: 100, lowSpeedTime: .seconds(1)))
        let error = try await #require(throws: TransportError.self) { try await impatient.send(HTTPRequest(url: server.url())) }
        guard case .timedOut = error else {
            Issue.record("expected timedOut, got \(error)")
            return
        }
    }

    @Test func connectionClosedWithoutAnswerIsConnectionLost() async throws {
        let server = try ScriptedHTTPServer(script: [.closeWithoutAnswer])
        defer { server.stop() }
        let error = try await #require(throws: TransportError.self) { try await transport.send(HTTPRequest(url: server.url())) }
        guard case .connectionLost = error else {
            Issue.record("expected connectionLost, got \(error)")
            return
        }
        #expect(error.isRetryable)
    }

    @Test func httpsToAPlainHTTPPortFailsTLS() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init())])
        defer { server.stop() }
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: URL(string: "https://127.0.0.1:\(server.port)/")!))
        }
        guard case .tlsFailure = error else {
            Issue.record("expected tlsFailure, got \(error)")
            return
        }
        #expect(error.description.contains("TLS"))
        #expect(!error.isRetryable)
    }

    @Test func unreadableCABundleIsATLSFailureNotASilentDowngrade() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init())])
        defer { server.stop() }
        let strict = CurlTransport(configuration: .init(caBundlePath: "/nonexistent/ca.pem"))
        let error = try await #require(throws: TransportError.self) {
            try await strict.send(HTTPRequest(url: URL(string: "https://127.0.0.1:\(server.port)/")!))
        }
        guard case .tlsFailure = error else {
            Issue.record("expected tlsFailure, got \(error)")
            return
        }
    }

    @Test func unsupportedSchemeIsInvalidURL() async throws {
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: URL(string: "ftp://127.0.0.1/file")!))
        }
        #expect(error == .invalidURL(url: "ftp://127.0.0.1/file", reason: "only http and https URLs are supported"))
    }

    @Test func headerWithLineBreakIsRejectedWithoutShowingItsValue() async throws {
        let request = HTTPRequest(url: URL(string: "http://127.0.0.1:1/")!, headers: ["Authorization": "Bearer s3cret\r\nX-Evil: 1"])
        let error = try await #require(throws: TransportError.self) { try await transport.send(request) }
        #expect(error == .invalidRequest(reason: "the value of header 'Authorization' contains a line break"))
        #expect(!error.description.contains("s3cret"))
    }

    @Test func missingUploadFileIsALocalFileError() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init())])
        defer { server.stop() }
        let missing = URL(fileURLWithPath: "/nonexistent/photo.jpg")
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(method: .put, url: server.url(), body: .file(missing)))
        }
        guard case .localFile(let path, _) = error else {
            Issue.record("expected localFile, got \(error)")
            return
        }
        #expect(path == "/nonexistent/photo.jpg")
        #expect(server.requests.isEmpty)
    }

    @Test func authorizationNeverAppearsInErrorsOrDescriptions() async throws {
        let secret = "Bearer top-secret-token"
        let port = try closedLoopbackPort()
        let request = HTTPRequest(
            method: .post, url: URL(string: "http://user:hunter2@127.0.0.1:\(port)/v1/events")!,
            headers: ["Authorization": secret, "Cookie": "session=abc"], body: .bytes([1]))
        let error = try await #require(throws: TransportError.self) { try await transport.send(request) }
        var dumped = ""
        dump(request.headers, to: &dumped)
        for text in [error.description, String(reflecting: error), "\(request)", String(reflecting: request), "\(request.headers)", dumped]
        {
            #expect(!text.contains("top-secret-token"), "\(text)")
            #expect(!text.contains("hunter2"), "\(text)")
            #expect(!text.contains("session=abc"), "\(text)")
        }
        #expect("\(request.headers)".contains("Authorization: <redacted>"))
    }

    // MARK: - Streaming

    @Test func uploadStreamsFromAFileWithMonotonicProgress() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let contents = patternBytes(count: 3 * 1024 * 1024 + 17)
        let file = directory.url.appending(path: "video.mov")
        try Data(contents).write(to: file)
        let server = try ScriptedHTTPServer(script: [.respond(.init(status: 201))])
        defer { server.stop() }
        let log = ProgressLog()
        let request = HTTPRequest(method: .put, url: server.url("/blobs/abc"), body: .file(file), progress: log.handler)
        let response = try await transport.send(request)
        #expect(response.status == 201)
        #expect(server.requests.first?.body == contents)
        let reports = log.all
        expectMonotonic(reports)
        #expect(reports.last?.bytesSent == Int64(contents.count))
        #expect(reports.allSatisfy { $0.totalBytesToSend == Int64(contents.count) })
        #expect(reports.count >= 2)
    }

    @Test func downloadStreamsIntoAFileWithMonotonicProgress() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let contents = patternBytes(count: 4 * 1024 * 1024 + 5)
        let server = try ScriptedHTTPServer(script: [.respond(.init(body: contents))])
        defer { server.stop() }
        let destination = directory.url.appending(path: "original.heic")
        let log = ProgressLog()
        let response = try await transport.send(
            HTTPRequest(url: server.url("/blobs/abc"), responseBodyDestination: destination, progress: log.handler))
        #expect(response.body == .file(destination))
        #expect(try Data(contentsOf: destination) == Data(contents))
        #expect(try directory.contents() == ["original.heic"])
        let reports = log.all
        expectMonotonic(reports)
        #expect(reports.count >= 2)
        #expect(reports.last?.bytesReceived == Int64(contents.count))
        #expect(reports.last?.totalBytesToReceive == Int64(contents.count))
    }

    @Test func aDownloadAskedToBeHashedAndFlushedGivesTheDigestOfItsBytes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let contents = patternBytes(count: 3_000_000)  // beyond a writeback step, in many pieces
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(body: contents)), .respond(.init(body: [])), .respond(.init(body: contents)),
            .respond(.init(status: 404, body: Array("{}".utf8))),
        ])
        defer { server.stop() }
        func request(_ name: String, hashing: Bool = true) -> HTTPRequest {
            var request = HTTPRequest(url: server.url("/blobs/\(name)"), responseBodyDestination: directory.url.appending(path: name))
            request.hashesResponseBody = hashing
            request.flushesResponseBody = hashing
            return request
        }
        let response = try await transport.send(request("video.mp4"))
        #expect(response.bodyFileSHA256 == SHA256.hash(contents))
        #expect(response.bodyFileIsFlushed)
        #expect(try Data(contentsOf: directory.url.appending(path: "video.mp4")) == Data(contents))

        let empty = try await transport.send(request("empty"))
        #expect(empty.bodyFileSHA256 == SHA256.hash([UInt8]()))
        // Not asked for: neither, though the file is the same.
        let plain = try await transport.send(request("plain.mp4", hashing: false))
        #expect(plain.bodyFileSHA256 == nil)
        #expect(!plain.bodyFileIsFlushed)
        #expect(try Data(contentsOf: directory.url.appending(path: "plain.mp4")) == Data(contents))
        // An error answer stays in memory: no file, no digest.
        let missing = try await transport.send(request("missing"))
        #expect(missing.status == 404 && missing.bodyFileSHA256 == nil && !missing.bodyFileIsFlushed)
        #expect(try directory.contents().sorted() == ["empty", "plain.mp4", "video.mp4"])
    }

    @Test func errorResponseForADownloadStaysInMemoryAndCreatesNoFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ScriptedHTTPServer(script: [.respond(.init(status: 404, body: Array("{\"error\":\"unknown blob\"}".utf8)))])
        defer { server.stop() }
        let destination = directory.url.appending(path: "missing.jpg")
        let response = try await transport.send(HTTPRequest(url: server.url("/blobs/missing"), responseBodyDestination: destination))
        #expect(response.status == 404)
        #expect(response.body == .bytes(Array("{\"error\":\"unknown blob\"}".utf8)))
        #expect(try directory.contents().isEmpty)
    }

    @Test func unwritableDestinationIsALocalFileError() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init(body: patternBytes(count: 50_000)))])
        defer { server.stop() }
        let destination = URL(fileURLWithPath: "/nonexistent-directory/photo.jpg")
        let error = try await #require(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: server.url("/blobs/abc"), responseBodyDestination: destination))
        }
        guard case .localFile(let path, _) = error else {
            Issue.record("expected localFile, got \(error)")
            return
        }
        #expect(path == destination.path)
        #expect(!error.isRetryable)
    }

    @Test func cancellationMidDownloadThrowsAndLeavesNoFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(body: patternBytes(count: 4 * 1024 * 1024), stallAfterBodyBytes: 256 * 1024))
        ])
        defer { server.stop() }
        let destination = directory.url.appending(path: "big.mov")
        let log = ProgressLog()
        let transport = transport
        let download = Task {
            try await transport.send(
                HTTPRequest(url: server.url("/blobs/big"), responseBodyDestination: destination, progress: log.handler))
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while log.all.last.map({ $0.bytesReceived == 0 }) ?? true, clock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try directory.contents().count == 1)  // the partial file, hidden beside the destination
        let cancelledAt = clock.now
        download.cancel()
        await #expect(throws: CancellationError.self) { try await download.value }
        #expect(clock.now - cancelledAt < .seconds(5))  // the server never sends the rest
        #expect(try directory.contents().isEmpty)
    }

    @Test func cancelledTaskSendsNothing() async throws {
        let server = try ScriptedHTTPServer(script: [.respond(.init())])
        defer { server.stop() }
        let transport = transport
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(HTTPRequest(url: server.url()))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.requests.isEmpty)
    }

    // MARK: - With retries

    @Test func retryingCurlTransportRecoversFrom503And429() async throws {
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(status: 503)),
            .respond(.init(status: 429, headers: [("Retry-After", "2")])),
            .respond(.init(body: Array("done".utf8))),
        ])
        defer { server.stop() }
        let sleep = RecordingSleep()
        let policy = RetryPolicy(maximumAttempts: 5, baseDelay: .milliseconds(100), maximumDelay: .seconds(5))
        let retrying = RetryingTransport(
            wrapping: transport, policy: policy, random: ScriptedRandom([ScriptedRandom.half]), sleep: sleep.sleep)
        let response = try await retrying.send(HTTPRequest(url: server.url("/v1/pull")))
        #expect(response.status == 200)
        #expect(response.body.bytes == Array("done".utf8))
        #expect(sleep.recorded == [.milliseconds(50), .seconds(2)])
        #expect(server.requests.count == 3)
        #expect(server.acceptedConnections == 1)
    }
}
