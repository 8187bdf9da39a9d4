import Foundation
import LedgerCore
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Passes requests to `base`, records the `since` of every pull, and lets a test change the
/// answers to pushes.
final class PushWatcher: HTTPTransport, @unchecked Sendable {
    let base: any HTTPTransport
    let lock = NSLock()
    var pulls: [Int64] = []
    var pushes = 0
    var answer: @Sendable (PushResponse) -> PushResponse = { $0 }

    init(_ base: any HTTPTransport) { self.base = base }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        var response = try await base.send(request)
        let url = request.url.absoluteString
        guard url.contains("/events") else { return response }
        if request.method == .get, let since = URLComponents(string: url)?.queryItems?.first(where: { $0.name == "since" })?.value {
            lock.withLock { pulls.append(Int64(since) ?? -1) }
        }
        if request.method == .post, response.status == 200 {
            var bytes = response.body.bytes
            if Gzip.isGzip(bytes) { bytes = try Gzip.decompress(bytes, limit: 1 << 26) }
            if Zstd.isZstd(bytes) { bytes = try Zstd.decompress(bytes, limit: 1 << 26) }
            let changed = lock.withLock {
                pushes += 1
                return answer
            }(try PushResponse.decode(bytes))
            response.headers["Content-Encoding"] = nil
            response.body = .bytes(changed.encoded())
        }
        return response
    }

    var pullsSince: [Int64] { lock.withLock { pulls } }
}

@Suite("Pushes confirmed from the server's answer")
struct PushConfirmationTests {
    final class Fixture {
        let clock = TestClock()
        let server: TestServer
        let directory: TemporaryDirectory

        init() throws {
            server = try TestServer(clock: clock)
            directory = try TemporaryDirectory()
        }

        /// A device whose engine pushes batches of `batchSize` through a ``PushWatcher``.
        func device(_ name: DeviceID, seed: UInt64, batchSize: Int = 50) throws -> (
            library: PhotoLibrary, engine: SyncEngine, watcher: PushWatcher
        ) {
            var options = PhotoLibrary.Options()
            let clock = self.clock
            options.clock = { clock.read() }
            options.randomSeed = seed
            options.preauthorized = true
            let library = try PhotoLibrary(url: directory.file("\(name.rawValue).sqlite"), device: name, options: options)
            let watcher = PushWatcher(testTransport())
            var engineOptions = SyncEngine.Options()
            engineOptions.pushBatchSize = batchSize
            let engine = SyncEngine(library: library, remote: try server.remote(device: name), transport: watcher, options: engineOptions)
            return (library, engine, watcher)
        }
    }

    static func createRecords(_ library: PhotoLibrary, _ count: Int) throws {
        try library.performChangesAndWait { changes in
            for _ in 0..<count { _ = try changes.createImageRecord(width: 640, height: 480, creationDate: nil) }
        }
    }

    @Test("a device alone confirms its pushed batches from the server's head: its pull starts after its own events")
    func aloneNothingComesBack() async throws {
        let fixture = try Fixture()
        let anna = try fixture.device("anna-phone", seed: 1)
        try Self.createRecords(anna.library, 175)  // four batches of 50, the last one short
        let report = try await anna.engine.sync()
        #expect(report.pushedEvents == 175)
        #expect(anna.watcher.pushes == 4)
        #expect(anna.watcher.pullsSince == [175], "the only pull asks after the pushed events")
        #expect(report.cursor == 175)
        #expect(try anna.library.replica.outboxCount() == 0)
        let chain = try anna.library.verifyServerChain()
        #expect(chain.isIntact && chain.checked == 175, "each confirmed event's server chain value is recorded and checks")

        // Another device sees the same log; and anna, pushing again after pulling its events, still need not pull back.
        let ben = try fixture.device("ben-tablet", seed: 2)
        #expect(try await ben.engine.sync().pulledEvents == 175)
        try Self.createRecords(ben.library, 3)
        try await ben.engine.sync()
        try await anna.engine.sync()
        #expect(anna.watcher.pullsSince == [175, 175, 178], "ben's three events, then the question after them")
        try Self.createRecords(anna.library, 10)
        let again = try await anna.engine.sync()
        #expect(again.pushedEvents == 10 && again.cursor == 188)
        #expect(anna.watcher.pullsSince.last == 188 && anna.watcher.pullsSince.count == 4)
        #expect(try anna.library.verifyServerChain().isIntact)
        try await ben.engine.sync()
        #expect(try Device.dump(anna.library) == Device.dump(ben.library))
    }

    @Test("when another device's events came between, the pushed events are confirmed when the pull brings them")
    func interleavedComeBack() async throws {
        let fixture = try Fixture()
        let anna = try fixture.device("anna-phone", seed: 1)
        let ben = try fixture.device("ben-tablet", seed: 2)
        try Self.createRecords(ben.library, 5)
        try await ben.engine.sync()
        try Self.createRecords(anna.library, 60)
        let report = try await anna.engine.sync()
        #expect(report.pushedEvents == 60 && report.pulledEvents == 5)
        #expect(anna.watcher.pullsSince.first == 0, "the pull starts before ben's events, and brings anna's back too")
        #expect(report.cursor == 65)
        let chain = try anna.library.verifyServerChain()
        #expect(chain.isIntact && chain.checked == 65)
        try await ben.engine.sync()
        #expect(try Device.dump(anna.library) == Device.dump(ben.library))
    }

    @Test("a head that does not match this device's events is not taken: the events come back and are checked")
    func wrongHeadNotTrusted() async throws {
        let fixture = try Fixture()
        let anna = try fixture.device("anna-phone", seed: 1)
        anna.watcher.answer = { response in
            var changed = response
            if var head = changed.head {
                head.chainHash[0] ^= 1
                changed.head = head
            }
            return changed
        }
        try Self.createRecords(anna.library, 120)
        let report = try await anna.engine.sync()
        #expect(report.pushedEvents == 120)
        #expect(anna.watcher.pullsSince.first == 0, "nothing was confirmed from the altered heads")
        #expect(report.cursor == 120)
        #expect(try anna.library.verifyServerChain().isIntact, "the pull checked the events against the server's real chain")
    }

    @Test("answers out of request order are not taken as a confirmation")
    func reorderedResultsNotTrusted() async throws {
        let fixture = try Fixture()
        let anna = try fixture.device("anna-phone", seed: 1)
        anna.watcher.answer = { response in
            var changed = response
            if changed.results.count > 1 {
                let first = changed.results[0].status
                changed.results[0].status = changed.results[1].status
                changed.results[1].status = first
            }
            return changed
        }
        try Self.createRecords(anna.library, 2)
        // The server stored each event where it says; answering them swapped is a lie the pull exposes.
        await #expect(throws: SyncError.self) { try await anna.engine.sync() }
        #expect(try anna.library.replica.state().pullCursor == 0, "the swapped answer moved nothing past the events")
    }
}
