import CBaseline
import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Synchronization

/// Sync-server figures: concurrent pushes and pulls over loopback HTTP against the in-process
/// server, the wire codec's speed, and the server process's peak memory as its log grows.
struct ServerBenchmarks {
    let quick: Bool
    let clients = 8
    let batch = 100
    let pushCount: Int
    let memorySizes: (small: Int, large: Int)
    let payload = (0..<200).map { UInt8(truncatingIfNeeded: $0 * 31 + 7) }

    init(quick: Bool) {
        self.quick = quick
        pushCount = quick ? 24_000 : 200_000
        memorySizes = quick ? (20_000, 100_000) : (100_000, 1_000_000)
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var figures = try codecFigures()
        figures += try pushAndPull(directory: directory)
        figures += try memoryFigures(directory: directory)
        return figures
    }

    // MARK: Events

    func events(device: DeviceID, from start: Int, count: Int) -> [Event] {
        let origin: UInt64 = 1_764_483_790_000
        let ids = UUIDv7Generator(
            clock: { origin + UInt64(start) },
            random: SeededRandomNumberGenerator(seed: device.rawValue.utf8.reduce(UInt64(start)) { $0 &* 31 &+ UInt64($1) }))
        let block = ids.next()
        var events: [Event] = []
        events.reserveCapacity(count)
        for index in start..<start + count {
            let stamp = HLCTimestamp(milliseconds: origin + UInt64(index / 64), counter: UInt16(index % 64))
            events.append(
                Event(
                    id: ids.next(), device: device, deviceSequence: Int64(index + 1), timestamp: stamp, changeBlock: block,
                    object: ids.next(), type: "asset.created", schemaVersion: 1, payload: payload))
        }
        return events
    }

    func pushBody(device: DeviceID, from start: Int, count: Int) -> [UInt8] {
        PushRequest(device: device, events: events(device: device, from: start, count: count)).encoded()
    }

    // MARK: Codec

    func codecFigures() throws -> [Figure] {
        let count = quick ? 50_000 : 200_000
        let sample = events(device: "bench-device", from: 0, count: count)
        var encodeRates: [Double] = [], decodeRates: [Double] = []
        var body: [UInt8] = []
        for _ in 0..<(quick ? 1 : 3) {
            encodeRates.append(Double(count) / cpuSeconds { body = PushRequest(device: "bench-device", events: sample).encoded() })
            var decoded = 0
            decodeRates.append(Double(count) / (try cpuSeconds { decoded = try ReceivedPush.decode(body).events.count }))
            guard decoded == count else { throw BenchmarkError("the codec decoded \(decoded) of \(count) events") }
        }
        return [
            Figure(
                name: "codec.encode", value: median(encodeRates), unit: "events/s", baseline: nil, higherIsBetter: true, target: 200_000,
                note:
                    "WireEvent JSON encoding of a push body, content hash (SHA-256) included, 200-byte payloads; per CPU-second of the encoding thread"
            ),
            Figure(
                name: "codec.decode", value: median(decodeRates), unit: "events/s", baseline: nil, higherIsBetter: true, target: 200_000,
                note:
                    "push body JSON decoding into events (UUIDs, base64 payloads, hex hashes), 200-byte payloads; per CPU-second of the decoding thread"
            ),
        ]
    }

    // MARK: Push and pull

    func pushAndPull(directory: URL) throws -> [Figure] {
        let schema = try EventLogBenchmarks.schemaSQL()
        let cPath = directory.appendingPathComponent("c-server-baseline.sqlite").path
        let cTime = baseline_append(cPath, schema, Int32(pushCount), 1000, Int32(payload.count))
        guard cTime > 0 else { throw BenchmarkError("the C baseline append failed") }
        let cRate = Double(pushCount) / cTime

        let store = try SQLiteServerStore(path: directory.appendingPathComponent("server.sqlite").path)
        try store.createLibrary(named: "bench", uuid: nil, at: 1)
        var configuration = SyncServer.Configuration(store: store, blobDirectory: directory.appendingPathComponent("blobs").path)
        configuration.logger = DiscardingLogger()
        configuration.threadCount = 4
        configuration.maximumClockSkewMilliseconds = .max / 2
        let server = try SyncServer(configuration: configuration)
        try server.start()
        defer { server.stop() }
        let tokens: [String] = try (0..<clients).map { client in
            let token = try DeviceToken.generate()
            try store.registerToken(
                hash: DeviceToken.hash(token), library: "bench", device: DeviceID("device-\(client)"), scope: .readWrite, at: 1)
            return token
        }
        // Bodies are encoded before the clock starts: the figure is the server's rate (the
        // codec has its own figures).
        let perClient = pushCount / clients
        let bodies: [[[UInt8]]] = (0..<clients).map { client in
            stride(from: 0, to: perClient, by: batch).map {
                pushBody(device: DeviceID("device-\(client)"), from: $0, count: min(batch, perClient - $0))
            }
        }
        let port = server.port
        let latencies = Mutex<[Double]>([])
        let cpuBefore = processCPUSeconds()
        let pushTime = try concurrently(clients) { client in
            let connection = try KeepAliveConnection(port: port)
            var own: [Double] = []
            for body in bodies[client] {
                let start = ContinuousClock.now
                let reply = try connection.send(method: "POST", path: "/v1/libraries/bench/events", token: tokens[client], body: body)
                own.append(milliseconds(since: start))
                guard reply.status == 200 else { throw BenchmarkError("push answered \(reply.status)") }
            }
            latencies.withLock { $0 += own }
        }
        let pushCPU = processCPUSeconds() - cpuBefore
        let stored = try store.chainSummary(libraryID: 1).count
        guard stored == Int64(perClient * clients) else {
            throw BenchmarkError("the server stored \(stored) of \(perClient * clients) events")
        }

        /// Every client pulls the whole log; returns the events pulled and the seconds it took.
        func pullAll(eventPages: Bool) throws -> (events: Int, seconds: Double) {
            let pulled = Mutex(0)
            let seconds = try concurrently(clients) { client in
                let connection = try KeepAliveConnection(port: port)
                var cursor: Int64 = 0
                var count = 0
                while true {
                    let reply = try connection.send(
                        method: "GET", path: "/v1/libraries/bench/events?since=\(cursor)&limit=1000", token: tokens[client],
                        accept: eventPages ? EventPage.contentType : nil)
                    let page = try eventPages ? EventPage.decode(reply.body) : PullResponse.decode(reply.body)
                    count += page.events.count
                    cursor = page.nextCursor
                    if !page.hasMore { break }
                }
                pulled.withLock { $0 += count }
            }
            return (pulled.withLock { $0 }, seconds)
        }
        let (total, pullTime) = try pullAll(eventPages: false)
        let (pageTotal, pageTime) = try pullAll(eventPages: true)
        return [
            Figure(
                name: "server.push", value: Double(perClient * clients) / pushTime, unit: "events/s", baseline: cRate, higherIsBetter: true,
                target: 0.5,
                note: "\(clients) clients on keep-alive loopback connections pushing batches of \(batch) (200-byte payloads) to the "
                    + "in-process server (4 threads), vs the C baseline's local batched append (1,000 per transaction)"),
            Figure(
                name: "server.push.cpu", value: Double(perClient * clients) / pushCPU, unit: "events/s", baseline: nil,
                higherIsBetter: true,
                target: nil,
                note: "the same pushes per CPU-second of the whole process (server threads and clients): the rate one idle core "
                    + "would sustain, comparable when other processes load the machine"),
            Figure(
                name: "server.push.p99", value: percentile(latencies.withLock { $0 }, 99), unit: "ms", baseline: nil, higherIsBetter: false,
                target: nil, note: "99th percentile latency of one push request of \(batch) events under \(clients) concurrent clients"),
            Figure(
                name: "server.pull", value: Double(total) / pullTime, unit: "events/s", baseline: nil, higherIsBetter: true, target: 50_000,
                note: "\(clients) clients each pulling the whole \(perClient * clients)-event log in pages of 1,000, decoding every page"),
            Figure(
                name: "server.pull.event-page", value: Double(pageTotal) / pageTime, unit: "events/s", baseline: nil, higherIsBetter: true,
                target: nil, note: "the same pulls asking for binary event pages (Accept: \(EventPage.contentType))"),
        ]
    }

    // MARK: Memory

    /// Runs the built `photoledger-server` as a child process and reads its peak RSS after
    /// pushing and pulling a small log, then a large one.
    func memoryFigures(directory: URL) throws -> [Figure] {
        let executable = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            .deletingLastPathComponent().appendingPathComponent("photoledger-server")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            print("note: server.rss skipped: build photoledger-server beside photoledger-bench (swift build -c release)")
            return []
        }
        let db = directory.appendingPathComponent("rss.sqlite").path
        try runTool(executable, ["admin", "create-library", "bench", "--db", db])
        let token = try runTool(
            executable, ["admin", "issue-token", "--db", db, "--library", "bench", "--device", "device-0", "--scope", "readWrite"]
        )
        .trimmingCharacters(in: .whitespacesAndNewlines)
        let process = Process()
        process.executableURL = executable
        process.arguments = [
            "serve", "--db", db, "--blobs", directory.appendingPathComponent("rss-blobs").path, "--listen", "127.0.0.1:0",
            "--max-clock-skew", "31536000",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        defer {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = UInt16(line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? "") else {
            throw BenchmarkError("the server did not report its port: \(line)")
        }
        let connection = try KeepAliveConnection(port: port)
        var pushed = 0
        func grow(to count: Int) throws {
            while pushed < count {
                let size = min(1000, count - pushed)
                let reply = try connection.send(
                    method: "POST", path: "/v1/libraries/bench/events", token: token,
                    body: pushBody(device: "device-0", from: pushed, count: size))
                guard reply.status == 200 else { throw BenchmarkError("push answered \(reply.status)") }
                pushed += size
            }
            var cursor: Int64 = 0
            while true {
                let reply = try connection.send(method: "GET", path: "/v1/libraries/bench/events?since=\(cursor)&limit=5000", token: token)
                let page = try PullResponse.decode(reply.body)
                cursor = page.nextCursor
                if !page.hasMore { break }
            }
        }
        try grow(to: memorySizes.small)
        let small = Double(peakResidentKiB(pid: process.processIdentifier)) / 1024
        try grow(to: memorySizes.large)
        let large = Double(peakResidentKiB(pid: process.processIdentifier)) / 1024
        return [
            Figure(
                name: "server.rss", value: large, unit: "MB", baseline: small, higherIsBetter: false, target: 1 / 1.5,
                note: "peak RSS of the server process after pushing and pulling \(memorySizes.large) events, vs after \(memorySizes.small) "
                    + "(baseline): memory must not grow with the log")
        ]
    }
}

/// CPU seconds the calling thread spends in `body`: single-threaded figures that stay
/// comparable when other processes share the machine.
func cpuSeconds(_ body: () throws -> Void) rethrows -> Double {
    func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
    let start = now()
    try body()
    return now() - start
}

/// User and system CPU seconds used by this process so far, all threads included.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Runs `body(0..<count)` on `count` threads at once and returns the wall time in seconds.
func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws -> Double {
    let failures = Mutex<[String]>([])
    let group = DispatchGroup()
    let start = ContinuousClock.now
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            do { try body(index) } catch { failures.withLock { $0.append("\(error)") } }
            group.leave()
        }
    }
    group.wait()
    let elapsed = milliseconds(since: start) / 1000
    if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
    return elapsed
}

func milliseconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
}

/// A minimal HTTP/1.1 client on one keep-alive TCP connection (loopback benchmarks only:
/// responses must carry Content-Length, as the server's do).
final class KeepAliveConnection {
    private let socket: Int32
    private var pending: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 256 * 1024)

    init(port: UInt16) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard socket >= 0, connected == 0 else { throw BenchmarkError("cannot connect to 127.0.0.1:\(port)") }
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(socket) }

    func send(method: String, path: String, token: String, body: [UInt8] = [], accept: String? = nil) throws -> (status: Int, body: [UInt8])
    {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
        if let accept { request += "Accept: \(accept)\r\n" }
        if !body.isEmpty { request += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        request += "\r\n"
        try write(Array(request.utf8) + body)
        let headEnd = try readUntilHeadEnd()
        let head = String(decoding: pending[..<headEnd], as: UTF8.self)
        let bodyStart = headEnd + 4
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw BenchmarkError("malformed response")
        }
        let length =
            lines.compactMap { line -> Int? in
                line.lowercased().hasPrefix("content-length:")
                    ? Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) : nil
            }.first ?? 0
        while pending.count < bodyStart + length { try fill() }
        let responseBody = Array(pending[bodyStart..<bodyStart + length])
        pending.removeSubrange(0..<bodyStart + length)
        return (status, responseBody)
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw BenchmarkError("the connection closed while sending") }
            sent += count
        }
    }

    private func fill() throws {
        let count = scratch.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw BenchmarkError("the connection closed while receiving") }
        pending += scratch[0..<count]
    }

    private func readUntilHeadEnd() throws -> Int {
        let marker: [UInt8] = [13, 10, 13, 10]
        while true {
            if let range = pending.firstRange(of: marker) { return range.lowerBound }
            try fill()
        }
    }
}
