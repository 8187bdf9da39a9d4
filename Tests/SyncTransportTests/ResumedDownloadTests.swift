import Foundation
import LedgerCore
import Synchronization
import Testing

@testable import SyncTransport

/// Downloads that resume: the bytes of an interrupted transfer stay beside the destination, and
/// the next request asks only for the rest.
@Suite("Resumed downloads")
struct ResumedDownloadTests {
    // Bounds that only end a broken run: no test here waits for a timeout.
    let transport = CurlTransport(configuration: .init(connectTimeout: TestPatience.limit, requestTimeout: TestPatience.limit))
    let contents = patternBytes(count: 300_000)

    /// A server that cuts its first answer after `cut` bytes, then answers a `Range: bytes=N-`
    /// request with `answer(N)`.
    func server(cut: Int, answer: @escaping @Sendable (Int?) -> ScriptedHTTPServer.Response) throws -> ScriptedHTTPServer {
        let contents = contents
        let first = Mutex(true)
        return try ScriptedHTTPServer { request in
            if first.withLock({ value in
                defer { value = false }; return value
            }) {
                return .respond(.init(headers: [("Content-Length", "\(contents.count)")], body: Array(contents[..<cut]), close: true))
            }
            let range = request.header("Range").flatMap { Int($0.dropFirst("bytes=".count).dropLast()) }
            return .respond(answer(range))
        }
    }

    func request(_ destination: URL, _ server: ScriptedHTTPServer, hashing: Bool = false) -> HTTPRequest {
        var request = HTTPRequest(url: server.url("/blobs/abc"), responseBodyDestination: destination)
        request.resumesResponseBody = true
        request.hashesResponseBody = hashing
        request.flushesResponseBody = hashing
        return request
    }

    /// With hashing, the digest covers the kept bytes as well as the rest.
    @Test(arguments: [false, true])
    func anInterruptedDownloadKeepsItsBytesAndTheNextAsksOnlyForTheRest(hashing: Bool) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let contents = contents
        let server = try server(cut: 120_000) { start in
            guard let start else { return .init(status: 500) }
            return .init(
                status: 206, headers: [("Content-Range", "bytes \(start)-\(contents.count - 1)/\(contents.count)")],
                body: Array(contents[start...]))
        }
        defer { server.stop() }
        let destination = directory.url.appending(path: "photo.heic")
        await #expect(throws: TransportError.self) { try await transport.send(request(destination, server)) }
        #expect(try directory.contents() == [".photo.heic.partial"])
        #expect(try Data(contentsOf: directory.url.appending(path: ".photo.heic.partial")) == Data(contents[..<120_000]))

        let response = try await transport.send(request(destination, server, hashing: hashing))
        #expect(response.status == 206)
        #expect(response.body == .file(destination))
        #expect(try Data(contentsOf: destination) == Data(contents))
        #expect(response.bodyFileSHA256 == (hashing ? SHA256.hash(contents) : nil))
        #expect(try directory.contents() == ["photo.heic"])
        #expect(server.requests.last?.header("Range") == "bytes=120000-")
    }

    @Test func aWholeAnswerReplacesTheKeptBytes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let contents = contents
        let server = try server(cut: 50_000) { _ in .init(body: contents) }
        defer { server.stop() }
        let destination = directory.url.appending(path: "photo.heic")
        await #expect(throws: TransportError.self) { try await transport.send(request(destination, server)) }
        let response = try await transport.send(request(destination, server, hashing: true))
        #expect(response.status == 200)
        #expect(response.bodyFileSHA256 == SHA256.hash(contents), "the kept bytes went, and are not in the digest")
        #expect(try Data(contentsOf: destination) == Data(contents))
        #expect(try directory.contents() == ["photo.heic"])
    }

    @Test func keptBytesTheServerCannotContinueAreDropped() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try server(cut: 50_000) { _ in .init(status: 416, headers: [("Content-Range", "bytes */1000")]) }
        defer { server.stop() }
        let destination = directory.url.appending(path: "photo.heic")
        await #expect(throws: TransportError.self) { try await transport.send(request(destination, server)) }
        #expect(try await transport.send(request(destination, server)).status == 416)
        #expect(try directory.contents().isEmpty)
    }

    @Test func anAnswerThatContinuesAtAnotherByteFailsAndDropsTheKeptBytes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let contents = contents
        let server = try server(cut: 50_000) { _ in
            .init(
                status: 206, headers: [("Content-Range", "bytes 10-\(contents.count - 1)/\(contents.count)")], body: Array(contents[10...]))
        }
        defer { server.stop() }
        let destination = directory.url.appending(path: "photo.heic")
        await #expect(throws: TransportError.self) { try await transport.send(request(destination, server)) }
        let error = try await #require(throws: TransportError.self) { try await transport.send(request(destination, server)) }
        #expect("\(error)".contains("another byte than the 50000 held here"), "\(error)")
        #expect(error.isRetryable)
        #expect(try directory.contents() == [".photo.heic.partial"])
        #expect(try Data(contentsOf: directory.url.appending(path: ".photo.heic.partial")).isEmpty)
    }

    @Test func aRequestThatDoesNotResumeLeavesNothingBehind() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try server(cut: 50_000) { _ in .init(status: 500) }
        defer { server.stop() }
        let destination = directory.url.appending(path: "photo.heic")
        await #expect(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: server.url("/blobs/abc"), responseBodyDestination: destination))
        }
        #expect(try directory.contents().isEmpty)
    }
}
