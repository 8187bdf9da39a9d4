import Foundation
import FoundationNetworking
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Synchronization
@_exported import TestSupportKit

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let now = Mutex<UInt64>(1_764_483_790_000)
    func read() -> UInt64 { now.withLock { $0 } }
    func set(_ value: UInt64) { now.withLock { $0 = value } }
}

/// A logger that keeps every record.
final class CapturingLogger: ServerLogger {
    private let storage = Mutex<[LogRecord]>([])
    func log(_ record: LogRecord) { storage.withLock { $0.append(record) } }
    var records: [LogRecord] { storage.withLock { $0 } }
}

/// Makes events for one device: fixed clock, seeded identifiers, sequences from 1.
struct EventFactory {
    let device: DeviceID
    let ids: UUIDv7Generator
    var sequence: Int64 = 0
    var milliseconds: UInt64 = 1_764_483_790_000

    init(device: DeviceID = "anna-phone", seed: UInt64 = 1) {
        self.device = device
        self.ids = UUIDv7Generator(clock: { 1_764_483_790_000 }, random: SeededRandomNumberGenerator(seed: seed))
    }

    /// The device's next event, about `object` (a new one by default).
    mutating func make(type: String = "asset.created", object: UUID? = nil, payload: [UInt8]? = nil) -> Event {
        sequence += 1
        milliseconds += 1
        let id = ids.next(), block = ids.next(), fresh = ids.next()
        return Event(
            id: id, device: device, deviceSequence: sequence, timestamp: HLCTimestamp(milliseconds: milliseconds, counter: 0),
            changeBlock: block, object: object ?? fresh, type: type, schemaVersion: 1, payload: payload ?? Array("payload \(sequence)".utf8)
        )
    }

    mutating func make(_ count: Int, type: String = "asset.created") -> [Event] { (0..<count).map { _ in make(type: type) } }
}

/// An HTTP response as the tests see it.
struct Reply {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]

    var json: JSONValue? { try? JSONValue.parse(body) }
    var errorCode: String? { json?["error"]?["code"]?.stringValue }
    var errorMessage: String { json?["error"]?["message"]?.stringValue ?? "" }
    func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    func decode<M: WireMessage>(_ type: M.Type) throws -> M { try M.decode(body) }
}

/// A URLSession client of one server.
struct TestClient: Sendable {
    let port: UInt16
    let token: String?
    let session: URLSession

    init(port: UInt16, token: String?) {
        self.port = port
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = TimeInterval(TestPatience.limit.components.seconds)
        session = URLSession(configuration: configuration)
    }

    func with(token: String?) -> TestClient { TestClient(port: port, token: token) }

    func send(
        _ method: String, _ path: String, body: [UInt8]? = nil, contentType: String? = "application/json", headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body)
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (key, value) in http.allHeaderFields { fields["\(key)"] = "\(value)" }
        return Reply(status: http.statusCode, headers: fields, body: Array(data))
    }

    func push(_ events: [Event], device: DeviceID = "anna-phone", library: String = "family") async throws -> Reply {
        try await send("POST", SyncRoutes.events(library: library), body: PushRequest(device: device, events: events).encoded())
    }

    func pushResponse(_ events: [Event], device: DeviceID = "anna-phone") async throws -> PushResponse {
        let reply = try await push(events, device: device)
        guard reply.status == 200 else {
            throw ServerStoreError("push failed: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return try reply.decode(PushResponse.self)
    }

    func pull(since: Int64, limit: Int? = nil, library: String = "family") async throws -> Reply {
        let query = limit.map { "&limit=\($0)" } ?? ""
        return try await send("GET", "\(SyncRoutes.events(library: library))?since=\(since)\(query)")
    }

    func pullAll(pageSize: Int = 1000) async throws -> [WireEvent] {
        var cursor: Int64 = 0
        var events: [WireEvent] = []
        while true {
            let page = try await pull(since: cursor, limit: pageSize).decode(PullResponse.self)
            events += page.events
            cursor = page.nextCursor
            if !page.hasMore { return events }
        }
    }
}

/// A server on loopback over a fresh database, with library `family` and tokens for devices.
final class ServerFixture: @unchecked Sendable {
    // Test-only: used from one test at a time.
    let directory: TemporaryDirectory
    let clock = ManualClock()
    let logger = CapturingLogger()
    var store: SQLiteServerStore
    var server: SyncServer
    var tokens: [String: String] = [:]

    var databasePath: String { directory.path("server.sqlite") }
    var blobPath: String { directory.path("blobs") }

    init(configure: (inout SyncServer.Configuration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteServerStore(path: directory.path("server.sqlite"))
        try store.createLibrary(named: "family", uuid: nil, at: 1)
        try store.createLibrary(named: "work", uuid: nil, at: 1)
        server = try Self.makeServer(store: store, blobs: directory.path("blobs"), clock: clock, logger: logger, configure: configure)
        try server.start()
        for (device, scope) in [
            ("anna-phone", TokenScope.readWrite), ("ben-laptop", .readWrite), ("kiosk", .addOnly), ("frame", .readOnly),
        ] {
            tokens[device] = try issue(device: device, scope: scope)
        }
        tokens["work-phone"] = try issue(device: "work-phone", scope: .readWrite, library: "work")
    }

    static func makeServer(
        store: SQLiteServerStore, blobs: String, clock: ManualClock, logger: CapturingLogger,
        configure: (inout SyncServer.Configuration) -> Void
    ) throws -> SyncServer {
        var configuration = SyncServer.Configuration(store: store, blobDirectory: blobs)
        configuration.clock = { clock.read() }
        configuration.logger = logger
        configuration.threadCount = 2
        configure(&configuration)
        return try SyncServer(configuration: configuration)
    }

    func issue(device: String, scope: TokenScope, library: String = "family") throws -> String {
        let token = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(token), library: library, device: DeviceID(device), scope: scope, at: 1)
        return token
    }

    /// Stops the server and serves the same files from a new store and server.
    func restart() throws {
        server.stop()
        store = try SQLiteServerStore(path: databasePath)
        server = try Self.makeServer(store: store, blobs: blobPath, clock: clock, logger: logger) { _ in }
        try server.start()
    }

    func client(_ device: String? = "anna-phone") -> TestClient { TestClient(port: server.port, token: device.flatMap { tokens[$0] }) }

    deinit { server.stop() }
}

/// `TestPatience.limit` in whole seconds.
let rawExchangePatience = Int(TestPatience.limit.components.seconds)

/// Sends raw bytes on a new TCP connection and returns everything read until the server closes
/// it, the response is whole, or `timeout` seconds pass without a byte (for malformed and
/// truncated requests URLSession cannot make). The default bound only ends a broken server's run.
func rawExchange(port: UInt16, _ request: [UInt8], timeout: Int = rawExchangePatience, closeWrite: Bool = false) throws -> String {
    String(decoding: try rawExchangeBytes(port: port, request, timeout: timeout, closeWrite: closeWrite), as: UTF8.self)
}

/// Like ``rawExchange(port:_:timeout:closeWrite:)``, returning the bytes as received.
func rawExchangeBytes(port: UInt16, _ request: [UInt8], timeout: Int = rawExchangePatience, closeWrite: Bool = false) throws -> [UInt8] {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw ServerStoreError("socket failed") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw ServerStoreError("connect failed") }
    var time = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    var sent = 0
    while sent < request.count {
        let count = request[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count <= 0 { break }
        sent += count
    }
    if closeWrite { shutdown(socket, Int32(SHUT_WR)) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        received += buffer[0..<count]
        if let text = String(bytes: received, encoding: .utf8), let split = text.range(of: "\r\n\r\n") {
            let head = text[..<split.lowerBound].lowercased()
            if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                received.count >= text.utf8.distance(from: text.utf8.startIndex, to: split.upperBound) + length
            {
                break
            }
        }
    }
    return received
}

/// The path of an executable built beside the test binary.
func builtExecutable(_ name: String) throws -> URL {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    var directory = testBinary.deletingLastPathComponent()
    while directory.path != "/" {
        let candidate = directory.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isExecutableFile(atPath: candidate.path)
        {
            return candidate
        }
        directory = directory.deletingLastPathComponent()
    }
    throw ServerStoreError("cannot find the built executable \(name) near \(testBinary.path); run `swift build` first")
}
