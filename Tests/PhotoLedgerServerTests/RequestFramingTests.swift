import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// How the server reads a request's framing and answers what its HTTP layer refuses, on loopback
/// against the real server.
@Suite("Request framing")
struct RequestFramingTests {
    let eventsPath = SyncRoutes.events(library: "family")

    @Test("the HTTP layer's own refusals answer with the protocol's JSON error body, once, and close")
    func httpLayerErrorsAreJSON() throws {
        let fixture = try ServerFixture()
        let cases: [(String, [UInt8], Int, String)] = [
            ("no colon in a field", Array("GET /v1/health HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n".utf8), 400, "badRequest"),
            (
                "a Content-Length that is not a number",
                Array("POST \(eventsPath) HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".utf8), 400, "badRequest"
            ),
            (
                "broken chunked encoding",
                rawRequest(
                    "POST", eventsPath, token: fixture.tokens["anna-phone"],
                    fields: ["Content-Type: application/json", "Transfer-Encoding: chunked"]) + Array("zz\r\n{}\r\n0\r\n\r\n".utf8), 400,
                "badRequest"
            ),
            (
                "a Content-Length beyond any body",
                Array("POST \(eventsPath) HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n".utf8), 413,
                "payloadTooLarge"
            ),
            (
                "a request line too long",
                Array("GET /v1/health?\(String(repeating: "a", count: 100_000)) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), 414, "badRequest"
            ),
            (
                "header fields too large",
                Array("GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 100_000))\r\n\r\n".utf8), 431,
                "badRequest"
            ),
            ("an HTTP version not spoken", Array("GET /v1/health HTTP/3.0\r\nHost: x\r\n\r\n".utf8), 505, "badRequest"),
        ]
        for (name, request, status, code) in cases {
            let connection = try RawConnection(port: fixture.server.port)
            connection.send(request)
            let reply = try connection.response()
            #expect(reply.status == status, "\(name)")
            #expect(reply.header("Content-Type") == SyncRoutes.jsonContentType, "\(name)")
            #expect(reply.error?.code == code, "\(name): \(String(decoding: reply.body, as: UTF8.self))")
            #expect(reply.error?.message.isEmpty == false, "\(name)")
            #expect(reply.header("X-Request-Id") != nil, "\(name)")
            #expect(connection.isClosedByServer(within: TestPatience.limit), "\(name): one answer, then the connection closes")
        }
        #expect(fixture.logger.records.filter { $0.message == "refused by the HTTP layer" }.count == cases.count)
        #expect(try healthAnswers(fixture, from: "127.0.0.1"))
    }

    @Test("a request with two different Content-Length values, or Content-Length beside Transfer-Encoding, is refused")
    func conflictingLengths() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let body = PushRequest(device: "anna-phone", events: factory.make(1)).encoded()
        let framings = [
            ["Content-Length: \(body.count)", "Content-Length: \(body.count - 2)"],
            ["Content-Length: \(body.count - 2)", "Content-Length: \(body.count)"],
            ["Content-Length: \(body.count)", "Transfer-Encoding: chunked"],
        ]
        for framing in framings {
            let connection = try RawConnection(port: fixture.server.port)
            connection.send(
                rawRequest("POST", eventsPath, token: fixture.tokens["anna-phone"], fields: ["Content-Type: application/json"] + framing)
                    + body)
            let reply = try connection.response()
            #expect(reply.status == 400, "\(framing)")
            #expect(reply.error?.code == "badRequest")
            #expect(reply.header("Connection")?.lowercased() == "close")
            #expect(connection.isClosedByServer(within: TestPatience.limit))
        }
        let same = try RawConnection(port: fixture.server.port)
        same.send(
            rawRequest(
                "POST", eventsPath, token: fixture.tokens["anna-phone"],
                fields: ["Content-Type: application/json", "Content-Length: \(body.count)"]) + body)
        #expect(try same.response().status == 200, "the same length twice is one length")
        #expect(try await fixture.client().pullAll().count == 1)
    }

    @Test("Transfer-Encoding: gzip, chunked is answered 501 at once; a TE field is answered as usual")
    func transferCodings() async throws {
        let fixture = try ServerFixture()
        let connection = try RawConnection(port: fixture.server.port)
        connection.send(
            rawRequest(
                "POST", eventsPath, token: fixture.tokens["anna-phone"],
                fields: ["Content-Type: application/json", "Transfer-Encoding: gzip, chunked"])
                + Array("2\r\n{}\r\n0\r\n\r\n".utf8))
        let reply = try connection.response()
        #expect(reply.status == 501)
        #expect(reply.error?.code == "unsupportedMediaType")
        #expect(reply.error?.message.contains("gzip, chunked") == true)
        #expect(connection.isClosedByServer(within: TestPatience.limit))

        var factory = EventFactory()
        _ = try await fixture.client().pushResponse(factory.make(2))
        let te = try RawConnection(port: fixture.server.port)
        te.send(
            rawRequest(
                "GET", SyncRoutes.pull(library: "family", since: 0), token: fixture.tokens["ben-laptop"], fields: ["TE: gzip, chunked"]))
        let pulled = try te.response()
        #expect(pulled.status == 200)
        #expect(try PullResponse.decode(pulled.body).events.count == 2)
    }

    @Test("a Content-Encoding with spaces or capitals is read the same by the header check and the body reader")
    func contentEncodingSpaces() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        for (index, value) in ["  gzip ", "GZIP", "\tGzip"].enumerated() {
            let events = factory.make(2)
            let body = try Gzip.compress(PushRequest(device: "anna-phone", events: events).encoded())
            let connection = try RawConnection(port: fixture.server.port)
            connection.send(
                rawRequest(
                    "POST", eventsPath, token: fixture.tokens["anna-phone"],
                    fields: ["Content-Type: application/json", "Content-Encoding:\(value)"], body: body))
            let reply = try connection.response()
            #expect(reply.status == 200, "'\(value)': \(String(decoding: reply.body, as: UTF8.self))")
            #expect(try PushResponse.decode(reply.body).lastDeviceSequence == Int64(2 * (index + 1)))
        }
        let head = RequestHead(method: "POST", path: eventsPath, contentEncoding: " GZip ")
        #expect(head.bodyEncoding == "gzip")
        #expect(RequestHead(method: "POST", path: eventsPath, contentEncoding: "  ").bodyEncoding == nil)
    }
}
