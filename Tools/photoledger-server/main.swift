@preconcurrency import Glibc
import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer

// photoledger-server: the PhotoLedger sync server and its administration commands.

let toolUsage = "photoledger-server <subcommand> [options]"

let overview = """
    OVERVIEW: The PhotoLedger sync server: serves libraries to devices over HTTP, and manages
    libraries and device tokens.

    USAGE: \(toolUsage)

    OPTIONS:
      -h, --help              Show help information.
      --version               Show the version.

    SUBCOMMANDS:
      serve                   Serve the sync protocol over HTTP.
      admin create-library    Create a library.
      admin issue-token       Issue a device token (printed once).
      admin revoke-token      Revoke every token of a device.
      admin list-devices      List the devices of a library.

      See 'photoledger-server <subcommand> --help' for details.
      --db defaults to the PHOTOLEDGER_SERVER_DB environment variable.
    """

/// A command line that does not follow the usage: exit code 64.
struct UsageError: Error {
    let message: String
    let usage: String
}

/// A command's option specification and parsed values.
struct Command {
    let usage: String
    let help: String
    let valueOptions: Set<String>
    let positionalNames: [String]
    var values: [String: String] = [:]
    var positionals: [String] = []

    init(usage: String, help: String, options: [String], positionals: [String] = []) {
        self.usage = usage
        self.help = help
        self.valueOptions = Set(options)
        self.positionalNames = positionals
    }

    mutating func parse(_ arguments: ArraySlice<String>) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "-h" || argument == "--help" {
                print(help)
                exit(0)
            }
            if argument.hasPrefix("--") {
                var name = String(argument.dropFirst(2))
                var value: String?
                if let equals = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                guard valueOptions.contains(name) else { throw UsageError(message: "unknown option '--\(name)'", usage: usage) }
                guard let resolved = value ?? iterator.next() else {
                    throw UsageError(message: "option '--\(name)' needs a value", usage: usage)
                }
                values[name] = resolved
            } else if argument.hasPrefix("-"), argument.count > 1 {
                throw UsageError(message: "unknown option '\(argument)'", usage: usage)
            } else {
                guard positionals.count < positionalNames.count else {
                    throw UsageError(message: "unexpected argument '\(argument)'", usage: usage)
                }
                positionals.append(argument)
            }
        }
        if positionals.count < positionalNames.count {
            throw UsageError(message: "missing <\(positionalNames[positionals.count])>", usage: usage)
        }
    }

    func required(_ name: String, environment: String? = nil) throws -> String {
        if let value = values[name], !value.isEmpty { return value }
        if let environment, let value = ProcessInfo.processInfo.environment[environment], !value.isEmpty { return value }
        throw UsageError(message: "missing '--\(name) <\(name)>'", usage: usage)
    }
}

let databaseEnvironment = "PHOTOLEDGER_SERVER_DB"

func openStore(_ command: Command) throws -> SQLiteServerStore {
    try SQLiteServerStore(path: try command.required("db", environment: databaseEnvironment), readerCount: 1)
}

// MARK: serve

func serve(_ arguments: ArraySlice<String>) throws {
    var command = Command(
        usage: "photoledger-server serve --db <path> --blobs <dir> --listen <host:port> [--threads <n>]",
        help: """
            OVERVIEW: Serve the sync protocol over HTTP until SIGTERM or SIGINT.

            Prints 'listening on http://HOST:PORT' on standard output once ready, and one log line per
            request on standard error. On SIGTERM or SIGINT it stops accepting connections, answers the
            waiting pulls, finishes the requests in flight, closes the database and exits 0. At start it
            raises the soft limit of open files (within the hard limit) to what the connection limits
            need, and says so in the log.

            USAGE: photoledger-server serve --db <path> --blobs <dir> --listen <host:port> [--threads <n>]

            OPTIONS:
              --db <path>              The server database (created when missing).
              --blobs <dir>            The blob directory (created when missing).
              --listen <host:port>     The IPv4 address and port; port 0 picks a free port. Default 127.0.0.1:8080.
              --threads <n>            Threads serving connections. Default 4.
              --max-clock-skew <s>     Seconds an event's clock may be ahead of the server's. Default 300.
              --max-waiting-pulls <n>  Pulls held open at once waiting for events. Default 10000.
              --max-connections <n>    Connections open at once besides waiting pulls. Default 1024.
              --max-connections-per-address <n>
                                       Connections open at once from one IP address, waiting pulls
                                       included; 0 for no limit. Default 128.
              -h, --help               Show help information.
            """,
        options: ["db", "blobs", "listen", "threads", "max-clock-skew", "max-waiting-pulls", "max-connections", "max-connections-per-address"])
    try command.parse(arguments)
    let blobs = try command.required("blobs")
    let listen = command.values["listen"] ?? "127.0.0.1:8080"
    guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
        throw UsageError(message: "--listen must be <host>:<port>, for example 127.0.0.1:8080", usage: command.usage)
    }
    let threads = try command.values["threads"].map { text in
        guard let value = Int(text), (1...256).contains(value) else {
            throw UsageError(message: "--threads must be a number from 1 to 256", usage: command.usage)
        }
        return value
    } ?? 4
    let skew: UInt64 = try command.values["max-clock-skew"].map { text -> UInt64 in
        guard let value = UInt64(text) else { throw UsageError(message: "--max-clock-skew must be a number of seconds", usage: command.usage) }
        return value
    } ?? 300
    func count(_ name: String, in range: ClosedRange<Int>, default value: Int) throws -> Int {
        guard let text = command.values[name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(message: "--\(name) must be a number from \(range.lowerBound) to \(range.upperBound)", usage: command.usage)
        }
        return number
    }
    let waitingPulls = try count("max-waiting-pulls", in: 0...1_000_000, default: 10_000)
    let connections = try count("max-connections", in: 1...1_000_000, default: 1024)
    let perAddress = try count("max-connections-per-address", in: 0...1_000_000, default: 128)
    let path = try command.required("db", environment: databaseEnvironment)

    TerminationSignals.block()
    var configuration = SyncServer.Configuration(store: try SQLiteServerStore(path: path), blobDirectory: blobs)
    configuration.host = String(listen[..<colon])
    configuration.port = port
    configuration.threadCount = threads
    configuration.maximumClockSkewMilliseconds = skew * 1000
    configuration.maximumWaitingPulls = waitingPulls
    configuration.maximumConnections = connections
    configuration.maximumConnectionsPerAddress = perAddress
    let server = try SyncServer(configuration: configuration)
    try server.start()
    print("listening on http://\(configuration.host):\(server.port)")
    fflush(stdout)
    let signal = TerminationSignals.wait()
    configuration.logger.log(LogRecord(level: .info, message: "shutting down", fields: [.init("signal", signal == SIGTERM ? "SIGTERM" : "SIGINT")]))
    server.stop()
}

// MARK: admin

func admin(_ arguments: ArraySlice<String>) throws {
    let adminUsage = "photoledger-server admin <create-library|issue-token|revoke-token|list-devices> [options]"
    guard let subcommand = arguments.first else {
        throw UsageError(message: "missing admin subcommand", usage: adminUsage)
    }
    let rest = arguments.dropFirst()
    let now = WallClock.milliseconds()
    switch subcommand {
    case "create-library":
        var command = Command(
            usage: "photoledger-server admin create-library <name> --db <path>",
            help: """
                OVERVIEW: Create a library (names: 1-64 of A-Z a-z 0-9 . _ -).

                USAGE: photoledger-server admin create-library <name> --db <path>

                OPTIONS:
                  --db <path>     The server database (created when missing).
                  -h, --help      Show help information.
                """,
            options: ["db"], positionals: ["name"])
        try command.parse(rest)
        try openStore(command).createLibrary(named: command.positionals[0], at: now)
        print("created library \(command.positionals[0])")
    case "issue-token":
        var command = Command(
            usage: "photoledger-server admin issue-token --db <path> --library <name> --device <name> --scope <readWrite|addOnly|readOnly>",
            help: """
                OVERVIEW: Issue a token for a device of a library and print it once. Only its hash is stored:
                keep the printed token; it cannot be shown again.

                USAGE: photoledger-server admin issue-token --db <path> --library <name> --device <name> --scope <scope>

                OPTIONS:
                  --db <path>         The server database.
                  --library <name>    The library.
                  --device <name>     The device (1-64 of A-Z a-z 0-9 . _ -).
                  --scope <scope>     readWrite, addOnly (push creations and upload blobs only) or readOnly.
                  -h, --help          Show help information.
                """,
            options: ["db", "library", "device", "scope"])
        try command.parse(rest)
        let library = try command.required("library"), device = try command.required("device")
        guard let scope = TokenScope(rawValue: try command.required("scope")) else {
            throw UsageError(message: "--scope must be readWrite, addOnly or readOnly", usage: command.usage)
        }
        if let problem = DeviceID.problem(with: device) { throw UsageError(message: "--device: \(problem)", usage: command.usage) }
        let store = try openStore(command)
        let token = try DeviceToken.generate()
        try store.registerToken(hash: DeviceToken.hash(token), library: library, device: DeviceID(device), scope: scope, at: now)
        print(token)
    case "revoke-token":
        var command = Command(
            usage: "photoledger-server admin revoke-token --db <path> --library <name> --device <name>",
            help: """
                OVERVIEW: Revoke every token of a device; its requests get 401 from then on.

                USAGE: photoledger-server admin revoke-token --db <path> --library <name> --device <name>

                OPTIONS:
                  --db <path>         The server database.
                  --library <name>    The library.
                  --device <name>     The device.
                  -h, --help          Show help information.
                """,
            options: ["db", "library", "device"])
        try command.parse(rest)
        let library = try command.required("library"), device = try command.required("device")
        let count = try openStore(command).revokeTokens(library: library, device: DeviceID(device), at: now)
        print("revoked \(count) token\(count == 1 ? "" : "s") of \(device) in \(library)")
    case "list-devices":
        var command = Command(
            usage: "photoledger-server admin list-devices --db <path> --library <name>",
            help: """
                OVERVIEW: List the devices of a library: scope, last device sequence, last pulled server
                sequence and whether the device's tokens are revoked. The compaction watermark is the
                lowest last pulled sequence among the devices that can still pull (not revoked, not
                addOnly); devices read it from GET /v1/libraries/<name>/watermark.

                USAGE: photoledger-server admin list-devices --db <path> --library <name>

                OPTIONS:
                  --db <path>         The server database.
                  --library <name>    The library.
                  -h, --help          Show help information.
                """,
            options: ["db", "library"])
        try command.parse(rest)
        let devices = try openStore(command).devices(library: try command.required("library"))
        let rows = [["DEVICE", "SCOPE", "LAST_DEVICE_SEQ", "LAST_PULLED_SEQ", "REVOKED"]]
            + devices.map {
                [$0.device.rawValue, $0.scope?.rawValue ?? "-", "\($0.lastDeviceSequence)", "\($0.lastPulledSequence)", $0.revoked ? "yes" : "no"]
            }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.enumerated().map { $0 == row.count - 1 ? $1 : $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
            print(cells.joined(separator: "  "))
        }
    case "-h", "--help":
        print(overview)
    default:
        throw UsageError(message: "unknown admin subcommand '\(subcommand)'", usage: adminUsage)
    }
}

// MARK: main

func fail(_ text: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data(text.utf8))
    exit(code)
}

let arguments = CommandLine.arguments.dropFirst()
do {
    switch arguments.first {
    case nil: throw UsageError(message: "missing subcommand", usage: toolUsage)
    case "-h", "--help", "help": print(overview)
    case "--version": print(photoLedgerServerVersion)
    case "serve": try serve(arguments.dropFirst())
    case "admin": try admin(arguments.dropFirst())
    case let other?: throw UsageError(message: "unknown subcommand '\(other)'", usage: toolUsage)
    }
} catch let error as UsageError {
    fail("Error: \(error.message)\nUsage: \(error.usage)\n  See 'photoledger-server --help'.\n", code: 64)
} catch let error as SyncServer.StartError {
    fail("Error: \(error.message)\n", code: 1)
} catch let error as ServerStoreError {
    fail("Error: \(error.message)\n", code: 1)
} catch let error as DatabaseError {
    fail("Error: cannot use the server database: \(error)\n", code: 1)
} catch let error as MigrationError {
    fail("Error: \(error)\n", code: 1)
} catch {
    fail("Error: \(error); check the paths and permissions given\n", code: 1)
}
exit(0)
