import Foundation
import LedgerCore
import SyncTransport
import Synchronization
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// The live engine against the in-process server on loopback: a waiting pull always outstanding,
/// local commits pushed at once, interruptions retried, lasting failures reported.
@Suite("Live sync")
struct LiveSyncTests {
    /// Collects a live stream's events as they come, and hands them out one at a time.
    final class Watcher: Sendable {
        private struct State {
            var events: [LiveSyncEvent] = []
            var consumed = 0
            var ending: (any Error)??
        }

        private final class Inbox: Sendable {
            let state = Mutex(State())
        }

        private let inbox = Inbox()
        private let pump: Task<Void, Never>

        init(_ stream: AsyncThrowingStream<LiveSyncEvent, any Error>) {
            let inbox = self.inbox
            pump = Task {
                do {
                    for try await event in stream { inbox.state.withLock { $0.events.append(event) } }
                    inbox.state.withLock { $0.ending = .some(nil) }
                } catch {
                    inbox.state.withLock { $0.ending = .some(error) }
                }
            }
        }

        deinit { pump.cancel() }

        var seen: [LiveSyncEvent] { inbox.state.withLock { $0.events } }

        /// The next event that satisfies `accept`, skipping others; throws the stream's error
        /// when it ends with one. The deadline is there only so that a broken engine ends the
        /// test instead of hanging it.
        func next(
            deadline: Duration = TestPatience.limit, sourceLocation: SourceLocation = #_sourceLocation,
            where accept: (LiveSyncEvent) -> Bool
        ) async throws -> LiveSyncEvent {
            let start = ContinuousClock.now
            while true {
                let (event, ending): (LiveSyncEvent?, (any Error)??) = inbox.state.withLock { state in
                    guard state.consumed < state.events.count else { return (nil, state.ending) }
                    state.consumed += 1
                    return (state.events[state.consumed - 1], nil)
                }
                if let event {
                    if accept(event) { return event }
                    continue
                }
                if let ending {
                    if let error = ending { throw error }
                    throw CancellationError()
                }
                guard ContinuousClock.now - start < deadline else {
                    Issue.record("no matching live event within \(deadline); saw \(seen)", sourceLocation: sourceLocation)
                    throw CancellationError()
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    static func options(seed: UInt64 = 1) -> LiveSyncOptions {
        var options = LiveSyncOptions()
        options.pullWaitSeconds = 2
        options.reconnect = RetryPolicy(maximumAttempts: .max, baseDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
        options.randomSeed = seed
        return options
    }

    @Test("another device's change reaches a live device without it asking, and its own commits go out at once")
    func changesFlowBothWays() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        try ben.library.performChangesAndWait { _ = try $0.createAlbum(title: "Before") }
        let watcher = Watcher(ben.engine.live(Self.options()))
        guard case .started(let first) = try await watcher.next(where: { _ in true }) else {
            Issue.record("the first event is not the first sync: \(watcher.seen)")
            return
        }
        #expect(first.pushedEvents == 1)

        // Anna's change arrives while Ben only waits.
        let album = try anna.library.performChangesAndWait { try $0.createAlbum(title: "Holidays").localIdentifier }
        try await anna.sync()
        let pulled = try await watcher.next { if case .pulled = $0 { true } else { false } }
        guard case .pulled(let report) = pulled else { return }
        #expect(report.pulledEvents == 1)  // Anna's album; Ben's own came back in his first sync
        #expect(try ben.library.fetchAssetCollections(withLocalIdentifiers: [album]).first?.localizedTitle == "Holidays")

        // Ben's commit is pushed without a sync call.
        try ben.library.performChangesAndWait { try $0.albumChangeRequest(for: album).setTitle("Summer") }
        let pushed = try await watcher.next { if case .pushed = $0 { true } else { false } }
        guard case .pushed(let sent) = pushed else { return }
        #expect(sent.pushedEvents == 1 && sent.rejectedEvents.isEmpty)
        try await anna.sync()
        #expect(try anna.library.fetchAssetCollections(withLocalIdentifiers: [album]).first?.localizedTitle == "Summer")
    }

    @Test("an app on a live device gets one change per pulled page, in order; applied, they give a new fetch")
    func changeStreamOfLivePulls() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        let watcher = Watcher(ben.engine.live(Self.options()))
        _ = try await watcher.next { if case .started = $0 { true } else { false } }
        var albums = try ben.library.fetchAssetCollections(with: .album)
        let stream = ben.library.changeStream()
        var created: [String] = []
        for title in ["Spring", "Summer", "Autumn"] {
            created.append(try anna.library.performChangesAndWait { try $0.createAlbum(title: title).localIdentifier })
            try await anna.sync()
            _ = try await watcher.next { if case .pulled = $0 { true } else { false } }
        }
        // The changes are in the stream once the pages are applied; the deadline only ends a broken run.
        let count = created.count
        let changes = try await withThrowingTaskGroup(of: [PhotoLibraryChange].self) { group in
            group.addTask {
                var changes: [PhotoLibraryChange] = []
                for await change in stream {
                    changes.append(change)
                    if changes.count == count { break }
                }
                return changes
            }
            group.addTask {
                try await Task.sleep(for: TestPatience.limit)
                throw CancellationError()
            }
            let first = try await group.next() ?? []
            group.cancelAll()
            return first
        }
        #expect(changes.map(\.changedAlbumIdentifiers) == created.map { [$0] }, "one change per pulled page, in order")
        for change in changes {
            let details = try #require(change.changeDetails(for: albums))
            #expect(details.hasIncrementalChanges && details.insertedIndexes.count == 1)
            albums = details.fetchResultAfterChanges
        }
        #expect(albums.allObjects == (try ben.library.fetchAssetCollections(with: .album)).allObjects)
        #expect(albums.map(\.title) == ["Spring", "Summer", "Autumn"])
    }

    @Test("a burst of commits is pushed as few pushes, every event once")
    func burstsAreCoalesced() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        let watcher = Watcher(ben.engine.live(Self.options()))
        _ = try await watcher.next { if case .started = $0 { true } else { false } }
        for index in 0..<20 { try ben.library.performChangesAndWait { _ = try $0.createAlbum(title: "Album \(index)") } }
        var pushed = 0
        while pushed < 20 {
            guard case .pushed(let report) = try await watcher.next(where: { if case .pushed = $0 { true } else { false } }) else { return }
            pushed += report.pushedEvents
        }
        #expect(pushed == 20)
        #expect(try ben.library.replica.outboxCount() == 0)
        let pushes = watcher.seen.filter { if case .pushed = $0 { true } else { false } }.count
        #expect(pushes <= 20)
    }

    @Test("a server that goes away is reported and reconnected to with backoff; nothing is lost")
    func reconnectsAfterAnOutage() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2, transport: CurlTransport())
        let watcher = Watcher(ben.engine.live(Self.options()))
        _ = try await watcher.next { if case .started = $0 { true } else { false } }

        server.server.stop()
        // Ben commits while the server is down: the push fails and is retried later.
        let album = try ben.library.performChangesAndWait { try $0.createAlbum(title: "Offline").localIdentifier }
        let interruption = try await watcher.next { if case .interrupted = $0 { true } else { false } }
        if case .interrupted(let reason, let delay) = interruption {
            #expect(reason.contains("server unreachable"))
            #expect(delay <= .milliseconds(200))
        }
        try server.restart()
        _ = try await watcher.next { if case .resumed = $0 { true } else { false } }
        while try ben.library.replica.outboxCount() > 0 {
            _ = try await watcher.next { if case .pushed = $0 { true } else { false } }
        }
        try await anna.sync()
        #expect(try anna.library.fetchAssetCollections(withLocalIdentifiers: [album]).first?.localizedTitle == "Offline")
    }

    @Test("a revoked token ends the live sync with the server's refusal")
    func revokedTokenEndsIt() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        let watcher = Watcher(ben.engine.live(Self.options()))
        _ = try await watcher.next { if case .started = $0 { true } else { false } }
        #expect(try server.store.revokeTokens(library: "family", device: "ben-tablet", at: clock.read()) == 1)
        let refusal = await #expect(throws: SyncError.self) {
            _ = try await watcher.next { _ in false }
        }
        if case .authenticationRefused = refusal {} else { Issue.record("expected a refused token, got \(String(describing: refusal))") }
    }

    @Test("cancelling the consumer ends the live sync; what was applied stays")
    func cancellationEndsIt() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let ben = try Device("ben-tablet", server: server, directory: directory, clock: clock, seed: 2)
        try anna.library.performChangesAndWait { _ = try $0.createAlbum(title: "Holidays") }
        try await anna.sync()
        let consumer = Task {
            var events: [LiveSyncEvent] = []
            for try await event in ben.engine.live(Self.options()) { events.append(event) }
            return events
        }
        while try ben.library.fetchAssetCollections(with: .album).count == 0 { try await Task.sleep(for: .milliseconds(10)) }
        consumer.cancel()
        // Ends without an error (a cancelled waiting pull is not a failure).
        _ = try await consumer.value
        #expect(try ben.library.fetchAssetCollections(with: .album).count == 1)
    }

    @Test("an addOnly device pushes live and never pulls")
    func addOnlyOnlyPushes() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
        let camera = try Device("door-camera", server: server, directory: directory, clock: clock, seed: 3, scope: .addOnly)
        try anna.library.performChangesAndWait { _ = try $0.createAlbum(title: "Private") }
        try await anna.sync()
        let watcher = Watcher(camera.engine.live(Self.options()))
        guard case .started(let first) = try await watcher.next(where: { _ in true }) else { return }
        #expect(first.scope == .addOnly)
        let photo = try camera.library.performChangesAndWait {
            try $0.createAsset(from: samplePhoto(4)).placeholderForCreatedAsset.localIdentifier
        }
        guard case .pushed(let sent) = try await watcher.next(where: { if case .pushed = $0 { true } else { false } }) else { return }
        #expect(sent.pushedEvents == 1 && sent.uploadedResources == 1)
        try await anna.sync()
        #expect(try anna.library.requestImageData(for: photo) == samplePhoto(4))
        #expect(try camera.engine.cursor() == 0, "nothing pulled")
        #expect(!watcher.seen.contains { if case .pulled = $0 { true } else { false } })
    }
}
