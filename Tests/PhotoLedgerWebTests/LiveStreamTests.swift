import Foundation
@preconcurrency import Glibc
import PhotoLedger
import TestSupportKit
import Testing

@Suite("Web view: the live stream of changes")
struct LiveStreamTests {
    /// A plain HTTP connection to the server, read as bytes arrive.
    private final class Connection {
        let socket: Int32
        var received = ""

        init(port: UInt16) throws {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard socket >= 0, connected == 0 else { throw FixtureError("cannot connect to 127.0.0.1:\(port)") }
        }

        deinit { close(socket) }

        func send(_ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Reads until `condition` holds for what arrived, or the peer closes; false only after
        /// `TestPatience.limit`, in a broken run.
        func read(until condition: (String) -> Bool) -> Bool {
            let end = TestPatience.dateDeadline
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !condition(received) {
                var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                guard Date() < end, poll(&descriptor, 1, 1000) >= 0 else { return false }
                guard descriptor.revents != 0 else { continue }
                let count = recv(socket, &buffer, buffer.count, 0)
                if count <= 0 { return condition(received) }
                received += String(decoding: buffer[0..<count], as: UTF8.self)
            }
            return true
        }
    }

    @Test func aCommitIsSentToTheOpenStreamsAndStoppingEndsThem() async throws {
        let fixture = try WebFixture(photoCount: 2)
        let session = try await fixture.logIn()
        let connection = try Connection(port: fixture.server.port)
        connection.send(
            "GET /api/events HTTP/1.1\r\nHost: \(fixture.host)\r\nCookie: \(session.cookie)\r\nAccept: text/event-stream\r\n\r\n")
        #expect(connection.read { $0.contains("\"kind\":\"hello\"") })
        #expect(connection.received.hasPrefix("HTTP/1.1 200") && connection.received.contains("text/event-stream"))
        let photo = fixture.photos[1]
        try fixture.library.performChangesAndWait { changes in try changes.assetChangeRequest(for: "\(photo)/L0/001").setFavorite(true) }
        #expect(connection.read { $0.contains("\"kind\":\"commit\"") && $0.contains(photo) }, "\(connection.received)")
        fixture.server.stop()
        #expect(connection.read { $0.hasSuffix("0\r\n\r\n") }, "the stream ends with its last chunk when the server stops")
    }

    @Test func aStreamNeedsASession() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let response = try await fixture.send(.get, "/api/events")
        #expect(try response.status == 401 && WebFixture.error(response).code == "noSession")
    }
}
