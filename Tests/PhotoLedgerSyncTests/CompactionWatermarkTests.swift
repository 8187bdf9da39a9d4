import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Answers the compaction watermark route itself and passes every other request on: a server
/// older than the route (404), or one that answers something malformed.
final class WatermarkOverride: HTTPTransport, @unchecked Sendable {
    // Safe to share: immutable after init.
    private let base: any HTTPTransport
    private let status: Int
    private let body: [UInt8]

    init(wrapping base: any HTTPTransport, status: Int, body: [UInt8]) {
        self.base = base
        self.status = status
        self.body = body
    }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        guard request.url.path.hasSuffix("/watermark") else { return try await base.send(request) }
        var headers = HTTPHeaders()
        headers["Content-Type"] = "application/json"
        return SyncTransport.HTTPResponse(status: status, headers: headers, body: .bytes(body))
    }
}

@Suite("Compaction up to the server's watermark")
struct CompactionWatermarkTests {
    /// Anna and Ben sync; Ben changes and syncs, Anna syncs, changes and syncs again, so Anna has
    /// pulled further than Ben.
    final class Scenario {
        let clock = TestClock()
        let server: TestServer
        let directory: TemporaryDirectory
        let anna: Device
        let ben: Device
        var album = ""
        /// Anna's change token after her first changes, before anything was synced.
        var earlyToken: PersistentChangeToken?
        /// Anna's change token after she pulled Ben's change.
        var laterToken: PersistentChangeToken?
        /// The server sequence Ben has pulled up to.
        var benPosition: Int64 = 0

        init(inProcess: Bool) throws {
            let server = try TestServer(clock: clock)
            self.server = server
            directory = try TemporaryDirectory()
            let transport = { (inProcess ? InProcessTransport(server: server.server) : testTransport()) as any HTTPTransport }
            anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1, transport: transport())
            ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2, transport: transport())
        }

        func run() async throws {
            album = try anna.library.performChangesAndWait { changes in
                let album = try changes.createAlbum(title: "Trip")
                try album.addAssets([try changes.createAsset(from: photo(1)).placeholderForCreatedAsset])
                return album.localIdentifier
            }
            earlyToken = try anna.library.currentChangeToken
            try await anna.sync()
            try await ben.sync()
            clock.advance(milliseconds: 10)
            try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Trip 2026") }
            benPosition = try await ben.sync().cursor
            try await anna.sync()
            laterToken = try anna.library.currentChangeToken
            clock.advance(milliseconds: 10)
            try anna.library.performChangesAndWait { try $0.createAsset(from: photo(2)) }
            try await anna.sync()
        }
    }

    /// (local sequence, server sequence) of every event in the live log.
    func liveEvents(_ library: PhotoLibrary) throws -> [(Int64, Int64?)] {
        try library.readDatabase { db in
            try db.rows("SELECT local_seq, server_seq FROM events ORDER BY local_seq") { ($0.int64(0), $0.optionalInt64(1)) }
        }
    }

    @Test(
        "the watermark is the lowest position; compaction archives exactly the events both devices pulled",
        arguments: [false, true])
    func compactsWhatEveryDevicePulled(inProcess: Bool) async throws {
        let scenario = try Scenario(inProcess: inProcess)
        try await scenario.run()
        let (anna, ben) = (scenario.anna, scenario.ben)
        let head = try anna.engine.cursor()
        #expect(scenario.benPosition > 0 && scenario.benPosition < head)

        let watermark = try await anna.engine.compactionWatermark()
        #expect(watermark == CompactionWatermark(watermark: scenario.benPosition, lastServerSequence: head, deviceCount: 2))
        #expect(try await ben.engine.compactionWatermark() == watermark)

        let before = try anna.dump()
        let total = try anna.library.verifyChain().liveEvents
        let bothPulled = try liveEvents(anna.library).filter { ($0.1 ?? .max) <= scenario.benPosition }.map(\.0)
        #expect(bothPulled == Array(1...Int64(bothPulled.count)), "in this history they are a prefix of Anna's log")

        let result = try await anna.engine.compactAcknowledgedEvents()
        #expect(result.watermark == watermark)
        #expect(result.report.serverWatermark == scenario.benPosition)
        #expect(result.report.archivedEvents == bothPulled.count)
        #expect(result.report.horizon == Int64(bothPulled.count))
        #expect(try liveEvents(anna.library).allSatisfy { ($0.1 ?? 0) > scenario.benPosition }, "the live log keeps what Ben lacks")

        #expect(try anna.dump() == before)
        try anna.library.rebuild()
        #expect(try anna.dump() == before)
        let chain = try anna.library.verifyChain()
        #expect(chain.isIntact && chain.archivedEvents == bothPulled.count && chain.archivedEvents + chain.liveEvents == total)
        #expect(try anna.library.verifyServerChain().isIntact)

        let expired = try #require(throws: PhotoLibraryError.self) { try anna.library.fetchPersistentChanges(since: scenario.earlyToken!) }
        #expect(expired.code == .persistentChangeTokenExpired)
        #expect(try anna.library.fetchPersistentChanges(since: scenario.laterToken!).changes.count == 1)

        // Nothing more to archive until Ben catches up; then the rest (but the last event) goes.
        #expect(try await anna.engine.compactAcknowledgedEvents().report.archivedEvents == 0)
        try await ben.sync()
        #expect(try await anna.engine.compactionWatermark().watermark == head)
        let rest = try await anna.engine.compactAcknowledgedEvents()
        #expect(rest.report.archivedEvents == total - bothPulled.count - 1)
        #expect(try anna.library.verifyChain().isIntact)
        try await anna.sync()
        #expect(try anna.dump() == ben.dump())
    }

    @Test("errors: unreachable server, refused token, unknown library, a scope that cannot pull, an older server, a malformed answer")
    func errors() async throws {
        let scenario = try Scenario(inProcess: true)
        try await scenario.run()
        let (server, anna) = (scenario.server, scenario.anna)
        let library = anna.library
        func engine(_ remote: SyncRemote, _ transport: any HTTPTransport = InProcessTransport(server: server.server)) -> SyncEngine {
            SyncEngine(library: library, remote: remote, transport: transport)
        }
        func archived() throws -> Int { try library.verifyChain().archivedEvents }

        let unreachable = try SyncRemote(libraryURL: "http://127.0.0.1:9/v1/libraries/family", token: "plt_x")
        let offline = try await #require(throws: SyncError.self) {
            try await engine(unreachable, testTransport()).compactAcknowledgedEvents()
        }
        guard case .serverUnreachable = offline else { Issue.record("expected serverUnreachable, got \(offline)"); return }

        let url = "http://127.0.0.1:\(server.port)/v1/libraries/family"
        let bogus = try await #require(throws: SyncError.self) {
            try await engine(try SyncRemote(libraryURL: url, token: "plt_bogus")).compactAcknowledgedEvents()
        }
        guard case .authenticationRefused = bogus else { Issue.record("expected authenticationRefused, got \(bogus)"); return }

        let unknown = try await #require(throws: SyncError.self) {
            try await engine(
                try SyncRemote(libraryURL: "http://127.0.0.1:\(server.port)/v1/libraries/no-such-library", token: anna.engine.remote.token)
            )
            .compactionWatermark()
        }
        guard case .accessForbidden = unknown else { Issue.record("expected accessForbidden, got \(unknown)"); return }
        #expect(unknown.description.contains("check the library name"))

        let kiosk = try server.remote(device: "kiosk", scope: .addOnly)
        let addOnly = try await #require(throws: SyncError.self) { try await engine(kiosk).compactionWatermark() }
        guard case .accessForbidden(let message) = addOnly else { Issue.record("expected accessForbidden, got \(addOnly)"); return }
        #expect(message.contains("compaction watermark"))

        let notFound = ErrorResponse(code: .notFound, message: "no route for /v1/libraries/family/watermark").encoded()
        let older = try await #require(throws: SyncError.self) {
            try await engine(
                anna.engine.remote, WatermarkOverride(wrapping: InProcessTransport(server: server.server), status: 404, body: notFound)
            )
            .compactAcknowledgedEvents()
        }
        guard case .invalidResponse(let olderMessage) = older else { Issue.record("expected invalidResponse, got \(older)"); return }
        #expect(olderMessage.contains("older version"))

        let malformed = Array(#"{"watermark":99,"lastServerSeq":3,"devices":1}"#.utf8)
        let bad = try await #require(throws: SyncError.self) {
            try await engine(
                anna.engine.remote, WatermarkOverride(wrapping: InProcessTransport(server: server.server), status: 200, body: malformed)
            )
            .compactAcknowledgedEvents()
        }
        guard case .invalidResponse(let badMessage) = bad else { Issue.record("expected invalidResponse, got \(bad)"); return }
        #expect(badMessage.contains("watermark"))

        #expect(try server.store.revokeTokens(library: "family", device: "anna-phone", at: server.clock.read()) == 1)
        let revoked = try await #require(throws: SyncError.self) { try await anna.engine.compactAcknowledgedEvents() }
        guard case .authenticationRefused = revoked else { Issue.record("expected authenticationRefused, got \(revoked)"); return }
        #expect(try archived() == 0, "a failed request archives nothing")
    }
}
