import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Passes requests to `base`, except that it cuts the first resumable upload (`PUT …/uploads/`)
/// after `cut` bytes of its body: it sends the request's head and those bytes on a connection of
/// its own, closes its side, waits until the server has closed the connection (having taken
/// what arrived) and fails as a broken connection does. It records the first byte and the body
/// size of every resumable upload it sees.
final class CuttingTransport: HTTPTransport, @unchecked Sendable {
    // Safe to share: `cutDone` and `sent` are touched only under `lock`.
    private let lock = NSLock()
    private let base: any HTTPTransport
    private let cut: Int?
    private var cutDone = false
    private var sent: [(offset: Int64, bytes: Int64)] = []

    init(base: any HTTPTransport, cut: Int?) {
        self.base = base
        self.cut = cut
    }

    var uploads: [(offset: Int64, bytes: Int64)] { lock.withLock { sent } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        guard request.method == .put, request.url.path.contains("/uploads/"), case .file(let file) = request.body else {
            return try await base.send(request)
        }
        let size = Int64(try Data(contentsOf: file).count)
        let cutNow = lock.withLock {
            defer { cutDone = true }
            return !cutDone ? cut : nil
        }
        guard let cutNow else {
            lock.withLock { sent.append((request.bodyFileOffset, size - request.bodyFileOffset)) }
            return try await base.send(request)
        }
        let bytes = try Data(contentsOf: file)
        let start = Int(request.bodyFileOffset)
        try Self.sendCut(request, body: Array(bytes[start..<start + cutNow]), announcing: bytes.count - start)
        lock.withLock { sent.append((request.bodyFileOffset, Int64(cutNow))) }
        throw TransportError.connectionLost(url: request.url.absoluteString, detail: "cut by the test after \(cutNow) bytes")
    }

    /// Sends `request`'s head announcing a body of `announcing` bytes, then `body`, closes the
    /// sending side and reads until the server closes the connection.
    static func sendCut(_ request: HTTPRequest, body: [UInt8], announcing: Int) throws {
        var head = "\(request.method.rawValue) \(request.url.path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for field in request.headers { head += "\(field.name): \(field.value)\r\n" }
        head += "Content-Length: \(announcing)\r\n\r\n"
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TransportError.invalidRequest(reason: "socket failed") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(request.url.port!).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TransportError.invalidRequest(reason: "connect failed") }
        let bytes = Array(head.utf8) + body
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { break }
            offset += count
        }
        shutdown(socket, Int32(SHUT_WR))
        var time = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ recv(socket, $0.baseAddress, $0.count, 0) }) > 0 {}
    }
}

@Suite("Resumable uploads from the sync engine")
struct ResumableUploadEngineTests {
    let contents: [UInt8] = {
        var generator = SeededRandomNumberGenerator(seed: 21)
        return (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }()
    var hash: String { Hex.encode(SHA256.hash(contents)) }

    /// An engine of device `anna-phone` over `transport`, which uploads resources from 1 MB as
    /// resumable uploads, and the file of a 3 MB resource.
    func setUp(_ server: TestServer, _ directory: TemporaryDirectory, transport: any HTTPTransport) throws -> (SyncEngine, URL) {
        var libraryOptions = PhotoLibrary.Options()
        let clock = server.clock
        libraryOptions.clock = { clock.read() }
        libraryOptions.preauthorized = true
        let library = try PhotoLibrary(url: directory.file("anna.sqlite"), device: "anna-phone", options: libraryOptions)
        var options = SyncEngine.Options()
        options.resumableUploadBytes = 1 << 20
        let engine = SyncEngine(library: library, remote: try server.remote(device: "anna-phone"), transport: transport, options: options)
        let file = directory.file("clip.mov")
        try Data(contents).write(to: file)
        return (engine, file)
    }

    func storedBlob(_ server: TestServer) -> Data? {
        FileManager.default.contents(atPath: server.directory.file("blobs/\(hash.prefix(2))/\(hash)").path)
    }

    @Test("an upload cut in the middle resumes from the server's offset and sends fewer bytes than the whole")
    func resumesFromTheServersOffset() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cutter = CuttingTransport(base: testTransport(), cut: 1_200_000)
        let (engine, file) = try setUp(server, directory, transport: cutter)
        let result = try await engine.upload(hash, from: file)
        #expect(result.size == Int64(contents.count))
        #expect(result.sent == Int64(contents.count) - 1_200_000, "the cut request reports no progress; the second sends the rest")
        #expect(cutter.uploads.map(\.offset) == [0, 1_200_000])
        #expect(cutter.uploads.map(\.bytes).reduce(0, +) == Int64(contents.count))
        #expect(storedBlob(server) == Data(contents))
        // Nothing is left of the unfinished upload.
        #expect(try FileManager.default.contentsOfDirectory(atPath: server.directory.file("blobs/tmp/partial").path).isEmpty)
    }

    @Test("held bytes that are not the file's fail the hash: the server drops them and the engine uploads again from the start")
    func startsOverAfterAHashMismatch() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let recorder = CuttingTransport(base: testTransport(), cut: nil)
        let (engine, file) = try setUp(server, directory, transport: recorder)
        // An earlier attempt's bytes, from a file that has changed since.
        var stale = Array(contents[..<1_000_000])
        stale[10] ^= 0xFF
        var request = HTTPRequest(
            method: .put, url: engine.remote.url(SyncRoutes.upload(library: "family", hash: hash)),
            headers: engine.authorized([SyncRoutes.uploadOffsetField: "0", SyncRoutes.uploadLengthField: "\(contents.count)"]))
        request.bodyFileOffset = 0
        try CuttingTransport.sendCut(request, body: stale, announcing: contents.count)

        let result = try await engine.upload(hash, from: file)
        #expect(recorder.uploads.map(\.offset) == [1_000_000, 0])
        #expect(result.sent == Int64(contents.count) * 2 - 1_000_000)
        #expect(storedBlob(server) == Data(contents))
    }

    @Test("a resource whose bytes do not hash to its name is refused with the server's reason")
    func aCorruptResourceFails() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (engine, file) = try setUp(server, directory, transport: testTransport())
        let wrongName = Hex.encode(SHA256.hash(Array("another resource".utf8)))
        let error = try await #require(throws: SyncError.self) { try await engine.upload(wrongName, from: file) }
        #expect("\(error)".contains("not to the blob's name \(wrongName)"), "\(error)")
        #expect(storedBlob(server) == nil)
    }
}

/// Answers 415 to binary pushes, as a server that reads JSON pushes only does.
final class JSONOnlyPushes: HTTPTransport, @unchecked Sendable {
    // Safe to share: `refused` is touched only under `lock`.
    private let lock = NSLock()
    private let base: any HTTPTransport
    private var refused = 0

    init(base: any HTTPTransport) { self.base = base }

    var refusals: Int { lock.withLock { refused } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        guard request.headers["Content-Type"] == EventBatch.contentType else { return try await base.send(request) }
        lock.withLock { refused += 1 }
        return SyncTransport.HTTPResponse(
            status: 415, headers: ["Content-Type": "application/json"],
            body: .bytes(Array(#"{"error":{"code":"unsupportedMediaType","message":"the body must be JSON"}}"#.utf8)))
    }
}

@Suite("Binary pushes from the sync engine")
struct BinaryPushEngineTests {
    @Test("a server that refuses binary pushes gets JSON ones, after one refusal")
    func fallsBackToJSON() async throws {
        let server = try TestServer()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let jsonOnly = JSONOnlyPushes(base: testTransport())
        let anna = try Device("anna-phone", server: server, directory: directory, clock: server.clock, seed: 1, transport: jsonOnly)
        try anna.library.performChangesAndWait { changes in
            for index in 0..<30 { _ = try changes.createAlbum(title: "Album \(index)") }
        }
        let report = try await anna.sync()
        #expect(report.pushedEvents == 30)
        #expect(jsonOnly.refusals == 1)
        let ben = try Device("ben-laptop", server: server, directory: directory, clock: server.clock, seed: 2)
        try await ben.sync()
        #expect(try ben.albumTitles().count == 30)
    }
}
