import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol

/// Live-sync figures: pulls waiting for events (`GET …/events?since=N&wait=S`), held by the server.
///
/// - `live.wake.*`: from the moment a push is sent to the moment each waiting pull's answer has
///   arrived whole at its client, for 1 and 1,000 waiting pulls, against the in-process server.
/// - `live.rss.10k-waiting(.first)`: the resident memory of the `photoledger-server` process
///   holding 10,000 waiting pulls, opened by a load generator in another process
///   (`--waiting-pulls-child`): on new connections, then again once they have been answered.
struct LiveBenchmarks {
    let quick: Bool

    func run() throws -> [Figure] {
        var figures = try wakeFigures(waiting: 1, rounds: quick ? 40 : 200)
        figures += try wakeFigures(waiting: 1000, rounds: quick ? 3 : 10)
        figures += try memoryFigures(waiting: 10_000)
        return figures
    }

    // MARK: Wake-up latency

    /// Pushes one event per round while `waiting` pulls wait for it, and times each pull's answer.
    func wakeFigures(waiting: Int, rounds: Int) throws -> [Figure] {
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
        let pusherToken = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(pusherToken), library: "bench", device: "pusher", scope: .readWrite, at: 1)
        let readerToken = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(readerToken), library: "bench", device: "reader", scope: .readOnly, at: 1)

        let clients = try WaitingPulls(port: server.port, token: readerToken, count: waiting)
        let pusher = try KeepAliveConnection(port: server.port)
        let events = ServerBenchmarks(quick: quick)
        var latencies: [Double] = []
        var pushLatencies: [Double] = []
        for round in 0..<rounds {
            try clients.send(since: Int64(round), wait: 300)
            let clock = ContinuousClock()
            let patience = clock.now.advanced(by: .seconds(60))
            while server.waitingPulls < waiting {
                guard clock.now < patience else {
                    throw BenchmarkError("only \(server.waitingPulls) of \(waiting) pulls wait in round \(round)")
                }
                usleep(200)
            }
            let body = events.pushBody(device: "pusher", from: round, count: 1)
            let start = ContinuousClock.now
            let reply = try pusher.send(method: "POST", path: "/v1/libraries/bench/events", token: pusherToken, body: body)
            pushLatencies.append(milliseconds(since: start))
            guard reply.status == 200 else { throw BenchmarkError("push answered \(reply.status)") }
            let answers = try clients.collect(timeout: .seconds(60))
            guard answers.allSatisfy({ $0.events == 1 }) else { throw BenchmarkError("a woken pull did not carry the pushed event") }
            latencies += answers.map { milliseconds($0.arrival - start) }
        }
        let label = waiting == 1 ? "1 waiting pull" : "\(waiting) waiting pulls"
        let note =
            "\(label) on loopback (in-process server, 4 threads), \(rounds) rounds of one pushed event: from sending the push to each "
            + "pull's answer read whole by its client (the push itself: p50 \(String(format: "%.2f", percentile(pushLatencies, 50))) ms)"
        return [
            Figure(
                name: "live.wake.\(waiting).p50", value: percentile(latencies, 50), unit: "ms", baseline: nil, higherIsBetter: false,
                target: nil, note: note),
            Figure(
                name: "live.wake.\(waiting).p99", value: percentile(latencies, 99), unit: "ms", baseline: nil, higherIsBetter: false,
                target: nil, note: "the same, 99th percentile"),
        ]
    }

    // MARK: Memory

    /// Runs the built `photoledger-server`, lets a load generator in another process open
    /// `waiting` waiting pulls, and reads the server's resident memory once it is idle.
    func memoryFigures(waiting: Int) throws -> [Figure] {
        let bench = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let serverTool = bench.deletingLastPathComponent().appendingPathComponent("photoledger-server")
        guard FileManager.default.isExecutableFile(atPath: serverTool.path) else {
            print("note: live.rss skipped: build photoledger-server beside photoledger-bench (swift build -c release)")
            return []
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = directory.appendingPathComponent("server.sqlite").path
        try runTool(serverTool, ["admin", "create-library", "bench", "--db", db])
        let pusherToken = try runTool(
            serverTool, ["admin", "issue-token", "--db", db, "--library", "bench", "--device", "pusher", "--scope", "readWrite"])
        let readerToken = try runTool(
            serverTool, ["admin", "issue-token", "--db", db, "--library", "bench", "--device", "reader", "--scope", "readOnly"])
        let server = Process()
        server.executableURL = serverTool
        server.arguments = ["serve", "--db", db, "--blobs", directory.appendingPathComponent("blobs").path, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            kill(server.processIdentifier, SIGTERM)
            server.waitUntilExit()
        }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = UInt16(line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? "") else {
            throw BenchmarkError("the server did not report its port: \(line)")
        }
        let pusher = try KeepAliveConnection(port: port)
        _ = try pusher.send(method: "GET", path: "/v1/libraries/bench/events?since=0", token: readerToken)
        let idle = Double(residentKiB(pid: server.processIdentifier)) / 1024

        let generator = Process()
        generator.executableURL = bench
        generator.arguments = ["--waiting-pulls-child", "\(port)", readerToken, "\(waiting)"]
        let commands = Pipe(), answers = Pipe()
        generator.standardInput = commands
        generator.standardOutput = answers
        try generator.run()
        defer { if generator.isRunning { generator.terminate() } }
        let reader = LineReader(answers.fileHandleForReading)
        let pushes = ServerBenchmarks(quick: quick)
        /// Waits for the generator's pulls to wait, reads the server's memory, then wakes them all.
        func round(_ number: Int) throws -> (resident: Double, wokenMilliseconds: Double) {
            guard reader.next() == "sent" else { throw BenchmarkError("the load generator could not open its pulls") }
            try waitUntilIdle(pid: server.processIdentifier)
            let resident = Double(residentKiB(pid: server.processIdentifier)) / 1024
            let start = ContinuousClock.now
            let body = pushes.pushBody(device: "pusher", from: number, count: 1)
            let reply = try pusher.send(method: "POST", path: "/v1/libraries/bench/events", token: pusherToken, body: body)
            guard reply.status == 200 else { throw BenchmarkError("push answered \(reply.status)") }
            commands.fileHandleForWriting.write(Data("collect\n".utf8))
            let report = reader.next() ?? ""
            guard report == "woken \(waiting)" else {
                throw BenchmarkError("the load generator reported '\(report)', expected 'woken \(waiting)'")
            }
            return (resident, milliseconds(since: start))
        }
        let first = try round(0)
        let again = try round(1)
        let peak = Double(peakResidentKiB(pid: server.processIdentifier)) / 1024
        let perPull = { (resident: Double) in String(format: "%.1f KiB", (resident - idle) * 1024 / Double(waiting)) }
        return [
            Figure(
                name: "live.rss.\(waiting / 1000)k-waiting.first", value: first.resident, unit: "MiB", baseline: idle,
                higherIsBetter: false,
                target: nil,
                note:
                    "resident memory of the photoledger-server process holding \(waiting) waiting pulls on new connections (a load generator "
                    + "in another process, 100 connections per loopback address), vs the same process idle (baseline): \(perPull(first.resident)) "
                    + "per waiting pull; one push woke all in \(String(format: "%.0f", first.wokenMilliseconds)) ms"),
            Figure(
                name: "live.rss.\(waiting / 1000)k-waiting", value: again.resident, unit: "MiB", baseline: idle, higherIsBetter: false,
                target: nil,
                note:
                    "the same pulls asked again on the same connections once answered, as live clients do: \(perPull(again.resident)) per "
                    + "waiting pull (libmicrohttpd clears each connection's whole memory pool after a request); one push woke all in "
                    + "\(String(format: "%.0f", again.wokenMilliseconds)) ms; peak \(String(format: "%.1f", peak)) MiB"),
        ]
    }

    /// Waits until the process has used no CPU time for half a second (its queued work is done).
    func waitUntilIdle(pid: Int32) throws {
        let clock = ContinuousClock()
        let patience = clock.now.advanced(by: .seconds(120))
        var last = cpuTicks(pid: pid)
        var still = 0
        while still < 5 {
            guard clock.now < patience else { throw BenchmarkError("the server did not settle within 120 s") }
            usleep(100_000)
            let now = cpuTicks(pid: pid)
            still = now == last ? still + 1 : 0
            last = now
        }
    }

    /// User and system CPU clock ticks a process has used (`/proc/<pid>/stat`).
    func cpuTicks(pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return 0
        }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 12 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    // MARK: Load generator

    /// The load generator's side of `live.rss`: opens `count` waiting pulls on 127.0.0.1:`port`
    /// (100 per loopback source address), prints `sent`, and on the line `collect` reads every
    /// answer and prints `woken N`, N being the answers that carried an event; then does it once
    /// more on the same connections.
    static func runWaitingPullsChild(_ arguments: [String]) throws {
        guard arguments.count == 3, let port = UInt16(arguments[0]), let count = Int(arguments[2]) else {
            throw BenchmarkError("usage: --waiting-pulls-child <port> <token> <count>")
        }
        var limits = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        limits.rlim_cur = limits.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        let clients = try WaitingPulls(port: port, token: arguments[1], count: count)
        for since in 0..<2 {
            try clients.send(since: Int64(since), wait: 300)
            print("sent")
            fflush(nil)
            guard readLine() == "collect" else { return }
            let answers = try clients.collect(timeout: .seconds(120))
            print("woken \(answers.filter { $0.events == 1 }.count)")
            fflush(nil)
        }
    }
}

/// Many pulls on loopback connections, 100 per source address (127.0.1.1, 127.0.1.2, …), so that
/// they stay within the server's limit of connections per address; driven by one thread with `poll`.
final class WaitingPulls {
    /// One pull's answer.
    struct Answer {
        var arrival: ContinuousClock.Instant
        var events: Int
    }

    private let sockets: [Int32]
    private let token: String

    init(port: UInt16, token: String, count: Int) throws {
        self.token = token
        var sockets: [Int32] = []
        sockets.reserveCapacity(count)
        for index in 0..<count {
            let address = index / 100
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr("127.0.\(1 + address / 250).\(1 + address % 250)")
            var remote = sockaddr_in()
            remote.sin_family = sa_family_t(AF_INET)
            remote.sin_port = port.bigEndian
            remote.sin_addr.s_addr = inet_addr("127.0.0.1")
            let length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, length) }
            }
            guard socket >= 0, bound == 0, connected == 0 else {
                for open in sockets { close(open) }
                throw BenchmarkError("connection \(index) failed: \(String(cString: strerror(errno)))")
            }
            sockets.append(socket)
        }
        self.sockets = sockets
    }

    deinit { for socket in sockets { close(socket) } }

    /// Sends every connection's pull: events after `since`, waiting up to `wait` seconds.
    func send(since: Int64, wait: Int) throws {
        let request = Array(
            "GET /v1/libraries/bench/events?since=\(since)&wait=\(wait) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n"
                .utf8)
        for socket in sockets {
            let sent = request.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent == request.count else { throw BenchmarkError("a pull could not be sent") }
        }
    }

    /// Reads one whole answer from every connection; each answer's time is when its last byte
    /// was read (the answers are decoded afterwards, so decoding does not delay the others).
    func collect(timeout: Duration) throws -> [Answer] {
        var buffers = [[UInt8]](repeating: [], count: sockets.count)
        var bodies = [Range<Int>?](repeating: nil, count: sockets.count)
        var arrivals = [ContinuousClock.Instant](repeating: .now, count: sockets.count)
        var waiting = Array(sockets.indices)
        var scratch = [UInt8](repeating: 0, count: 65536)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while !waiting.isEmpty {
            guard clock.now < deadline else { throw BenchmarkError("\(waiting.count) of \(sockets.count) pulls were not answered") }
            var polls = waiting.map { pollfd(fd: sockets[$0], events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), 1000) >= 0 else { throw BenchmarkError("poll failed") }
            var still: [Int] = []
            for (slot, index) in waiting.enumerated() {
                guard polls[slot].revents != 0 else {
                    still.append(index)
                    continue
                }
                let count = scratch.withUnsafeMutableBytes { recv(sockets[index], $0.baseAddress, $0.count, 0) }
                guard count > 0 else { throw BenchmarkError("the server closed a waiting pull's connection") }
                buffers[index] += scratch[0..<count]
                if let body = Self.body(ofWholeAnswer: buffers[index]) {
                    bodies[index] = body
                    arrivals[index] = .now
                } else {
                    still.append(index)
                }
            }
            waiting = still
        }
        return sockets.indices.map { index in
            let events = (try? PullResponse.decode(Array(buffers[index][bodies[index]!])))?.events.count ?? -1
            return Answer(arrival: arrivals[index], events: events)
        }
    }

    /// Where the body of a whole answer lies in `bytes`, or nil while it has not all arrived.
    static func body(ofWholeAnswer bytes: [UInt8]) -> Range<Int>? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).lowercased()
        let length =
            head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        guard bytes.count >= end.upperBound + length else { return nil }
        return end.upperBound..<end.upperBound + length
    }
}

/// Reads lines from a pipe.
final class LineReader {
    private let handle: FileHandle
    private var pending: [UInt8] = []

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line without its newline, or nil at the end.
    func next() -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let data = handle.availableData
            if data.isEmpty { return nil }
            pending += data
        }
    }
}

/// A duration in milliseconds.
func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}
