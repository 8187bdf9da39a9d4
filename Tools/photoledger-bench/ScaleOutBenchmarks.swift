import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Synchronization

/// Server figures across stores and processes: pushes and pulls through `photoledger-server`
/// processes on PostgreSQL (one and two servers) beside one server process on the embedded
/// SQLite store, with the same clients, and the PostgreSQL server's memory as its log grows.
///
/// PostgreSQL comes from `PHOTOLEDGER_BENCH_POSTGRES_URL` (or `PHOTOLEDGER_TEST_POSTGRES_URL`):
/// the bench makes a database of its own there for each figure. Durability matches on both
/// stores: SQLite runs WAL with synchronous=NORMAL; the PostgreSQL store's sessions run
/// synchronous_commit=off on a cluster with fsync on (see ``PostgresServerStore/Options``).
struct ScaleOutBenchmarks {
    let quick: Bool
    let clients = 8
    let batch = 100
    let eventCount: Int
    let memorySizes: (small: Int, large: Int)
    let server: ServerBenchmarks

    init(quick: Bool) {
        self.quick = quick
        eventCount = quick ? 24_000 : 200_000
        memorySizes = quick ? (20_000, 100_000) : (100_000, 1_000_000)
        server = ServerBenchmarks(quick: quick)
    }

    static var postgresURL: String? {
        let environment = ProcessInfo.processInfo.environment
        return [environment["PHOTOLEDGER_BENCH_POSTGRES_URL"], environment["PHOTOLEDGER_TEST_POSTGRES_URL"]].compactMap { $0 }.first {
            !$0.isEmpty
        }
    }

    func run() throws -> [Figure] {
        guard let admin = Self.postgresURL else {
            print("note: scale figures skipped: set PHOTOLEDGER_BENCH_POSTGRES_URL to a PostgreSQL the bench may create databases in")
            return []
        }
        let tool = try serverTool()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try pushAndPull(
            tool, database: directory.appendingPathComponent("scale.sqlite").path, servers: 1, directory: directory)
        var figures: [Figure] = []
        var pushes: [(Int, Double, CPUShares)] = [], pulls: [(Int, Double, CPUShares)] = []
        for servers in [1, 2] {
            let rates = try pushAndPull(tool, database: try createDatabase(admin), servers: servers, directory: directory)
            pushes.append((servers, rates.push, rates.pushCPU))
            pulls.append((servers, rates.pull, rates.pullCPU))
        }
        let setting =
            "8 clients on keep-alive loopback connections spread over the servers, \(eventCount) events in pushes of \(batch) "
            + "(200-byte payloads), then every client pulls the whole log in binary pages of 1,000"
        figures.append(
            Figure(
                name: "scale.push.sqlite", value: sqlite.push, unit: "events/s", baseline: nil, higherIsBetter: true, target: nil,
                note: "one photoledger-server process (4 threads) on the embedded SQLite store (WAL, synchronous=NORMAL): \(setting); "
                    + sqlite.pushCPU.description))
        for (servers, rate, cpu) in pushes {
            figures.append(
                Figure(
                    name: "scale.push.postgres-\(servers)", value: rate, unit: "events/s", baseline: sqlite.push, higherIsBetter: true,
                    target: servers == 2 ? 0.7 : nil,
                    note: "\(servers) photoledger-server process\(servers == 1 ? "" : "es") (4 threads each) on one PostgreSQL "
                        + "(fsync on, synchronous_commit=off) vs one server on SQLite (baseline); database, servers and clients share the machine; "
                        + cpu.description))
        }
        figures.append(
            Figure(
                name: "scale.pull.sqlite", value: sqlite.pull, unit: "events/s", baseline: nil, higherIsBetter: true, target: nil,
                note: "the pulls of scale.push.sqlite; " + sqlite.pullCPU.description))
        for (servers, rate, cpu) in pulls {
            figures.append(
                Figure(
                    name: "scale.pull.postgres-\(servers)", value: rate, unit: "events/s", baseline: sqlite.pull, higherIsBetter: true,
                    target: servers == 2 ? 0.7 : nil,
                    note: "the pulls of scale.push.postgres-\(servers) vs one server on SQLite (baseline); " + cpu.description))
        }
        figures += try memoryFigure(tool, database: try createDatabase(admin), directory: directory)
        return figures
    }

    func serverTool() throws -> URL {
        let tool = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            .deletingLastPathComponent().appendingPathComponent("photoledger-server")
        guard FileManager.default.isExecutableFile(atPath: tool.path) else {
            throw BenchmarkError("build photoledger-server beside photoledger-bench (swift build -c release)")
        }
        return tool
    }

    /// A new database in the PostgreSQL at `admin`, made with psql.
    func createDatabase(_ admin: String) throws -> String {
        let name = "photoledger_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try runTool(URL(fileURLWithPath: "/usr/bin/psql"), [admin, "-qc", "CREATE DATABASE \(name)"])
        guard var components = URLComponents(string: admin) else { throw BenchmarkError("the PostgreSQL URL is not a URL") }
        components.path = "/" + name
        return components.string!
    }

    /// Starts `photoledger-server serve` on `database`; returns the process and its port.
    func startServer(_ tool: URL, database: String, blobs: String) throws -> (Process, UInt16) {
        let process = Process()
        process.executableURL = tool
        process.arguments = [
            "serve", "--db", database, "--blobs", blobs, "--listen", "127.0.0.1:0", "--threads", "4", "--max-clock-skew", "31536000",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = UInt16(line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? "") else {
            throw BenchmarkError("the server did not report its port: \(line)")
        }
        return (process, port)
    }

    /// Pushes then pulls through `servers` server processes on `database`; returns events/s and
    /// where the CPU time of each phase went.
    func pushAndPull(_ tool: URL, database: String, servers count: Int, directory: URL) throws -> (
        push: Double, pull: Double, pushCPU: CPUShares, pullCPU: CPUShares
    ) {
        try runTool(tool, ["admin", "create-library", "bench", "--db", database])
        let tokens = try (0..<clients).map { client in
            try runTool(
                tool,
                ["admin", "issue-token", "--db", database, "--library", "bench", "--device", "device-\(client)", "--scope", "readWrite"])
        }
        let servers = try (0..<count).map { _ in
            try startServer(tool, database: database, blobs: directory.appendingPathComponent("blobs").path)
        }
        defer {
            for (process, _) in servers {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
            }
        }
        let perClient = eventCount / clients
        let bodies: [[[UInt8]]] = (0..<clients).map { client in
            stride(from: 0, to: perClient, by: batch).map {
                server.pushBody(device: DeviceID("device-\(client)"), from: $0, count: min(batch, perClient - $0))
            }
        }
        let ports = servers.map(\.1)
        let databaseName = URLComponents(string: database).map { String($0.path.dropFirst()) } ?? ""
        let pushCPU = CPUShares(servers: servers.map { $0.0.processIdentifier }, database: databaseName)
        let pushTime = try concurrently(clients) { client in
            let connection = try KeepAliveConnection(port: ports[client % ports.count])
            for body in bodies[client] {
                let reply = try connection.send(method: "POST", path: "/v1/libraries/bench/events", token: tokens[client], body: body)
                guard reply.status == 200 else { throw BenchmarkError("push answered \(reply.status)") }
            }
        }
        pushCPU.stop(wall: pushTime)
        let pulled = Mutex(0)
        let pullCPU = CPUShares(servers: servers.map { $0.0.processIdentifier }, database: databaseName)
        let pullTime = try concurrently(clients) { client in
            let connection = try KeepAliveConnection(port: ports[client % ports.count])
            var cursor: Int64 = 0
            var count = 0
            while true {
                let reply = try connection.send(
                    method: "GET", path: "/v1/libraries/bench/events?since=\(cursor)&limit=1000", token: tokens[client],
                    accept: EventPage.contentType)
                let page = try EventPage.decode(reply.body)
                count += page.events.count
                cursor = page.nextCursor
                if !page.hasMore { break }
            }
            pulled.withLock { $0 += count }
        }
        pullCPU.stop(wall: pullTime)
        let total = pulled.withLock { $0 }
        guard total == perClient * clients * clients else {
            throw BenchmarkError("the clients pulled \(total) of \(perClient * clients * clients) events")
        }
        return (Double(perClient * clients) / pushTime, Double(total) / pullTime, pushCPU, pullCPU)
    }

    /// Peak RSS of one server on PostgreSQL after pushing and pulling a small log, then a large one.
    func memoryFigure(_ tool: URL, database: String, directory: URL) throws -> [Figure] {
        try runTool(tool, ["admin", "create-library", "bench", "--db", database])
        let token = try runTool(
            tool, ["admin", "issue-token", "--db", database, "--library", "bench", "--device", "device-0", "--scope", "readWrite"])
        let (process, port) = try startServer(tool, database: database, blobs: directory.appendingPathComponent("rss-blobs").path)
        defer {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        let connection = try KeepAliveConnection(port: port)
        var pushed = 0
        func grow(to count: Int) throws {
            while pushed < count {
                let size = min(1000, count - pushed)
                let reply = try connection.send(
                    method: "POST", path: "/v1/libraries/bench/events", token: token,
                    body: server.pushBody(device: "device-0", from: pushed, count: size))
                guard reply.status == 200 else { throw BenchmarkError("push answered \(reply.status)") }
                pushed += size
            }
            var cursor: Int64 = 0
            while true {
                let reply = try connection.send(
                    method: "GET", path: "/v1/libraries/bench/events?since=\(cursor)&limit=5000", token: token,
                    accept: EventPage.contentType)
                let page = try EventPage.decode(reply.body)
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
                name: "scale.rss.postgres", value: large, unit: "MB", baseline: small, higherIsBetter: false, target: 1 / 1.5,
                note: "peak RSS of a server process on PostgreSQL after pushing and pulling \(memorySizes.large) events, vs after "
                    + "\(memorySizes.small) (baseline): memory must not grow with the log")
        ]
    }
}

/// Where the CPU time of a phase went: the server processes, the PostgreSQL backends serving the
/// bench's database, and this process (the clients).
final class CPUShares: CustomStringConvertible {
    private let servers: [Int32]
    private let database: String
    private let start: (servers: Double, database: Double, clients: Double)
    private var spent = (servers: 0.0, database: 0.0, clients: 0.0)
    private var wall = 0.0

    init(servers: [Int32], database: String) {
        self.servers = servers
        self.database = database
        start = (servers.map(Self.cpuSeconds).reduce(0, +), Self.backendSeconds(database), processCPUSeconds())
    }

    func stop(wall: Double) {
        self.wall = wall
        spent = (
            servers.map(Self.cpuSeconds).reduce(0, +) - start.servers, Self.backendSeconds(database) - start.database,
            processCPUSeconds() - start.clients
        )
    }

    var description: String {
        let total = wall * 2
        func share(_ seconds: Double) -> String { String(format: "%.1f s (%.0f %%)", seconds, seconds / max(total, 0.001) * 100) }
        return "CPU of the \(String(format: "%.1f", total)) core-seconds: servers \(share(spent.servers)), PostgreSQL backends "
            + "\(share(spent.database)), clients \(share(spent.clients))"
    }

    /// User and system CPU seconds of a process (0 when it is gone).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return 0
        }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU seconds of the PostgreSQL backends connected to `database`.
    static func backendSeconds(_ database: String) -> Double {
        guard !database.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry), let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
                command.hasPrefix("postgres: "), command.contains(" \(database) ")
            else { continue }
            total += cpuSeconds(pid)
        }
        return total
    }
}
