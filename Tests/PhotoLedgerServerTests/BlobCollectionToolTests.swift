import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// Where a server keeps its state, for the tests of `photoledger-server admin collect-blobs`: a
/// SQLite file with a blob directory, or PostgreSQL with S3-compatible storage (when
/// `Tools/test.sh` runs the test services).
struct ServerSite: CustomStringConvertible, Sendable {
    let description: String
    let make: @Sendable () throws -> OpenServerSite

    static let local = ServerSite(description: "SQLite and a blob directory") {
        let directory = try TemporaryDirectory()
        let (database, blobs) = (directory.path("server.sqlite"), directory.path("blobs"))
        return OpenServerSite(
            database: database, blobs: blobs, environment: [:], store: try SQLiteServerStore(path: database),
            blobStore: try BlobDirectory(root: blobs), directory: directory, keepAlive: [])
    }

    static let shared = ServerSite(description: "PostgreSQL and S3") {
        let database = try PostgresTestDatabase()
        let bucket = try S3TestBucket()
        return OpenServerSite(
            database: database.url, blobs: bucket.url, environment: bucket.serverEnvironment,
            store: try PostgresServerStore(url: database.url), blobStore: try S3BlobStore(configuration: bucket.configuration),
            directory: try TemporaryDirectory(), keepAlive: [database])
    }

    /// Every site this run can make: PostgreSQL and S3 too when the test services run.
    static var all: [ServerSite] { PostgresTestDatabase.adminURL != nil && S3TestBucket.available ? [local, shared] : [local] }
}

/// An open ``ServerSite``: what the server's commands are given, and the same opened here.
struct OpenServerSite {
    /// The commands' `--db`.
    let database: String
    /// The commands' `--blobs`.
    let blobs: String
    /// What the commands' environment needs besides (the S3 settings).
    let environment: [String: String]
    let store: any ServerStore
    let blobStore: any BlobStore
    /// A directory for the test's other files.
    let directory: TemporaryDirectory
    let keepAlive: [AnyObject]

    /// Whether the blob store is a directory (not S3).
    var isLocal: Bool { !blobs.hasPrefix("s3://") }

    /// Runs `photoledger-server admin collect-blobs` with the site's `--db` and `--blobs` (or
    /// those given), then `options`.
    func collect(_ options: [String], database: String? = nil, blobs: String? = nil, environment: [String: String] = [:]) throws
        -> ToolRun
    {
        try runTool(
            ["admin", "collect-blobs", "--db", database ?? self.database, "--blobs", blobs ?? self.blobs] + options,
            environment: self.environment.merging(environment) { _, given in given })
    }
}

/// The libraries `family` and `work` of a site, with blobs a collection tells apart, at the wall
/// clock's time (the command reads it): `kept` (a live asset's), `gone` (a purged asset's, two
/// days old), `late` (the purged asset's too, stored a minute ago), `free` (declared by no one)
/// and `work` (the work library's, declared for an object whose events never came). Every blob's
/// bytes are in the blob store.
struct CollectionScenario {
    let site: OpenServerSite
    let fixture: CollectionFixture
    /// ``inventory()`` once set up: every blob held and stored.
    private(set) var initial: [String: String] = [:]
    static let labels = ["free", "gone", "kept", "late", "work"]

    /// A blob's bytes.
    static func bytes(_ label: String) -> [UInt8] { Array("the blob \(label)".utf8) }
    /// A blob's name.
    static func name(_ label: String) -> String { Hex.encode(SHA256.hash(bytes(label))) }

    init(_ kind: ServerSite) throws {
        let site = try kind.make()
        self.site = site
        let store = site.store
        var fixture = try CollectionFixture(StoreBackend(description: "the site's") { StoreUnderTest(store: store, keepAlive: []) })
        let now = WallClock.milliseconds()
        let (old, recent) = (now - 2 * 86_400_000, now - 60_000)
        let (kept, purged) = (fixture.creation(), fixture.creation())
        _ = try fixture.contract.push([kept, purged], at: old)
        let work = fixture.library + 1
        for label in Self.labels {
            #expect(try upload(Self.bytes(label), as: Self.name(label), to: site.blobStore))
            try fixture.hold(
                [SHA256.hash(Self.bytes(label))], size: Int64(Self.bytes(label).count), at: label == "late" ? recent : old,
                library: label == "work" ? work : nil)
        }
        let hash = { (label: String) in SHA256.hash(Self.bytes(label)) }
        try fixture.declare([(kept.object, hash("kept")), (purged.object, hash("gone")), (purged.object, hash("late"))], at: old)
        try fixture.declare([(UUID(uuidString: "0193A5B2-7C00-7000-8000-00000000DEAD")!, hash("work"))], at: old, library: work)
        #expect(try fixture.purge(purged.object) == [.stored(serverSequence: 3)])
        self.fixture = fixture
        initial = try inventory()
    }

    /// Each blob's state: whether its library holds it, and whether the blob store has its bytes.
    func inventory() throws -> [String: String] {
        var states: [String: String] = [:]
        for label in Self.labels {
            let library = label == "work" ? fixture.library + 1 : fixture.library
            let held = try site.store.blobSize(libraryID: library, hash: SHA256.hash(Self.bytes(label))) != nil
            states[label] = "\(held ? "held" : "not held"), \(try site.blobStore.holds(Self.name(label)) ? "stored" : "deleted")"
        }
        return states
    }

    /// The command's line for a blob it collected (or would).
    static func line(_ label: String, dryRun: Bool = false) -> String {
        "\(dryRun ? "would collect" : "collected") \(label == "work" ? "work" : "family") \(name(label)) (\(bytes(label).count) bytes)\n"
    }
}

/// A loopback port where nothing listens: a socket bound to it without listening, so a connection
/// is refused until ``close()``.
struct RefusingPort {
    let socket: Int32
    let port: UInt16

    init() throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw ServerStoreError("cannot bind a loopback port: \(String(cString: strerror(errno)))") }
        socket = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    func close() { _ = Glibc.close(socket) }
}

@Suite("photoledger-server admin collect-blobs")
struct BlobCollectionToolTests {
    @Test(
        "a dry run lists without deleting; a run deletes only the unreferenced blobs past the grace period, in one library or all",
        arguments: ServerSite.all)
    func dryRunThenCollect(site: ServerSite) throws {
        let scenario = try CollectionScenario(site)
        let (site, untouched) = (scenario.site, scenario.initial)
        #expect(untouched.values.allSatisfy { $0 == "held, stored" })

        let dry = try site.collect(["--library", "family", "--grace-period", "3600", "--dry-run"])
        #expect(dry.status == 0, "\(dry.error)")
        #expect(dry.output == CollectionScenario.line("gone", dryRun: true) + "Would collect 1 blob (13 bytes).\n")
        #expect(try scenario.inventory() == untouched, "a dry run deletes nothing")

        let family = try site.collect(["--library", "family", "--grace-period", "3600"])
        #expect(family.status == 0 && family.error.isEmpty, "\(family.error)")
        #expect(family.output == CollectionScenario.line("gone") + "Collected 1 blob (13 bytes); deleted 1 from the blob store.\n")
        var expected = untouched
        expected["gone"] = "not held, deleted"
        #expect(try scenario.inventory() == expected, "the blob stored a minute ago and the work library's stay")

        let all = try site.collect(["--grace-period", "30"])
        #expect(all.status == 0, "\(all.error)")
        #expect(
            all.output == CollectionScenario.line("late") + CollectionScenario.line("work")
                + "Collected 2 blobs (26 bytes); deleted 2 from the blob store.\n")
        expected["late"] = "not held, deleted"
        expected["work"] = "not held, deleted"
        #expect(try scenario.inventory() == expected, "a live asset's blob and one no device declared stay")

        let again = try site.collect([])
        #expect(again.status == 0 && again.output == "Collected 0 blobs (0 bytes); deleted 0 from the blob store.\n")
        #expect(try scenario.inventory() == expected)
    }

    @Test(
        "an unknown library, a bad grace period, a missing database and an unreachable blob store are refused with what to do; nothing changes",
        arguments: ServerSite.all)
    func badArguments(site: ServerSite) throws {
        let scenario = try CollectionScenario(site)
        let site = scenario.site
        let place = site.isLocal ? "the server database \(site.database)" : "the PostgreSQL server database"

        for value in ["-1", "-0.5"] {
            let run = try site.collect(["--grace-period", value])
            #expect(run.status == 64 && run.output.isEmpty, "\(value)")
            #expect(
                run.error.hasPrefix("Error: --grace-period must be a number of seconds, 0 or more (86400 is a day), not \(value)\n"),
                "\(run.error)")
            #expect(run.error.contains("Usage: photoledger-server admin collect-blobs"), "\(value)")
        }
        for value in ["a-day", "nan", "inf"] {
            let run = try site.collect(["--grace-period", value])
            #expect(
                run.status == 64 && run.error.hasPrefix("Error: invalid value '\(value)' for '--grace-period <seconds>'"), "\(run.error)")
        }

        // Refusals with the whole message: what, where, what to do.
        let (missing, absent) = (site.directory.path("nowhere/blobs"), site.directory.path("absent.sqlite"))
        var refusals = [
            (
                try site.collect(["--library", "nowhere", "--grace-period", "0"]),
                "Error: \(place) has no library named 'nowhere'\n"
                    + "Hint: its libraries: family, work; give one of them, or no --library for every library; nothing was collected\n"
            ),
            (
                try site.collect(["--grace-period", "0"], blobs: missing),
                "Error: there is no blob directory at \(missing)\n"
                    + "Hint: give the server's --blobs, with the S3 settings it runs with for s3://; nothing was collected\n"
            ),
        ]
        if site.isLocal {
            refusals.append(
                (
                    try site.collect(["--grace-period", "0"], database: absent),
                    "Error: there is no server database at \(absent)\n"
                        + "Hint: give the server's --db (or set PHOTOLEDGER_SERVER_DB); nothing was collected\n"
                ))
        }
        for (run, error) in refusals { #expect(run.status == 1 && run.output.isEmpty && run.error == error, "\(run.error)") }
        #expect(!FileManager.default.fileExists(atPath: missing) && !FileManager.default.fileExists(atPath: absent), "nothing was made")

        let refusing = try RefusingPort()
        defer { refusing.close() }
        let unreachable = try site.collect(
            ["--grace-period", "0"], blobs: "s3://photoledger-unreachable/blobs",
            environment: [
                S3Configuration.endpointVariable: "http://127.0.0.1:\(refusing.port)", "AWS_ACCESS_KEY_ID": "key",
                "AWS_SECRET_ACCESS_KEY": "not-shown",
            ])
        #expect(unreachable.status == 1 && unreachable.output.isEmpty)
        #expect(unreachable.error.hasPrefix("Error: S3 blob store (http://127.0.0.1:\(refusing.port)/photoledger-unreachable): "))
        #expect(unreachable.error.contains("cannot reach the S3 service") && unreachable.error.contains("check PHOTOLEDGER_S3_ENDPOINT"))
        #expect(unreachable.error.hasSuffix("nothing was collected\n") && !unreachable.error.contains("not-shown"))

        #expect(try scenario.inventory() == scenario.initial)
        #expect(try site.store.retiredBlobs(limit: 10).isEmpty)
        // The same collection, given what it needs, collects.
        let run = try site.collect(["--grace-period", "30"])
        #expect(run.status == 0 && run.output.hasSuffix("Collected 3 blobs (39 bytes); deleted 3 from the blob store.\n"), "\(run.error)")
    }

    @Test("its help says what is checked first and gives the grace period's default once")
    func help() throws {
        let run = try runTool(["admin", "collect-blobs", "--help"])
        #expect(run.status == 0)
        let words = run.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("The database (a SQLite file must exist), the library and the blob store are checked first"))
        #expect(words.contains("less than this many seconds ago (86400: a day). (default: 86400.0)"), "\(words)")
    }

    @Test("a blob whose bytes cannot be deleted is reported, exits 1 and stays queued; the next run deletes it")
    func deletionFailure() throws {
        let scenario = try CollectionScenario(.local)
        let site = scenario.site
        // A directory where the blob's file is: unlink refuses it, as a file system that fails would.
        let path = site.blobs + "/" + CollectionScenario.name("gone").prefix(2) + "/" + CollectionScenario.name("gone")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path + "/in-the-way", withIntermediateDirectories: true)
        let failed = try site.collect(["--library", "family", "--grace-period", "3600"])
        #expect(failed.status == 1)
        #expect(failed.output == CollectionScenario.line("gone") + "Collected 1 blob (13 bytes); deleted 0 from the blob store.\n")
        #expect(
            failed.error.hasPrefix("could not delete blob \(CollectionScenario.name("gone")): cannot delete the blob file \(path): ")
                && failed.error.hasSuffix("; it stays queued for the next run\n"), "\(failed.error)")
        #expect(try site.store.retiredBlobs(limit: 10) == [SHA256.hash(CollectionScenario.bytes("gone"))])

        try FileManager.default.removeItem(atPath: path)
        let retried = try site.collect(["--library", "family", "--grace-period", "3600"])
        #expect(
            retried.status == 0 && retried.output == "Collected 0 blobs (0 bytes); deleted 1 from the blob store.\n", "\(retried.error)")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try site.store.retiredBlobs(limit: 10).isEmpty)
    }

    @Test(
        "end to end: a device declares, uploads and pushes through serve; the command, run beside it, collects the purged asset's blob",
        arguments: ServerSite.all)
    func throughTheServer(site: ServerSite) async throws {
        let site = try site.make()
        try site.store.createLibrary(named: "family", uuid: nil, at: 1)
        let token = try DeviceToken.generate()
        try site.store.registerToken(hash: DeviceToken.hash(token), library: "family", device: "anna-phone", scope: .readWrite, at: 1)
        let server = try ServerProcess(database: site.database, blobs: site.blobs, environment: site.environment)
        let client = TestClient(port: server.port, token: token)
        var anna = EventFactory()
        let (kept, purged) = (anna.make(type: "asset.created"), anna.make(type: "asset.created"))
        let photos = [Array("the kept photo".utf8), Array("the purged photo".utf8)]
        let names = photos.map { Hex.encode(SHA256.hash($0)) }
        // As a device syncs: the blobs of its events declared, uploaded, then the events pushed.
        let declaration = BlobReferencesRequest(references: [
            .init(object: kept.object, hashes: [names[0]]), .init(object: purged.object, hashes: [names[1]]),
        ])
        #expect(try await client.send("POST", SyncRoutes.blobReferences(library: "family"), body: declaration.encoded()).status == 200)
        for (photo, name) in zip(photos, names) {
            let path = SyncRoutes.blob(library: "family", hash: name)
            #expect(try await client.send("PUT", path, body: photo, contentType: nil).status == 201)
        }
        _ = try await client.pushResponse([kept, purged])
        var purge = anna.make(type: "asset.purged")
        purge.object = purged.object
        _ = try await client.pushResponse([purge])
        // With no grace period the cutoff is the command's time: wait until the clock has moved
        // past the uploads' milliseconds.
        let uploaded = WallClock.milliseconds()
        while WallClock.milliseconds() <= uploaded { usleep(1000) }

        let dry = try site.collect(["--grace-period", "0", "--dry-run"])
        #expect(dry.status == 0, "\(dry.error)")
        #expect(dry.output == "would collect family \(names[1]) (16 bytes)\nWould collect 1 blob (16 bytes).\n")
        #expect(try site.blobStore.holds(names[1]))
        let run = try site.collect(["--grace-period", "0"])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output == "collected family \(names[1]) (16 bytes)\nCollected 1 blob (16 bytes); deleted 1 from the blob store.\n")
        #expect(try !site.blobStore.holds(names[1]) && site.blobStore.holds(names[0]))
        #expect(try await client.send("GET", SyncRoutes.blob(library: "family", hash: names[1])).status == 404)
        let fetched = try await client.send("GET", SyncRoutes.blob(library: "family", hash: names[0]))
        #expect(fetched.status == 200 && fetched.body == photos[0])

        // The same bytes, uploaded again (another asset of the same photo), are stored anew.
        let path = SyncRoutes.blob(library: "family", hash: names[1])
        #expect(try await client.send("PUT", path, body: photos[1], contentType: nil).status == 201)
        #expect(try await client.send("GET", path).body == photos[1])
        #expect(server.terminate().status == 0)
    }
}
