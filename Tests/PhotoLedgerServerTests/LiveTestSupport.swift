import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import TestSupportKit

/// A TCP connection to the server on loopback, from a chosen source address (any 127.x.y.z is
/// loopback, so tests can stand for several clients), with raw requests and responses.
final class RawConnection {
    let socket: Int32
    private var pending: [UInt8] = []

    init(port: UInt16, from source: String = "127.0.0.1") throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ServerStoreError("socket failed: \(String(cString: strerror(errno)))") }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, length) }
        }
        guard bound == 0, connected == 0 else {
            close(socket)
            throw ServerStoreError("cannot connect from \(source) to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(socket) }

    /// Sends all of `bytes`; false when the connection is closed.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads bytes until `timeout` passes without any; nil when the peer closed the connection
    /// (end of stream or reset) before any byte arrived.
    private func fill(timeout: Duration) -> Bool? {
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&poller, 1, milliseconds) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        pending += buffer[0..<count]
        return true
    }

    /// Whether the server closes the connection within `timeout` (bytes it sends meanwhile are
    /// read and dropped).
    func isClosedByServer(within timeout: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        repeat {
            if fill(timeout: min(.milliseconds(100), max(.zero, deadline - clock.now))) == nil { return true }
        } while clock.now < deadline
        return false
    }

    /// The next response, read whole (by its `Content-Length`); throws when none arrives within
    /// `timeout`. The default (four minutes) only ends a broken run, and stays below the longest
    /// wait of a pull (300 s), so that an answer to a waiting pull is its wake-up, not its end.
    func response(timeout: Duration = .seconds(240)) throws -> RawResponse {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            if let response = RawResponse.parse(&pending) { return response }
            guard clock.now < deadline else {
                throw ServerStoreError("no whole response within \(timeout); received \(pending.count) bytes")
            }
            guard fill(timeout: .milliseconds(100)) != nil else {
                throw ServerStoreError("the server closed the connection after \(pending.count) bytes of a response")
            }
        }
    }

    /// Whether a byte has arrived (without waiting).
    var hasData: Bool {
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0 || !pending.isEmpty
    }
}

/// A response as received on a raw connection.
struct RawResponse {
    let status: Int
    let head: String
    let body: [UInt8]

    func header(_ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    var error: ErrorResponse? { try? ErrorResponse.decode(body) }

    /// Takes one whole response off the front of `bytes`, or returns nil when it has not all arrived.
    static func parse(_ bytes: inout [UInt8]) -> RawResponse? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        let response = RawResponse(status: 0, head: head, body: [])
        let length = response.header("Content-Length").flatMap { Int($0) } ?? 0
        guard bytes.count >= end.upperBound + length else { return nil }
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = Array(bytes[end.upperBound..<end.upperBound + length])
        bytes.removeSubrange(0..<end.upperBound + length)
        return RawResponse(status: status, head: head, body: body)
    }
}

/// A request as bytes: the request line, `Host`, a bearer token when given, the other fields, and
/// the body with its `Content-Length` when there is one.
func rawRequest(_ method: String, _ path: String, token: String? = nil, fields: [String] = [], body: [UInt8]? = nil) -> [UInt8] {
    var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if let token { head += "Authorization: Bearer \(token)\r\n" }
    for field in fields { head += field + "\r\n" }
    if let body { head += "Content-Length: \(body.count)\r\n" }
    return Array((head + "\r\n").utf8) + (body ?? [])
}

/// Whether `GET /v1/health` on a new connection from `source` answers 200.
func healthAnswers(_ fixture: ServerFixture, from source: String) throws -> Bool {
    let connection = try RawConnection(port: fixture.server.port, from: source)
    connection.send(rawRequest("GET", SyncRoutes.health))
    return try connection.response().status == 200
}

/// Waits until `condition` holds, checking every 10 ms; throws after `timeout` (a bound on a
/// broken server, far beyond what a working one needs however slow the machine).
func waitUntil(
    _ what: String, timeout: Duration = TestPatience.limit, _ condition: () throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while try !condition() {
        guard clock.now < deadline else { throw ServerStoreError("timed out waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// `photoledger-server serve` started through the shell, so that a test can lower its soft limit
/// of open files first; its standard error is kept for the test to read.
final class ShellServerProcess {
    let process = ChildProcess()
    let port: UInt16
    private let errorFile: URL

    init(database: String, blobs: String, logDirectory: TemporaryDirectory, softOpenFileLimit: Int? = nil, options: [String] = []) throws {
        errorFile = logDirectory.url.appendingPathComponent("server-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        let limit = softOpenFileLimit.map { "ulimit -Sn \($0) && " } ?? ""
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments =
            [
                "-c",
                "\(limit)db=$1 blobs=$2; shift 2; exec \"$0\" serve --db \"$db\" --blobs \"$blobs\" --listen 127.0.0.1:0 --threads 2 \"$@\"",
                try builtExecutable("photoledger-server").path, database, blobs,
            ] + options
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        var line = [UInt8]()
        while !line.contains(UInt8(ascii: "\n")) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += data
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("listening on http://127.0.0.1:"), let port = UInt16(text.split(separator: ":").last ?? "") else {
            process.terminate()
            throw ServerStoreError("the server did not report its address: '\(text)'")
        }
        self.port = port
    }

    /// What the server has logged so far.
    var log: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }

    /// Kills the process at once, as a crash would.
    func crash() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends SIGTERM and waits for the exit status.
    func terminate() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { crash() }
    }
}
