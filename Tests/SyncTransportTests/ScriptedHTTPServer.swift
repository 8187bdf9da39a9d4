import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 whose answers each test scripts.
///
/// One thread accepts connections; each connection gets a thread that serves requests in order
/// (keep-alive) until the client closes, a scripted action closes, or the server stops. It counts
/// accepted connections, so tests can prove that connections are reused.
final class ScriptedHTTPServer: Sendable {
    /// A request as the server received it.
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        /// The first value of a header, by case-insensitive name.
        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    /// A scripted answer.
    struct Response: Sendable {
        var status = 200
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        /// Sends the body with `Transfer-Encoding: chunked` in pieces of this size.
        var chunkSize: Int?
        /// Waits this long before answering.
        var delay: Duration?
        /// Sends the headers and this many body bytes, then stalls until the client goes away.
        var stallAfterBodyBytes: Int?
        /// Closes the connection after answering, saying so with `Connection: close`.
        var close = false
        /// Closes the connection after answering without saying so, as a server whose idle timeout
        /// expires does.
        var dropConnection = false
        /// Sends only this many bytes of the head, then closes the connection: a response cut
        /// inside its head.
        var cutHeadAfterBytes: Int?
    }

    /// What the server does with one request.
    enum Action: Sendable {
        case respond(Response)
        /// Closes the connection without answering.
        case closeWithoutAnswer
    }

    private struct State {
        var acceptedConnections = 0
        var requests: [Request] = []
        var openConnections: Set<Int32> = []
        var stopped = false
    }

    let port: UInt16
    private let listener: Int32
    private let handler: @Sendable (Request) -> Action
    private let state = Mutex(State())

    /// Starts a server that answers each request with `handler`.
    init(handler: @escaping @Sendable (Request) -> Action) throws {
        self.handler = handler
        (listener, port) = try Self.listen()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Starts a server that plays `script` in order, one action per request, repeating the last one.
    convenience init(script: [Action]) throws {
        let next = Mutex(0)
        try self.init { _ in
            next.withLock { index in
                defer { index += 1 }
                return script[min(index, script.count - 1)]
            }
        }
    }

    /// `http://127.0.0.1:<port>` followed by `path`.
    func url(_ path: String = "/") -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// The number of TCP connections accepted so far.
    var acceptedConnections: Int { state.withLock { $0.acceptedConnections } }

    /// The requests received so far, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting and shuts down open connections.
    func stop() {
        state.withLock { state in
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for connection in state.openConnections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    // MARK: - Sockets

    private static func listen() throws -> (Int32, UInt16) {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw ServerError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(socketFD, socketAddress, length) == 0 && Glibc.listen(socketFD, 64) == 0
                    && getsockname(socketFD, socketAddress, &length) == 0
            }
        }
        guard bound else {
            close(socketFD)
            throw ServerError("bind/listen on 127.0.0.1 failed")
        }
        return (socketFD, UInt16(bigEndian: address.sin_port))
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                break
            }
            let accepted = state.withLock { state in
                guard !state.stopped else { return false }
                state.acceptedConnections += 1
                state.openConnections.insert(connection)
                return true
            }
            guard accepted else {
                close(connection)
                break
            }
            Thread.detachNewThread { [self] in serve(connection) }
        }
        close(listener)
    }

    private func serve(_ connection: Int32) {
        var reader = ConnectionReader(socket: connection)
        while let request = reader.readRequest() {
            guard let request else {
                Self.send(connection, Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                break
            }
            state.withLock { $0.requests.append(request) }
            guard case .respond(let response) = handler(request), answer(request, with: response, on: connection) else { break }
        }
        state.withLock { _ = $0.openConnections.remove(connection) }
        close(connection)
    }

    /// Sends the response; returns whether the connection stays open.
    private func answer(_ request: Request, with response: Response, on connection: Int32) -> Bool {
        if let delay = response.delay {
            Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) * 1e-18)
        }
        var head = "HTTP/1.1 \(response.status) Scripted\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if response.chunkSize != nil {
            head += "Transfer-Encoding: chunked\r\n"
        } else if !response.headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            head += "Content-Length: \(response.body.count)\r\n"
        }
        if response.close { head += "Connection: close\r\n" }
        head += "\r\n"
        if let cut = response.cutHeadAfterBytes {
            Self.send(connection, Array(head.utf8.prefix(cut)))
            return false
        }
        guard Self.send(connection, Array(head.utf8)) else { return false }
        if request.method == "HEAD" { return !response.close && !response.dropConnection }
        if let stall = response.stallAfterBodyBytes {
            _ = Self.send(connection, Array(response.body.prefix(stall)))
            var byte: UInt8 = 0
            while recv(connection, &byte, 1, 0) > 0 {}
            return false
        }
        if let chunkSize = response.chunkSize {
            for start in stride(from: 0, to: response.body.count, by: chunkSize) {
                let chunk = response.body[start..<min(start + chunkSize, response.body.count)]
                guard Self.send(connection, Array((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Array("\r\n".utf8)) else {
                    return false
                }
            }
            guard Self.send(connection, Array("0\r\n\r\n".utf8)) else { return false }
        } else {
            guard Self.send(connection, response.body) else { return false }
        }
        return !response.close && !response.dropConnection
    }

    @discardableResult
    private static func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(connection, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }
}

struct ServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reads HTTP/1.1 requests from a socket.
struct ConnectionReader {
    let socket: Int32
    private var buffer: [UInt8] = []

    init(socket: Int32) { self.socket = socket }

    /// The next request; `nil` when the client closed, `.some(nil)` when the bytes are not HTTP.
    mutating func readRequest() -> ScriptedHTTPServer.Request?? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if let found = buffer.firstRange(of: separator) {
                headEnd = found.upperBound
                break
            }
            if buffer.count > 64 * 1024 || (buffer.count >= 3 && !buffer.prefix(3).allSatisfy({ $0 >= 0x41 && $0 <= 0x5A })) {
                return .some(nil)
            }
            guard fill() else { return nil }
        }
        guard let headEnd else { return nil }
        let head = String(decoding: buffer[..<(headEnd - 4)], as: UTF8.self)
        buffer.removeFirst(headEnd)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return .some(nil) }
        let headers: [(name: String, value: String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while buffer.count < length {
            guard fill() else { return nil }
        }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        return .some(ScriptedHTTPServer.Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body))
    }

    private mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk.prefix(count))
        return true
    }
}

/// A loopback listener that never accepts and whose backlog is already full, so that a new
/// connection attempt hangs until the client's connect timeout.
final class FullBacklogListener {
    let port: UInt16
    private var sockets: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        sockets.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 0) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listening else { throw ServerError("cannot listen on 127.0.0.1") }
        port = UInt16(bigEndian: address.sin_port)
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            sockets.append(filler)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
            }
        }
        Thread.sleep(forTimeInterval: 0.1)
    }

    func close() {
        for socket in sockets { Glibc.close(socket) }
        sockets = []
    }
}
