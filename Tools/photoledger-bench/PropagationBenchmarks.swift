import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerServer
import PhotoLedgerSync
import Synchronization

/// Live propagation figures (`live.propagation.*`): from the start of `performChanges` on device A
/// to the change observer of each device B, every device a full live engine
/// (``SyncEngine/live(_:)``) with a library of its own, against the in-process server on
/// loopback. With 1 and 100 devices B; and with 1 device B among 1,000 waiting pulls (999 of them
/// raw pulls kept waiting by a load generator, as in `live.wake`), so the server wakes 1,000
/// pulls for each change.
struct PropagationBenchmarks {
    let quick: Bool

    func run() throws -> [Figure] {
        var figures = try figures(engines: 1, rawPulls: 0, rounds: quick ? 20 : 100)
        figures += try self.figures(engines: quick ? 20 : 100, rawPulls: 0, rounds: quick ? 5 : 20)
        figures += try self.figures(engines: 1, rawPulls: 999, rounds: quick ? 5 : 20)
        return figures
    }

    /// Records when its library last told of a change.
    final class ArrivalObserver: PhotoLibraryChangeObserver {
        let arrival = Mutex<ContinuousClock.Instant?>(nil)
        func photoLibraryDidChange(_ change: PhotoLibraryChange) {
            arrival.withLock { $0 = $0 ?? .now }
        }
    }

    /// How many engines finished their first sync.
    final class StartCount: Sendable {
        let count = Atomic<Int>(0)
    }

    func figures(engines count: Int, rawPulls: Int, rounds: Int) throws -> [Figure] {
        var limits = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        limits.rlim_cur = limits.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteServerStore(path: directory.appendingPathComponent("server.sqlite").path)
        try store.createLibrary(named: "bench", uuid: nil, at: 1)
        var configuration = SyncServer.Configuration(store: store, blobDirectory: directory.appendingPathComponent("blobs").path)
        configuration.logger = DiscardingLogger()
        configuration.threadCount = 4
        configuration.maximumClockSkewMilliseconds = .max
        let server = try SyncServer(configuration: configuration)
        try server.start()
        defer { server.stop() }
        func device(_ name: String) throws -> (PhotoLibrary, SyncEngine) {
            let token = try DeviceToken.generate()
            try store.registerToken(hash: DeviceToken.hash(token), library: "bench", device: DeviceID(name), scope: .readWrite, at: 1)
            var options = PhotoLibrary.Options()
            options.preauthorized = true
            let library = try PhotoLibrary(
                url: directory.appendingPathComponent("\(name).sqlite"), device: DeviceID(name), options: options)
            let remote = try SyncRemote(libraryURL: "http://127.0.0.1:\(server.port)/v1/libraries/bench", token: token)
            return (library, SyncEngine(library: library, remote: remote))
        }
        let (libraryA, engineA) = try device("device-a")
        var receivers: [(PhotoLibrary, ArrivalObserver)] = []
        var engines = [engineA]
        for index in 0..<count {
            let (library, engine) = try device("device-b\(index)")
            let observer = ArrivalObserver()
            library.register(observer)
            receivers.append((library, observer))
            engines.append(engine)
        }
        let started = StartCount()
        let options = {
            var options = LiveSyncOptions()
            options.pullWaitSeconds = 25
            options.pushDelay = .zero
            options.otherProcessCheckInterval = nil
            return options
        }()
        let tasks = engines.map { engine in
            Task {
                for try await event in engine.live(options) {
                    if case .started = event { started.count.add(1, ordering: .relaxed) }
                }
            }
        }
        defer { for task in tasks { task.cancel() } }
        let readerToken = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(readerToken), library: "bench", device: "reader", scope: .readOnly, at: 1)
        let raw = rawPulls > 0 ? try WaitingPulls(port: server.port, token: readerToken, count: rawPulls) : nil

        let clock = ContinuousClock()
        func waitUntil(_ what: String, _ condition: () -> Bool) throws {
            let patience = clock.now.advanced(by: .seconds(120))
            while !condition() {
                guard clock.now < patience else { throw BenchmarkError("propagation bench: \(what) did not happen within 120 s") }
                usleep(200)
            }
        }
        try waitUntil("every engine's first sync") { started.count.load(ordering: .relaxed) == engines.count }
        var latencies: [Double] = []
        for round in 0..<rounds {
            // A's waiting pull too: every engine waits again before the next change.
            try raw?.send(since: Int64(round), wait: 300)
            try waitUntil("every pull waiting") { server.waitingPulls == engines.count + rawPulls }
            for (_, observer) in receivers { observer.arrival.withLock { $0 = nil } }
            let start = clock.now
            try libraryA.performChangesAndWait { _ = try $0.createAlbum(title: "Round \(round)") }
            try waitUntil("the change reaching every device") { receivers.allSatisfy { $0.1.arrival.withLock { $0 } != nil } }
            latencies += receivers.map { milliseconds($0.1.arrival.withLock { $0 }! - start) }
            if let raw { _ = try raw.collect(timeout: .seconds(60)) }
        }
        let label = rawPulls > 0 ? "1 device among \(rawPulls + 1) waiting pulls" : count == 1 ? "1 device" : "\(count) devices"
        let name = "live.propagation.\(count + rawPulls)"
        let note =
            "\(label) (full live engines with libraries of their own, in one process; in-process server, 4 threads, SQLite), \(rounds) rounds: "
            + "from performChanges on device A to each device B's change observer"
        return [
            Figure(
                name: "\(name).p50", value: percentile(latencies, 50), unit: "ms", baseline: nil, higherIsBetter: false,
                target: count + rawPulls >= 1000 ? 50 : nil, note: note),
            Figure(
                name: "\(name).p99", value: percentile(latencies, 99), unit: "ms", baseline: nil, higherIsBetter: false,
                target: count + rawPulls >= 1000 ? 250 : nil, note: "the same, 99th percentile"),
        ]
    }
}
