import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Bad input")
struct BadInputTests {
    let eventsPath = SyncRoutes.events(library: "family")

    @Test("unknown routes get 404 and wrong methods 405 with Allow, as JSON")
    func routing() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        let notFound = try await client.send("GET", "/v2/anything")
        #expect(notFound.status == 404)
        #expect(notFound.errorCode == "notFound")
        #expect(notFound.header("Content-Type") == "application/json")
        let wrongMethod = try await client.send("DELETE", eventsPath)
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.errorCode == "methodNotAllowed")
        #expect(wrongMethod.header("Allow") == "GET, POST")
    }

    @Test("malformed JSON and wrong types get 400 naming the field")
    func malformedJSON() async throws {
        let fixture = try ServerFixture()
        let client = fixture.client()
        let cases: [(String, String)] = [
            (#"{"device":"anna-phone","events":[{"id":"#, ""),
            (#"{"device":"anna-phone","events":{}}"#, "events"),
            (#"{"device":42,"events":[]}"#, "device"),
            (#"{"device":"anna-phone","events":[{"id":"0193D2E0-0000-7000-8000-000000000001","deviceSeq":1.5}]}"#, "events[0].deviceSeq"),
            (#"{"device":"anna-phone","events":[{"id":"0193D2E0-0000-7000-8000-00000000000G","deviceSeq":1}]}"#, "events[0].id"),
            (#"{"device":"anna-phone","events":[{"id":"0193D2E0-0000-7000-8000-000000000001","deviceSeq":1,"hlc":5}]}"#, "events[0].hlc"),
            ("[]", "body"),
            ("", ""),
        ]
        for (body, field) in cases {
            let reply = try await client.send("POST", eventsPath, body: Array(body.utf8))
            #expect(reply.status == 400, "\(body)")
            #expect(reply.errorCode == "badRequest")
            if !field.isEmpty { #expect(reply.errorMessage.contains("'\(field)'"), "\(reply.errorMessage)") }
        }
        #expect(try await client.pullAll().isEmpty)
    }

    @Test("invalid values inside an event reject that event only")
    func invalidEventValues() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let events = factory.make(2)
        var json = String(decoding: PushRequest(device: "anna-phone", events: events).encoded(), as: UTF8.self)
        json = json.replacingOccurrences(of: events[0].object.uuidString, with: "'; DROP TABLE server_events;--")
        let response = try await fixture.client().send("POST", eventsPath, body: Array(json.utf8)).decode(PushResponse.self)
        #expect(response.results[0].status == .rejected(reason: "field 'events[0].object' not a valid UUID"))
        #expect(response.results[1].status == .stored(serverSequence: 1))
    }

    @Test("SQL in types, payloads and library names is stored as data or refused as a name")
    func sqlInjection() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let hostile = factory.make(type: "x');DROP-TABLE-server_events;--", payload: Array("title: Robert'); DROP TABLE libraries;--".utf8))
        let response = try await fixture.client().pushResponse([hostile])
        #expect(response.results[0].status == .stored(serverSequence: 1))
        #expect(try await fixture.client().pullAll().map(\.event) == [hostile])
        let name = try await fixture.client().send("GET", "/v1/libraries/family'%20OR%20'1'='1/chain")
        #expect(name.status == 400)
        #expect(name.errorMessage.contains("library"))
        #expect(throws: ServerStoreError.self) { try fixture.store.createLibrary(named: "x'; DROP TABLE tokens;--", uuid: nil, at: 1) }
        #expect(try fixture.store.libraryNames() == ["family", "work"])
    }

    @Test("a body that is not JSON gets 415")
    func wrongContentType() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let body = PushRequest(device: "anna-phone", events: factory.make(1)).encoded()
        let reply = try await fixture.client().send("POST", eventsPath, body: body, contentType: "text/plain")
        #expect(reply.status == 415)
        #expect(reply.errorCode == "unsupportedMediaType")
        let charset = try await fixture.client().send("POST", eventsPath, body: body, contentType: "application/json; charset=utf-8")
        #expect(charset.status == 200)
        let brotli = try await fixture.client().send("POST", eventsPath, body: body, headers: ["Content-Encoding": "br"])
        #expect(brotli.status == 415)
    }

    @Test("truncated or invalid gzip gets 400 and stores nothing")
    func badGzip() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let packed = try Gzip.compress(PushRequest(device: "anna-phone", events: factory.make(20)).encoded())
        for body in [Array(packed.dropLast(12)), Array("plain".utf8)] {
            let reply = try await fixture.client().send("POST", eventsPath, body: body, headers: ["Content-Encoding": "gzip"])
            #expect(reply.status == 400)
            #expect(reply.errorMessage.contains("gzip"))
        }
        #expect(try await fixture.client().pullAll().isEmpty)
    }

    @Test("bodies over the limit get 413: early from Content-Length, or while decompressing")
    func tooLarge() async throws {
        let fixture = try ServerFixture { $0.maximumEventBodyBytes = 64 * 1024 }
        let token = fixture.tokens["anna-phone"]!
        let head =
            "POST \(eventsPath) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: 1000000000\r\nConnection: close\r\n\r\n"
        let early = try rawExchange(port: fixture.server.port, Array(head.utf8))
        #expect(early.hasPrefix("HTTP/1.1 413"))
        #expect(early.contains("payloadTooLarge"))
        let bomb = try Gzip.compress([UInt8](repeating: 0x20, count: 10 << 20), level: 9)
        let inflated = try await fixture.client().send("POST", eventsPath, body: bomb, headers: ["Content-Encoding": "gzip"])
        #expect(inflated.status == 413)
        let chunkedHead =
            "POST \(eventsPath) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        var chunked = Array(chunkedHead.utf8)
        for _ in 0..<20 { chunked += Array("2000\r\n".utf8) + [UInt8](repeating: 0x20, count: 0x2000) + Array("\r\n".utf8) }
        chunked += Array("0\r\n\r\n".utf8)
        let streamed = try rawExchange(port: fixture.server.port, chunked)
        #expect(streamed.hasPrefix("HTTP/1.1 413"))
        // The server still serves afterwards.
        #expect(try await fixture.client().pull(since: 0).status == 200)
    }

    @Test("pull arguments are checked")
    func pullArguments() async throws {
        let fixture = try ServerFixture()
        for query in ["since=-1", "since=abc", "limit=0", "since=1&limit=x"] {
            let reply = try await fixture.client().send("GET", "\(eventsPath)?\(query)")
            #expect(reply.status == 400, "\(query)")
        }
    }

    @Test("a request cut off in the middle of its body stores nothing and the server keeps serving")
    func truncatedRequest() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory()
        let body = PushRequest(device: "anna-phone", events: factory.make(10)).encoded()
        let head =
            "POST \(eventsPath) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(fixture.tokens["anna-phone"]!)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        _ = try rawExchange(port: fixture.server.port, Array(head.utf8) + body.prefix(body.count / 2), timeout: 1, closeWrite: true)
        let garbage = try rawExchange(port: fixture.server.port, Array("NOT HTTP AT ALL\r\n\r\n".utf8), timeout: 2)
        #expect(!garbage.contains("200 OK"))
        #expect(try await fixture.client().pullAll().isEmpty)
        #expect(try await fixture.client().push(factory.make(1)).status == 200)
    }
}
