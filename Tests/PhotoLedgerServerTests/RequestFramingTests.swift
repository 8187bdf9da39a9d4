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
