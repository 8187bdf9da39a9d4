import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerSync
import SyncTransport
import Synchronization

/// End-to-end sync figures: events created on device A, pushed through the photoledger-server
/// binary on loopback, pulled and applied by a fresh device B (a child process, so its peak RSS
/// is its own); the server's peak RSS is read from /proc. Sizes: 100k and 1M (quick: 20k and 100k).
struct SyncBenchmarks {
    let quick: Bool

    /// Runs device B's pull in this process and prints "EVENTS SECONDS PEAK_RSS_KIB".
    static func runPullChild(_ arguments: [String]) throws {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        let library = try PhotoLibrary(url: URL(fileURLWithPath: arguments[0]), device: "device-b", options: options)
        let engine = SyncEngine(library: library, remote: try SyncRemote(libraryURL: arguments[1], token: arguments[2]))
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<(Int, Double), any Error> = .success((0, 0))
        Task {
            do {
                var report = SyncReport()
                // Counted until the last checkpoint of the pulled pages (run on a thread of its own) is done.
                let elapsed = try await ContinuousClock().measure {
                    report = try await engine.sync()
                    library.waitForBackgroundCheckpoints()
                }
                result = .success((report.pulledEvents, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
            } catch {
                result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        let (events, seconds) = try result.get()
        print("\(events) \(seconds) \(peakResidentKiB(pid: getpid()))")
    }

    func run() throws -> [Figure] {
        let sizes = quick ? [20_000, 100_000] : [100_000, 1_000_000]
        var figures: [Figure] = []
        var rss: [(Int, Int, Int)] = []
        for size in sizes {
            let (pushRate, pullRate, clientKiB, serverKiB) = try measure(events: size)
            rss.append((size, clientKiB, serverKiB))
            figures.append(
                Figure(
                    name: "sync.push.\(size / 1000)k", value: pushRate, unit: "events/s", baseline: nil, higherIsBetter: true, target: nil,
                    note:
                        "device A pushes \(size) events through photoledger-server on loopback (binary event batches of 2,000, libcurl); the time includes pulling its own events back to confirm them"
                ))
            figures.append(
                Figure(
                    name: "sync.pull.\(size / 1000)k", value: pullRate, unit: "events/s", baseline: nil, higherIsBetter: true,
                    target: 50_000,
                    note:
                        "fresh device B pulls and applies \(size) events (pages of 5,000, one transaction each, the next fetched while one is applied)"
                ))
        }
        for (size, client, server) in rss {
            figures.append(
                Figure(
                    name: "sync.rss.client.\(size / 1000)k", value: Double(client) / 1024, unit: "MiB", baseline: nil,
                    higherIsBetter: false,
                    target: nil, note: "peak RSS of device B's process while pulling \(size) events"))
            figures.append(
                Figure(
                    name: "sync.rss.server.\(size / 1000)k", value: Double(server) / 1024, unit: "MiB", baseline: nil,
                    higherIsBetter: false,
                    target: nil, note: "peak RSS of the server process after serving \(size) events in and out"))
        }
        return figures
    }

    /// Device A's library in `directory`, with `events` asset creations in blocks of 1,000.
    static func deviceA(in directory: URL, events: Int) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        let library = try PhotoLibrary(url: directory.appendingPathComponent("a.sqlite"), device: "device-a", options: options)
        var made = 0
        while made < events {
            let count = min(1000, events - made)
            try library.performChangesAndWait { changes in
                for _ in 0..<count { _ = try changes.createImageRecord(width: 4032, height: 3024, creationDate: nil) }
            }
            made += count
        }
        return library
    }

    /// Device B's share of a pull, without HTTP (its own suite: `--only sync.apply`).
    func applyFigure() throws -> Figure {
        let applySize = quick ? 20_000 : 100_000
        return Figure(
            name: "sync.apply.\(applySize / 1000)k", value: try applyRate(events: applySize), unit: "events/s", baseline: nil,
            higherIsBetter: true, target: nil,
            note:
                "device B's share of a pull: \(applySize) events applied in pages of 5,000 with server sequences and chain values, "
                + "in-process (no HTTP), as the sync engine runs pages: the next page prepared (linked and folded) while one applies")
    }

    /// Events made on one library, applied page by page to a fresh one as the sync engine does
    /// it: each page is prepared (linked after the server's chain value before it, and folded)
    /// on another thread while the page before it applies.
    func applyRate(events count: Int) throws -> Double {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let deviceA = try Self.deviceA(in: directory, events: count)
        let events = try deviceA.replica.ownEvents(fromDeviceSequence: 1, limit: Int.max).map(\.event)
        var chain = HashChain()
        let sequenced = events.enumerated().map { index, event in
            SequencedEvent(event: event, serverSequence: Int64(index + 1), serverChainHash: chain.link(event))
        }
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        let deviceB = try PhotoLibrary(url: directory.appendingPathComponent("b.sqlite"), device: "device-b", options: options)
        let replica = deviceB.replica
        let pages = stride(from: 0, to: sequenced.count, by: 5000).map { $0..<min(sequenced.count, $0 + 5000) }
        @Sendable func prepared(_ range: Range<Int>) -> PreparedPage {
            let previous = range.lowerBound == 0 ? HashChain.origin : sequenced[range.lowerBound - 1].serverChainHash
            return replica.prepare(Array(sequenced[range]), cursor: Int64(range.upperBound), after: previous)
        }
        let elapsed = try seconds {
            var next = prepared(pages[0])
            for index in pages.indices {
                let page = next
                let ahead = Mutex<PreparedPage?>(nil)
                let ready = DispatchSemaphore(value: 0)
                if index + 1 < pages.count {
                    let range = pages[index + 1]
                    Thread.detachNewThread {
                        ahead.withLock { $0 = prepared(range) }
                        ready.signal()
                    }
                }
                _ = try replica.apply(page)
                if index + 1 < pages.count {
                    ready.wait()
                    guard let prepared = ahead.withLock({ $0 }) else { throw BenchmarkError("page \(index + 2) was not prepared") }
                    next = prepared
                }
            }
            deviceB.waitForBackgroundCheckpoints()
        }
        return Double(events.count) / elapsed
    }

    func measure(events: Int) throws -> (push: Double, pull: Double, clientKiB: Int, serverKiB: Int) {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bench = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let serverTool = bench.deletingLastPathComponent().appendingPathComponent("photoledger-server")
        guard FileManager.default.isExecutableFile(atPath: serverTool.path) else {
            throw BenchmarkError("photoledger-server is not built next to the benchmark; run `swift build -c release` first")
        }
        let db = directory.appendingPathComponent("server.sqlite").path
        _ = try runTool(serverTool, ["admin", "create-library", "bench", "--db", db])
        let tokens = try ["device-a", "device-b"].map {
            try runTool(serverTool, ["admin", "issue-token", "--db", db, "--library", "bench", "--device", $0, "--scope", "readWrite"])
        }
        let server = Process()
        server.executableURL = serverTool
        server.arguments = ["serve", "--db", db, "--blobs", directory.appendingPathComponent("blobs").path, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let origin = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(
            of: "listening on ", with: "")
        let libraryURL = "\(origin)/v1/libraries/bench"

        let deviceA = try Self.deviceA(in: directory, events: events)
        let engine = SyncEngine(library: deviceA, remote: try SyncRemote(libraryURL: libraryURL, token: tokens[0]))
        let pushSeconds = try blockingSeconds { try await engine.sync() }

        let child = try runTool(bench, ["--sync-pull-child", directory.appendingPathComponent("b.sqlite").path, libraryURL, tokens[1]])
        let parts = child.split(separator: " ")
        guard parts.count == 3, let pulled = Int(parts[0]), let seconds = Double(parts[1]), let clientKiB = Int(parts[2]), pulled == events
        else {
            throw BenchmarkError("device B's pull reported '\(child)', expected \(events) events")
        }
        return (Double(events) / pushSeconds, Double(pulled) / seconds, clientKiB, peakResidentKiB(pid: server.processIdentifier))
    }
}

/// Runs async work from synchronous benchmark code and returns the seconds it took.
func blockingSeconds(_ body: @escaping @Sendable () async throws -> Void) throws -> Double {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var failure: (any Error)?
    nonisolated(unsafe) var elapsed = 0.0
    Task {
        let clock = ContinuousClock()
        let start = clock.now
        do { try await body() } catch { failure = error }
        let duration = clock.now - start
        elapsed = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        done.signal()
    }
    done.wait()
    if let failure { throw failure }
    return elapsed
}
