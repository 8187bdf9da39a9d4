import Foundation
import Testing

@testable import SyncTransport

/// Responses that end early reach the caller as lost connections, which retries repeat, never as
/// a success with a short or empty body.
@Suite("Responses cut short")
struct IncompleteResponseTests {
    // Bounds that only end a broken run: no test here waits for a timeout.
    let transport = CurlTransport(configuration: .init(connectTimeout: TestPatience.limit, requestTimeout: TestPatience.limit))
    let json = Array(#"{"events":[],"nextCursor":0,"hasMore":false}"#.utf8)

    func expectConnectionLost(_ request: HTTPRequest, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let error = try await #require(throws: TransportError.self, sourceLocation: sourceLocation) { try await transport.send(request) }
        guard case .connectionLost = error else {
            Issue.record("expected connectionLost, got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.isRetryable, sourceLocation: sourceLocation)
    }

    @Test func aResponseCutInsideItsHeadIsAConnectionLost() async throws {
        let head = "HTTP/1.1 200 Scripted\r\nContent-Type: application/json\r\nContent-Length: \(json.count)\r\n\r\n"
        // Inside the status line, right after it, inside a field, and after the fields but before
        // the blank line that ends the head. libcurl itself fails the first and the last (nothing
        // usable, a Content-Length with no body); it reports the others as a 200 with no body.
        for cut in [10, 23, 40, head.utf8.count - 2] {
            let server = try ScriptedHTTPServer(script: [
                .respond(.init(headers: [("Content-Type", "application/json")], body: json, cutHeadAfterBytes: cut))
            ])
            defer { server.stop() }
            try await expectConnectionLost(HTTPRequest(url: server.url("/v1/libraries/family/events")))
        }
    }

    @Test func aDownloadCutInsideItsHeadLeavesNoFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ScriptedHTTPServer(script: [.respond(.init(body: patternBytes(count: 1000), cutHeadAfterBytes: 30))])
        defer { server.stop() }
        let destination = directory.url.appending(path: "blob")
        try await expectConnectionLost(HTTPRequest(url: server.url("/blob"), responseBodyDestination: destination))
        #expect(try directory.contents().isEmpty)
    }

    @Test func aBodyShorterThanItsContentLengthIsAConnectionLost() async throws {
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(headers: [("Content-Length", "\(json.count + 100)")], body: json, close: true))
        ])
        defer { server.stop() }
        let error = try await #require(throws: TransportError.self) { try await transport.send(HTTPRequest(url: server.url("/events"))) }
        guard case .connectionLost = error else {
            Issue.record("expected connectionLost, got \(error)")
            return
        }
    }

    @Test func retriesRepeatARequestWhoseResponseWasCutInsideItsHead() async throws {
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(body: json, cutHeadAfterBytes: 25)),
            .respond(.init(headers: [("Content-Type", "application/json")], body: json)),
        ])
        defer { server.stop() }
        let sleep = RecordingSleep()
        let retrying = RetryingTransport(
            wrapping: transport, policy: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(100)),
            random: ScriptedRandom([ScriptedRandom.half]), sleep: sleep.sleep)
        let response = try await retrying.send(HTTPRequest(url: server.url("/v1/libraries/family/events")))
        #expect(response.status == 200)
        #expect(response.body.bytes == json)
        #expect(server.requests.count == 2)
        #expect(sleep.recorded == [.milliseconds(50)])
    }

    @Test func aCompleteResponseWithoutBodyIsStillASuccess() async throws {
        let server = try ScriptedHTTPServer(script: [
            .respond(.init(status: 204)), .respond(.init(headers: [("ETag", "\"x\"")], body: json)),
        ])
        defer { server.stop() }
        #expect(try await transport.send(HTTPRequest(method: .delete, url: server.url("/x"))).status == 204)
        let head = try await transport.send(HTTPRequest(method: .head, url: server.url("/x")))
        #expect(head.status == 200)
        #expect(head.headers["Content-Length"] == "\(json.count)")
    }
}
