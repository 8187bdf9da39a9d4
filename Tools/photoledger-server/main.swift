import CommandLineParsing
import Foundation
@preconcurrency import Glibc
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol

// photoledger-server: the PhotoLedger sync server and its administration commands.

PhotoledgerServer.main(describeFailure: PhotoledgerServer.failure(for:))

/// `photoledger-server`.
struct PhotoledgerServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "photoledger-server",
        abstract: "The PhotoLedger sync server: serves libraries to devices over HTTP, and manages libraries and device tokens.",
        discussion: """
            --db defaults to the \(ServerDatabase.environment) environment variable: a SQLite file (the embedded
            store), or a postgresql:// URL (the store several servers share).
            """,
        version: photoLedgerServerVersion,
        subcommands: [Serve.self, Admin.self])

    /// How a failure is reported: `Error: …` on one line, exit status 1.
    static func failure(for error: any Error) -> CommandFailure {
        switch error {
        case let error as SyncServer.StartError: CommandFailure(error.message)
        case let error as ServerStoreError: CommandFailure(error.message)
        case let error as DatabaseError: CommandFailure("cannot use the server database: \(error)")
        case let error as MigrationError: CommandFailure("\(error)")
        case let error as PostgresError: CommandFailure("\(error)")
        case let error as S3Error: CommandFailure("\(error)")
        default: CommandFailure("\(error); check the paths and permissions given")
        }
    }
}

/// `--db`: the server database, by default from the environment.
struct ServerDatabase: ParsableArguments {
    /// The environment variable naming the default database.
    static let environment = "PHOTOLEDGER_SERVER_DB"

    @Option(
        help: ArgumentHelp(
            "The server database: a SQLite file (created when missing, except by collect-blobs) or postgresql://USER@HOST:PORT/NAME (default: $\(environment)).",
            valueName: "path"))
    var db: String?

    func validate() throws {
        _ = try path()
    }

    /// `--db`, else the environment variable.
    func path() throws -> String {
        if let db, !db.isEmpty { return db }
        if let value = ProcessInfo.processInfo.environment[Self.environment], !value.isEmpty { return value }
        throw ValidationError("missing '--db <path>' (or set \(Self.environment))")
    }

    /// Whether the database is a PostgreSQL URL rather than a SQLite file.
    static func isPostgres(_ location: String) -> Bool {
        location.hasPrefix("postgresql://") || location.hasPrefix("postgres://")
    }

    /// Opens the store; `connections` bounds a PostgreSQL pool, `readers` the SQLite readers.
    func openStore(connections: Int = 2, readers: Int = 1) throws -> any ServerStore {
        let location = try path()
        guard Self.isPostgres(location) else { return try SQLiteServerStore(path: location, readerCount: readers) }
        var options = PostgresServerStore.Options()
        options.maximumConnections = connections
        return try PostgresServerStore(url: location, options: options)
    }
}

/// `--blobs`: a directory, or S3-compatible storage.
struct BlobLocation: ExpressibleByArgument, CustomStringConvertible {
    let text: String

    init?(argument: String) {
        guard !argument.isEmpty else { return nil }
        text = argument
    }

    static var valueExpectation: String { "a directory, or s3://BUCKET/PREFIX" }

    var description: String { text }

    /// The blob store: S3 (configured from the environment) for an s3:// URL, else a directory.
    func open() throws -> any BlobStore {
        guard text.hasPrefix("s3://") else { return try BlobDirectory(root: text) }
        return try S3BlobStore(configuration: S3Configuration.fromEnvironment(text))
    }

    /// The blob store, which must exist already: a directory that is missing is refused rather
    /// than made (a mistyped path is no empty store); S3 is checked as ``open()`` checks it.
    func openExisting() throws -> any BlobStore {
        if !text.hasPrefix("s3://") {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: text, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ServerStoreError("there is no blob directory at \(text)")
            }
        }
        return try open()
    }
}

// MARK: serve

/// `photoledger-server serve`.
struct Serve: ParsableCommand {
    /// The largest `--max-clock-skew`: a year, far beyond any clock in use, far below what the
    /// server's millisecond arithmetic holds.
    static let maximumClockSkewSeconds: UInt64 = 365 * 24 * 3600

    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve the sync protocol over HTTP until SIGTERM or SIGINT.",
        discussion: """
            Prints 'listening on http://HOST:PORT' on standard output once ready, and one log line per
            request on standard error. On SIGTERM or SIGINT it stops accepting connections, answers the
            waiting pulls, finishes the requests in flight, closes the database and exits 0. At start it
            raises the soft limit of open files (within the hard limit) to what the connection limits
            need, and says so in the log.
            """)

    @OptionGroup var database: ServerDatabase

    @Option(
        help: ArgumentHelp(
            "The blob directory (created when missing), or s3://BUCKET/PREFIX: S3-compatible storage configured by "
                + "PHOTOLEDGER_S3_ENDPOINT, PHOTOLEDGER_S3_ADDRESSING (path|virtual), AWS_REGION, AWS_ACCESS_KEY_ID, "
                + "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.",
            valueName: "dir"))
    var blobs: BlobLocation

    @Option(help: ArgumentHelp("The IPv4 address and port; port 0 picks a free port.", valueName: "host:port"))
    var listen = ListenAddress(argument: "127.0.0.1:8080")!

    @Option(help: ArgumentHelp("Threads serving connections, 1 to 256.", valueName: "n"))
    var threads = 4

    @Option(help: ArgumentHelp("Seconds an event's clock may be ahead of the server's, at most a year (31536000).", valueName: "seconds"))
    var maxClockSkew: UInt64 = 300

    @Option(help: ArgumentHelp("Pulls held open at once waiting for events, 0 to 1000000.", valueName: "n"))
    var maxWaitingPulls = 10_000

    @Option(help: ArgumentHelp("Connections open at once besides waiting pulls, 1 to 1000000.", valueName: "n"))
    var maxConnections = 1024

    @Option(help: ArgumentHelp("Connections open at once from one IP address, waiting pulls included; 0 for no limit.", valueName: "n"))
    var maxConnectionsPerAddress = 128

    func validate() throws {
        guard (1...256).contains(threads) else { throw ValidationError("--threads must be a number from 1 to 256, not \(threads)") }
        guard maxClockSkew <= Self.maximumClockSkewSeconds else {
            throw ValidationError("--max-clock-skew must be at most \(Self.maximumClockSkewSeconds) seconds (a year), not \(maxClockSkew)")
        }
        guard (0...1_000_000).contains(maxWaitingPulls) else {
            throw ValidationError("--max-waiting-pulls must be a number from 0 to 1000000, not \(maxWaitingPulls)")
        }
        guard (1...1_000_000).contains(maxConnections) else {
            throw ValidationError("--max-connections must be a number from 1 to 1000000, not \(maxConnections)")
        }
        guard (0...1_000_000).contains(maxConnectionsPerAddress) else {
            throw ValidationError("--max-connections-per-address must be a number from 0 to 1000000, not \(maxConnectionsPerAddress)")
        }
    }

    func run() throws {
        TerminationSignals.block()
        // A request holds one connection at a time: one per thread, and two for the rest.
        let store = try database.openStore(connections: threads + 2, readers: 4)
        var configuration = SyncServer.Configuration(store: store, blobDirectory: blobs.text)
        configuration.blobStore = try blobs.open()
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.threadCount = threads
        configuration.maximumClockSkewMilliseconds = maxClockSkew * 1000
        configuration.maximumWaitingPulls = maxWaitingPulls
        configuration.maximumConnections = maxConnections
        configuration.maximumConnectionsPerAddress = maxConnectionsPerAddress
        let server = try SyncServer(configuration: configuration)
        try server.start()
        print("listening on http://\(configuration.host):\(server.port)")
        fflush(nil)  // every stream: the address line goes out before the server waits
        let signal = TerminationSignals.wait()
        configuration.logger.log(
            LogRecord(level: .info, message: "shutting down", fields: [.init("signal", signal == SIGTERM ? "SIGTERM" : "SIGINT")]))
        server.stop()
    }
}

// MARK: admin

/// `photoledger-server admin …`. `--db` is accepted before or after the subcommand.
struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Manage libraries and device tokens.",
        subcommands: [CreateLibrary.self, IssueToken.self, RevokeToken.self, ListDevices.self, CollectBlobs.self])

    @OptionGroup var database: ServerDatabase

    /// `admin create-library NAME`.
    struct CreateLibrary: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create-library", abstract: "Create a library (names: 1-64 of A-Z a-z 0-9 . _ -).")

        @OptionGroup var database: ServerDatabase
        @Argument(help: "The library's name.") var name: String
        @Option(
            help: ArgumentHelp(
                "The library's identifier, to recreate a library on a new server for devices bound to it (default: a new one).",
                valueName: "uuid"))
        var id: String?

        func validate() throws {
            if let id, UUID(uuidString: id) == nil { throw ValidationError("--id: '\(id)' is not a UUID") }
        }

        func run() throws {
            let identifier = id.flatMap(UUID.init(uuidString:))
            try database.openStore().createLibrary(named: name, uuid: identifier, at: WallClock.milliseconds())
            print("created library \(name)")
        }
    }

    /// `admin issue-token`.
    struct IssueToken: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "issue-token",
            abstract: "Issue a device token (printed once).",
            discussion: """
                Issues a token for a device of a library and prints it once. Only its hash is stored:
                keep the printed token; it cannot be shown again.
                """)

        @OptionGroup var database: ServerDatabase
        @Option(help: ArgumentHelp("The library.", valueName: "name")) var library: String
        @Option(help: ArgumentHelp("The device (1-64 of A-Z a-z 0-9 . _ -).", valueName: "name")) var device: String
        @Option(help: "What the device may do: addOnly pushes creations and uploads blobs only, readOnly pulls only.")
        var scope: TokenScope

        func validate() throws {
            if let problem = DeviceID.problem(with: device) { throw ValidationError("--device: \(problem)") }
        }

        func run() throws {
            let store = try database.openStore()
            let token = try DeviceToken.generate()
            try store.registerToken(
                hash: DeviceToken.hash(token), library: library, device: DeviceID(device), scope: scope, at: WallClock.milliseconds())
            print(token)
        }
    }

    /// `admin revoke-token`.
    struct RevokeToken: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-token", abstract: "Revoke every token of a device; its requests get 401 from then on.")

        @OptionGroup var database: ServerDatabase
        @Option(help: ArgumentHelp("The library.", valueName: "name")) var library: String
        @Option(help: ArgumentHelp("The device.", valueName: "name")) var device: String

        func run() throws {
            let count = try database.openStore().revokeTokens(library: library, device: DeviceID(device), at: WallClock.milliseconds())
            print("revoked \(count) token\(count == 1 ? "" : "s") of \(device) in \(library)")
        }
    }

    /// `admin list-devices`.
    struct ListDevices: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list-devices", abstract: "List the devices of a library.",
            discussion: """
                Shows each device's scope, last device sequence, last pulled server sequence and whether
                its tokens are revoked. The compaction watermark is the lowest last pulled sequence among
                the devices that can still pull (not revoked, not addOnly); devices read it from
                GET /v1/libraries/<name>/watermark.
                """)

        @OptionGroup var database: ServerDatabase
        @Option(help: ArgumentHelp("The library.", valueName: "name")) var library: String

        func run() throws {
            let devices = try database.openStore().devices(library: library)
            let rows =
                [["DEVICE", "SCOPE", "LAST_DEVICE_SEQ", "LAST_PULLED_SEQ", "REVOKED"]]
                + devices.map {
                    [
                        $0.device.rawValue, $0.scope?.rawValue ?? "-", "\($0.lastDeviceSequence)", "\($0.lastPulledSequence)",
                        $0.revoked ? "yes" : "no",
                    ]
                }
            let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                let cells = row.enumerated().map {
                    $0 == row.count - 1 ? $1 : $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0)
                }
                print(cells.joined(separator: "  "))
            }
        }
    }
}

extension Admin {
    /// `admin collect-blobs`.
    struct CollectBlobs: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "collect-blobs", abstract: "Delete the blobs no live event or kept snapshot refers to any more.",
            discussion: """
                Devices declare which blobs the events about each asset refer to before they push them.
                A blob stays while an asset that refers to it is not purged (and its events were pushed,
                or the declaration is younger than the grace period: an upload whose events are on their
                way), or while a snapshot the library keeps names it; a blob no declaration names is kept.
                The others, stored before the grace period, are taken out of their library and deleted
                from the blob store once no library holds them. Safe to run while the server serves.
                The database (a SQLite file must exist), the library and the blob store are checked
                first: with a wrong one, nothing is collected.
                """)

        @OptionGroup var database: ServerDatabase
        @Option(
            help: ArgumentHelp(
                "Where the blobs are: the server's --blobs (a directory that exists, or s3://BUCKET/PREFIX with the server's S3 settings).",
                valueName: "location"))
        var blobs: BlobLocation
        @Option(help: ArgumentHelp("Only this library (default: every library).", valueName: "name")) var library: String?
        @Option(
            help: ArgumentHelp(
                "Keep blobs stored, and declarations made, less than this many seconds ago (86400: a day).",
                valueName: "seconds"))
        var gracePeriod: Double = BlobCollection.defaultGracePeriod
        @Flag(help: "List what would be collected; delete nothing.") var dryRun = false

        func validate() throws {
            guard gracePeriod >= 0, gracePeriod.isFinite else {
                throw ValidationError(
                    "--grace-period must be a number of seconds, 0 or more (86400 is a day), not \(String(format: "%g", gracePeriod))")
            }
        }

        func run() throws {
            let (store, blobStore) = try open()
            let report = try BlobCollection.collect(
                store: store, blobs: blobStore, library: library, gracePeriod: gracePeriod, now: WallClock.milliseconds(), dryRun: dryRun)
            for blob in report.collected {
                print("\(dryRun ? "would collect" : "collected") \(blob.library) \(Hex.encode(blob.hash)) (\(blob.size) bytes)")
            }
            let count = report.collected.count
            print(
                "\(dryRun ? "Would collect" : "Collected") \(count) blob\(count == 1 ? "" : "s") (\(report.collectedBytes) bytes)"
                    + (dryRun ? "." : "; deleted \(report.deleted) from the blob store."))
            for failure in report.failures {
                FileHandle.standardError.write(
                    Data("could not delete blob \(failure.hash): \(failure.reason); it stays queued for the next run\n".utf8))
            }
            if !report.failures.isEmpty { throw ExitCode(1) }
        }

        /// The server database, the library and the blob store, each checked before anything is
        /// collected: a wrong argument changes nothing.
        func open() throws -> (any ServerStore, any BlobStore) {
            let location = try database.path()
            // Not the URL of a PostgreSQL database: it may hold a password.
            let place = ServerDatabase.isPostgres(location) ? "the PostgreSQL server database" : "the server database \(location)"
            if !ServerDatabase.isPostgres(location), !FileManager.default.fileExists(atPath: location) {
                throw CommandFailure(
                    "there is no server database at \(location)",
                    hint: "give the server's --db (or set \(ServerDatabase.environment)); nothing was collected")
            }
            let store = try database.openStore()
            if let library {
                let names = try store.libraryNames().sorted()
                guard names.contains(library) else {
                    throw CommandFailure(
                        "\(place) has no library named '\(library)'",
                        hint: (names.isEmpty ? "it has no library" : "its libraries: \(names.joined(separator: ", "))")
                            + "; give one of them, or no --library for every library; nothing was collected")
                }
            }
            do {
                return (store, try blobs.openExisting())
            } catch {
                throw CommandFailure(
                    PhotoledgerServer.failure(for: error).message,
                    hint: "give the server's --blobs, with the S3 settings it runs with for s3://; nothing was collected")
            }
        }
    }
}

extension TokenScope: ExpressibleByArgument {}
