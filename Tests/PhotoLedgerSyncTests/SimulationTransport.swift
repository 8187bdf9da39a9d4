import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport

/// Sends requests to a server in this process (``SyncServer/respond(to:body:)``), so a
/// simulation runs thousands of syncs against the real server logic without sockets. The server
/// can be replaced (restarted) between requests.
final class InProcessTransport: HTTPTransport, @unchecked Sendable {
    // Safe to share: `server` is swapped and read only under `lock`.
    private let lock = NSLock()
    private var server: SyncServer

    init(server: SyncServer) { self.server = server }

    func replace(with server: SyncServer) { lock.withLock { self.server = server } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)!
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let body: [UInt8]
        switch request.body {
        case .bytes(let bytes): body = bytes
        case .file(let url): body = Array(try Data(contentsOf: url).dropFirst(Int(request.bodyFileOffset)))
        }
        let head = RequestHead(
            method: request.method.rawValue, path: components.path, authorization: request.headers["Authorization"],
            contentType: request.headers["Content-Type"], contentEncoding: request.headers["Content-Encoding"],
            contentLength: UInt64(body.count), acceptsGzip: false,
            acceptsEventPages: request.headers["Accept"]?.contains(EventPage.contentType) ?? false,
            acceptsKeyStoreBodies: request.headers["Accept"]?.contains(KeyStoreBody.contentType) ?? false, query: query,
            uploadOffset: request.headers[SyncRoutes.uploadOffsetField], uploadLength: request.headers[SyncRoutes.uploadLengthField])
        let response = lock.withLock { server }.respond(to: head, body: body)
        var bytes: [UInt8] = []
        switch response.body {
        case .empty: break
        case .bytes(let data): bytes = data
        case .file(let descriptor, let offset, let size):
            bytes = [UInt8](repeating: 0, count: Int(size))
            _ = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Int(size), off_t(offset)) }
            close(descriptor)
        case .stream(let stream):
            bytes = [UInt8](repeating: 0, count: Int(stream.size))
            var offset = 0
            while offset < bytes.count { offset += try bytes[offset...].withUnsafeMutableBytes { try stream.read(into: $0) } }
            stream.cancel()
        }
        var headers = HTTPHeaders()
        for (name, value) in response.headers { headers[name] = value }
        if let destination = request.responseBodyDestination, (200..<300).contains(response.status) {
            try Data(bytes).write(to: destination)
            return SyncTransport.HTTPResponse(status: response.status, headers: headers, body: .file(destination))
        }
        return SyncTransport.HTTPResponse(status: response.status, headers: headers, body: .bytes(bytes))
    }
}

/// Injects network faults, seeded: requests lost before arriving, responses lost after the
/// server committed, duplicated requests, and old requests delivered again out of order.
final class FaultyTransport: HTTPTransport, @unchecked Sendable {
    // Safe to share: `random` and `history` are touched only under `lock`.
    private let lock = NSLock()
    private let base: any HTTPTransport
    private var random: SeededRandomNumberGenerator
    private var history: [HTTPRequest] = []
    let faultRate: Int

    /// `faultRate`: one request in `faultRate` suffers a fault (0 = never).
    init(wrapping base: any HTTPTransport, seed: UInt64, faultRate: Int) {
        self.base = base
        self.random = SeededRandomNumberGenerator(seed: seed)
        self.faultRate = faultRate
    }

    private enum Fault { case none, drop, loseResponse, duplicate, replayOld }

    private func nextFault(for request: HTTPRequest) -> (Fault, HTTPRequest?) {
        lock.withLock {
            if request.method != .get { history.append(request) }
            if history.count > 50 { history.removeFirst() }
            guard faultRate > 0, Int.random(in: 0..<faultRate, using: &random) == 0 else { return (.none, nil) }
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return (.drop, nil)
            case 1: return (.loseResponse, nil)
            case 2: return (.duplicate, nil)
            default: return (.replayOld, history.randomElement(using: &random))
            }
        }
    }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        let lost = TransportError.connectionLost(url: request.url.absoluteString, detail: "simulated fault")
        switch nextFault(for: request) {
        case (.none, _):
            return try await base.send(request)
        case (.drop, _):
            throw lost
        case (.loseResponse, _):
            _ = try await base.send(request)
            throw lost
        case (.duplicate, _):
            _ = try await base.send(request)
            return try await base.send(request)
        case (.replayOld, let old):
            if let old, old.responseBodyDestination == nil { _ = try? await base.send(old) }
            return try await base.send(request)
        }
    }
}
