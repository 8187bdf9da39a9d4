import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
@_exported import PhotoLedgerTestSupport
import SyncProtocol
import SyncTransport
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// An in-process sync server on loopback with an embedded store.
final class TestServer {
    let directory: TemporaryDirectory
    let store: SQLiteServerStore
    let clock: TestClock
    private(set) var server: SyncServer
    let port: UInt16

    init(clock: TestClock = TestClock(), libraries: [String] = ["family"]) throws {
        directory = try TemporaryDirectory()
        self.clock = clock
        store = try SQLiteServerStore(path: directory.file("server.sqlite").path)
        for name in libraries { try store.createLibrary(named: name, uuid: nil, at: clock.read()) }
        server = try Self.start(store: store, blobs: directory.file("blobs").path, clock: clock, port: 0)
        port = server.port
    }

    static func start(store: SQLiteServerStore, blobs: String, clock: TestClock, port: UInt16) throws -> SyncServer {
        var configuration = SyncServer.Configuration(store: store, blobDirectory: blobs)
        configuration.clock = { clock.read() }
        configuration.logger = DiscardingLogger()
        configuration.port = port
        configuration.threadCount = 2
        let server = try SyncServer(configuration: configuration)
        try server.start()
        return server
    }

    /// Stops the server and starts it again on the same store and port.
    func restart() throws {
        server.stop()
        server = try Self.start(store: store, blobs: directory.file("blobs").path, clock: clock, port: port)
    }

    func token(device: DeviceID, library: String = "family", scope: TokenScope = .readWrite) throws -> String {
        let token = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(token), library: library, device: device, scope: scope, at: clock.read())
        return token
    }

    func remote(device: DeviceID, library: String = "family", scope: TokenScope = .readWrite) throws -> SyncRemote {
        try SyncRemote(
            libraryURL: "http://127.0.0.1:\(port)/v1/libraries/\(library)", token: token(device: device, library: library, scope: scope))
    }

    deinit { server.stop() }
}

/// The start of most sync tests: an in-process server, a temporary directory for the devices'
/// libraries, and the clock the devices read.
struct SyncWorld {
    let server: TestServer
    let directory: TemporaryDirectory
    /// The devices' clock: the server's own, or a clock of the devices' starting at the same time.
    let clock: TestClock

    init(onServerClock: Bool = false) throws {
        server = try TestServer()
        directory = try TemporaryDirectory()
        clock = onServerClock ? server.clock : TestClock()
    }

    /// A device of the server's library "family", its library in the directory, encryption
    /// enabled first when `encrypted`.
    func device(_ name: DeviceID, seed: UInt64, scope: TokenScope = .readWrite, encrypted: Bool = false) throws -> Device {
        let device = try Device(name, server: server, directory: directory, clock: clock, seed: seed, scope: scope)
        if encrypted { _ = try device.library.enableEncryption() }
        return device
    }
}

/// A transport that retries at once (no sleeping), for tests.
func testTransport(_ base: any HTTPTransport = CurlTransport()) -> any HTTPTransport {
    RetryingTransport(
        wrapping: base, policy: RetryPolicy(maximumAttempts: 3), random: SeededRandomNumberGenerator(seed: 1), sleep: { _ in })
}

/// A device: a library and its sync engine.
struct Device {
    let library: PhotoLibrary
    let engine: SyncEngine

    init(
        _ name: DeviceID, server: TestServer, directory: TemporaryDirectory, clock: TestClock, seed: UInt64,
        transport: (any HTTPTransport)? = nil, scope: TokenScope = .readWrite
    ) throws {
        var options = PhotoLibrary.Options()
        options.clock = { clock.read() }
        options.randomSeed = seed
        options.preauthorized = true
        library = try PhotoLibrary(url: directory.file("\(name.rawValue).sqlite"), device: name, options: options)
        engine = SyncEngine(
            library: library, remote: try server.remote(device: name, scope: scope), transport: transport ?? testTransport())
    }

    @discardableResult
    func sync() async throws -> SyncReport { try await engine.sync() }

    func albumTitles() throws -> [String] { try library.fetchAssetCollections(with: .album).map(\.title) }

    func members(_ album: String) throws -> [String] {
        try library.fetchAssets(in: library.fetchAssetCollections(withLocalIdentifiers: [album])[0]).map(\.localIdentifier)
    }

    func asset(_ id: String) throws -> Asset? {
        try library.fetchAssets(withLocalIdentifiers: [id], options: FetchOptions(includeHiddenAssets: true)).first
    }

    /// Every projection row, for convergence checks.
    func dump() throws -> [String: [[SQLValue]]] { try Self.dump(library) }

    /// The local identifiers of every asset, album and folder created in `library`.
    static func createdObjects(_ library: PhotoLibrary) throws -> [String] {
        try library.readDatabase { db in
            try db.rows(
                """
                SELECT asset_id, '\(ObjectKind.asset.rawValue)' FROM assets WHERE created = 1
                UNION ALL SELECT album_id, '\(ObjectKind.album.rawValue)' FROM albums WHERE created = 1
                UNION ALL SELECT list_id, '\(ObjectKind.collectionList.rawValue)' FROM collection_lists WHERE created = 1
                """
            ) { LocalIdentifier(uuid: UUID(bytes: $0.blob(0))!, kind: ObjectKind(rawValue: $0.text(1))!).description }
        }
    }

    /// Every projection row of `library`.
    static func dump(_ library: PhotoLibrary) throws -> [String: [[SQLValue]]] {
        try library.readDatabase { db in
            var dump: [String: [[SQLValue]]] = [:]
            for table in ["assets", "asset_resources", "referenced_resources", "albums", "album_members"] {
                dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
            }
            return dump
        }
    }
}

/// A small real photo.
func photo(_ seed: UInt64) -> Data { samplePhoto(seed) }
