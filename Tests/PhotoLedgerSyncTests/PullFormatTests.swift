import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Changes requests or responses on their way, to stand in for other servers and damaged bodies.
private struct RewritingTransport: HTTPTransport {
    let base: any HTTPTransport
    var request: @Sendable (HTTPRequest) -> HTTPRequest = { $0 }
    var response: @Sendable (SyncTransport.HTTPResponse) -> SyncTransport.HTTPResponse = { $0 }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        response(try await base.send(self.request(request)))
    }
}

/// Every event in a library's log, in local order, without the local chain values.
private func log(_ library: PhotoLibrary) throws -> [Event] {
    try library.readDatabase { db in
        var events: [Event] = []
        try EventLog(db).forEach { events.append($0.event) }
        return events
    }
}

@Suite("Pull page formats")
struct PullFormatTests {
    /// A server holding a small library made on anna's device (albums, members, edits).
    final class Fixture {
        let clock = TestClock()
        let server: TestServer
        let directory: TemporaryDirectory
        let anna: Device

        init() async throws {
            server = try TestServer(clock: clock)
            directory = try TemporaryDirectory()
            anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
            try anna.library.performChangesAndWait { changes in
                let assets = try (0..<40).map { _ in
                    try changes.createImageRecord(width: 640, height: 480, creationDate: nil).placeholderForCreatedAsset
                }
                let album = try changes.createAlbum(title: "Trip")
                try album.addAssets(Array(assets.prefix(25)))
                try changes.createAlbum(title: "Home").addAssets(Array(assets.suffix(10)))
            }
            clock.advance(milliseconds: 10)
            let album = try anna.library.fetchAssetCollections(with: .album).first { $0.title == "Trip" }!
            try anna.library.performChangesAndWait { try $0.albumChangeRequest(for: album.localIdentifier).setTitle("Trip 2026") }
            try await anna.sync()
        }

        func library(_ name: DeviceID, seed: UInt64) throws -> PhotoLibrary {
            var options = PhotoLibrary.Options()
            let clock = self.clock
            options.clock = { clock.read() }
            options.randomSeed = seed
            options.preauthorized = true
            return try PhotoLibrary(url: directory.file("\(name.rawValue).sqlite"), device: name, options: options)
        }

        func engine(_ library: PhotoLibrary, transport: any HTTPTransport = testTransport(), eventPages: Bool = true) throws -> SyncEngine {
            var options = SyncEngine.Options()
            options.pullPageSize = 7  // several pages
            options.requestsEventPages = eventPages
            return SyncEngine(library: library, remote: try server.remote(device: library.device), transport: transport, options: options)
        }
    }

    @Test("devices pulling event pages, JSON pages, or JSON from a server that ignores Accept hold the same library")
    func formatsConverge() async throws {
        let fixture = try await Fixture()
        let binary = try fixture.library("ben-tablet", seed: 2)
        let json = try fixture.library("carl-laptop", seed: 3)
        let oldServer = try fixture.library("dana-phone", seed: 4)
        // Asked for event pages, but the Accept header never reaches the server: JSON comes back.
        let stripping = RewritingTransport(
            base: testTransport(),
            request: { request in
                var request = request
                request.headers["Accept"] = nil
                return request
            })
        let seen = Formats()
        let watching = RewritingTransport(
            base: testTransport(),
            response: { response in
                seen.add(response.headers["Content-Type"] ?? "")
                return response
            })
        try await fixture.engine(binary, transport: watching).sync()
        try await fixture.engine(json, eventPages: false).sync()
        try await fixture.engine(oldServer, transport: stripping).sync()
        #expect(seen.all.contains(EventPage.contentType))

        let expected = try Device.dump(fixture.anna.library)
        #expect(try log(binary) == log(fixture.anna.library))
        for library in [binary, json, oldServer] {
            #expect(try Device.dump(library) == expected)
            #expect(try log(library) == log(binary))
            #expect(try library.verifyServerChain().failure == nil)
        }
    }

    @Test("a damaged event page is refused and nothing of it is applied", arguments: ["truncated", "payload", "chain"])
    func damagedPage(damage: String) async throws {
        let fixture = try await Fixture()
        let library = try fixture.library("ben-tablet", seed: 2)
        let damaging = RewritingTransport(
            base: testTransport(),
            response: { response in
                guard response.headers["Content-Type"] == EventPage.contentType, case .bytes(var bytes) = response.body else {
                    return response
                }
                switch damage {
                case "truncated": bytes.removeLast(3)
                case "payload": bytes[bytes.count - 1] ^= 0x40  // the last event's payload or schema version
                default: bytes[12] ^= 0x01  // inside the first event's chain value (after 8 bytes of header and its sequence)
                }
                var damaged = response
                damaged.body = .bytes(bytes)
                return damaged
            })
        let error = try await #require(throws: SyncError.self) { try await fixture.engine(library, transport: damaging).sync() }
        guard case .invalidResponse(let message) = error else {
            Issue.record("expected invalidResponse, got \(error)")
            return
        }
        switch damage {
        case "truncated": #expect(message.contains("/events?since=0"))
        case "payload": #expect(message.contains("does not match its content hash; nothing from this page was applied"))
        default: #expect(message.contains("nothing from this page was applied"))
        }
        #expect(try log(library).isEmpty)
        #expect(try library.fetchAssets().count == 0)
        // The same device syncs once the pages arrive whole.
        try await fixture.engine(library).sync()
        #expect(try Device.dump(library) == Device.dump(fixture.anna.library))
    }
}

/// The content types seen, from any thread.
private final class Formats: @unchecked Sendable {
    // Safe to share: `types` is touched only under `lock`.
    private let lock = NSLock()
    private var types: Set<String> = []

    func add(_ type: String) { lock.withLock { _ = types.insert(type) } }
    var all: Set<String> { lock.withLock { types } }
}
