import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import TestSupportKit
import Testing

/// The result of running the built tool.
struct ToolRun {
    let status: Int32
    let output: String
    let error: String
}

/// Runs the built `photoledger-server` with `arguments` and waits for it.
func runTool(_ arguments: [String], environment: [String: String] = [:]) throws -> ToolRun {
    let process = ChildProcess()
    process.executableURL = try builtExecutable("photoledger-server")
    process.arguments = arguments
    process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { new, _ in new }
    let output = Pipe(), error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolRun(
        status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
        error: String(decoding: errorData, as: UTF8.self))
}

/// `photoledger-server serve` running as a child process; its standard error is collected as
/// it comes, so that a test can wait for a line of the log.
final class ServerProcess {
    let process = ChildProcess()
    let port: UInt16
    private let errors: ProcessOutput

    /// Starts the server; `environment` is added to this process's own (for the S3 settings).
    init(database: String, blobs: String, options: [String] = [], environment: [String: String] = [:]) throws {
        process.executableURL = try builtExecutable("photoledger-server")
        process.arguments = ["serve", "--db", database, "--blobs", blobs, "--listen", "127.0.0.1:0", "--threads", "2"] + options
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given } }
        let output = Pipe(), errorPipe = Pipe()
        process.standardOutput = output
        process.standardError = errorPipe
        try process.run()
        errors = ProcessOutput(errorPipe.fileHandleForReading)
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
    var log: String { errors.text }

    /// Waits until the server has logged `needle`.
    func waitForLog(_ needle: String) async throws { try await errors.wait(for: needle) }

    /// Sends SIGTERM and returns the exit status and standard error.
    func terminate() -> (status: Int32, log: String) {
        kill(process.processIdentifier, SIGTERM)
        let log = errors.waitForEnd()
        process.waitUntilExit()
        return (process.terminationStatus, log)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

@Suite("The photoledger-server tool")
struct ToolTests {
    @Test("admin commands create libraries, issue, list and revoke tokens")
    func adminSuccess() throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("server.sqlite")
        let created = try runTool(["admin", "create-library", "family", "--db", db])
        #expect(created.status == 0)
        #expect(created.output == "created library family\n")
        let issued = try runTool([
            "admin", "issue-token", "--db", db, "--library", "family", "--device", "anna-phone", "--scope", "addOnly",
        ])
        #expect(issued.status == 0)
        let token = issued.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.hasPrefix("plt_"))
        let store = try SQLiteServerStore(path: db, readerCount: 1)
        #expect(try store.authenticate(tokenHash: DeviceToken.hash(token))?.scope == .addOnly)
        let listed = try runTool(["admin", "list-devices", "--library", "family"], environment: ["PHOTOLEDGER_SERVER_DB": db])
        #expect(listed.status == 0)
        #expect(listed.output.contains("anna-phone") && listed.output.contains("addOnly") && listed.output.contains("LAST_PULLED_SEQ"))
        let revoked = try runTool(["admin", "revoke-token", "--db", db, "--library", "family", "--device", "anna-phone"])
        #expect(revoked.status == 0)
        #expect(try store.authenticate(tokenHash: DeviceToken.hash(token)) == nil)
        let after = try runTool(["admin", "list-devices", "--db", db, "--library", "family"])
        #expect(after.output.split(separator: "\n").last?.hasSuffix("yes") == true)
    }

    @Test("usage errors exit 64 with the usage line; other failures exit 1 with the cause")
    func adminErrors() throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("server.sqlite")
        #expect(try runTool(["admin", "create-library", "family", "--db", db]).status == 0)
        let duplicate = try runTool(["admin", "create-library", "family", "--db", db])
        #expect(duplicate.status == 1)
        #expect(duplicate.error.hasPrefix("Error: library 'family' already exists"))
        let unknownLibrary = try runTool(["admin", "issue-token", "--db", db, "--library", "nope", "--device", "d", "--scope", "readOnly"])
        #expect(unknownLibrary.status == 1)
        #expect(unknownLibrary.error.contains("create-library"))
        let badName = try runTool(["admin", "create-library", "x';DROP", "--db", db])
        #expect(badName.status == 1)
        let usageCases: [[String]] = [
            [], ["frobnicate"], ["admin"], ["admin", "create-library", "--db", db], ["admin", "create-library", "x"],
            ["admin", "issue-token", "--db", db, "--library", "family", "--device", "d", "--scope", "everything"],
            ["admin", "issue-token", "--db", db, "--library", "family", "--device", "bad name", "--scope", "readOnly"],
            ["admin", "list-devices", "--db", db, "--library", "family", "--colour"],
            ["serve", "--db", db, "--blobs", db, "--listen", "nowhere"],
        ]
        for arguments in usageCases {
            let run = try runTool(arguments)
            #expect(run.status == 64, "\(arguments)")
            #expect(run.error.hasPrefix("Error: "), "\(arguments)")
            #expect(run.error.contains("Usage: photoledger-server"), "\(arguments)")
            #expect(run.output.isEmpty)
        }
        let unwritable = try runTool(["admin", "create-library", "family", "--db", "/proc/no/such/dir/x.sqlite"])
        #expect(unwritable.status == 1)
        #expect(unwritable.error.split(separator: "\n").count == 1)
    }

    @Test("help is laid out as OVERVIEW, USAGE, OPTIONS and SUBCOMMANDS")
    func help() throws {
        let run = try runTool(["--help"])
        #expect(run.status == 0)
        for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "SUBCOMMANDS:"] { #expect(run.output.contains(section)) }
        let serve = try runTool(["serve", "--help"])
        #expect(serve.status == 0 && serve.output.contains("--listen"))
    }

    @Test("admin takes --db before or after its subcommand")
    func adminDatabaseBeforeTheSubcommand() throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("server.sqlite")
        let created = try runTool(["admin", "--db", db, "create-library", "family"])
        #expect(created.status == 0, "\(created.error)")
        #expect(created.output == "created library family\n")
        let issued = try runTool(["admin", "--db=\(db)", "issue-token", "--library", "family", "--device", "anna", "--scope", "readOnly"])
        #expect(issued.status == 0 && issued.output.hasPrefix("plt_"))
        let listed = try runTool(["admin", "--db", db, "list-devices", "--library", "family"])
        #expect(listed.status == 0 && listed.output.contains("anna") && listed.output.contains("readOnly"))
        let missing = try runTool(["admin", "create-library", "other"])
        #expect(missing.status == 64 && missing.error.hasPrefix("Error: missing '--db <path>' (or set PHOTOLEDGER_SERVER_DB)\n"))
        #expect(missing.error.contains("Usage: photoledger-server admin create-library <name> [--db <path>]"))
    }

    @Test("--max-clock-skew is checked when the command line is read: at most a year")
    func maximumClockSkewIsLimited() throws {
        let directory = try TemporaryDirectory()
        let serve = ["serve", "--db", directory.path("server.sqlite"), "--blobs", directory.path("blobs"), "--listen", "127.0.0.1:0"]
        for value in ["31536001", "18446744073709551", "100000000000000000"] {
            let run = try runTool(serve + ["--max-clock-skew", value])
            #expect(run.status == 64, "\(value)")
            #expect(run.error.hasPrefix("Error: --max-clock-skew must be at most 31536000 seconds (a year), not \(value)\n"))
            #expect(run.error.contains("Usage: photoledger-server serve ") && run.output.isEmpty)
        }
        for value in ["18446744073709551616", "-1", "soon"] {
            let run = try runTool(serve + ["--max-clock-skew", value])
            #expect(run.status == 64 && run.error.hasPrefix("Error: invalid value '\(value)' for '--max-clock-skew <seconds>'"), "\(value)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("server.sqlite")), "nothing was started")
    }

    @Test("a server with the largest --max-clock-skew accepts pushes")
    func largestClockSkewServes() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("server.sqlite")
        _ = try runTool(["admin", "create-library", "family", "--db", db])
        let issued = try runTool([
            "admin", "issue-token", "--db", db, "--library", "family", "--device", "anna-phone", "--scope", "readWrite",
        ])
        let token = issued.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try ServerProcess(database: db, blobs: directory.path("blobs"), options: ["--max-clock-skew", "31536000"])
        let client = TestClient(port: server.port, token: token)
        var factory = EventFactory()
        #expect(try await client.pushResponse(factory.make(3)).lastDeviceSequence == 3)
        #expect(server.terminate().status == 0)
    }

    @Test("help of every command, generated from its declaration; --version")
    func generatedHelp() throws {
        let serve = try runTool(["serve", "--help"])
        #expect(serve.status == 0)
        let usage =
            "USAGE: photoledger-server serve [--db <path>] --blobs <dir> [--listen <host:port>] [--threads <n>] [--max-clock-skew <seconds>]"
        #expect(serve.output.contains(usage))
        #expect(serve.output.contains("(default: 127.0.0.1:8080)") && serve.output.contains("(default: 300)"))
        let viaHelp = try runTool(["help", "admin", "issue-token"])
        let viaFlag = try runTool(["admin", "issue-token", "--help"])
        #expect(viaHelp.status == 0 && viaHelp.output == viaFlag.output)
        let words = viaHelp.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("--scope <scope> What the device may do") && words.contains("(values: readWrite, addOnly, readOnly)"))
        let admin = try runTool(["admin", "--help"])
        #expect(admin.output.contains("SUBCOMMANDS:\n  create-library") && admin.output.contains("list-devices"))
        let version = try runTool(["--version"])
        #expect(version.status == 0 && version.output == photoLedgerServerVersion + "\n")
    }

    @Test("serve reports its port, serves, and exits 0 on SIGTERM after finishing a request in flight")
    func serveAndTerminate() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("server.sqlite")
        _ = try runTool(["admin", "create-library", "family", "--db", db])
        let token = try runTool([
            "admin", "issue-token", "--db", db, "--library", "family", "--device", "anna-phone", "--scope", "readWrite",
        ])
        .output.trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try ServerProcess(database: db, blobs: directory.path("blobs"))
        let client = TestClient(port: server.port, token: token)
        #expect(try await client.send("GET", SyncRoutes.health).status == 200)
        var factory = EventFactory()
        let events = factory.make(30)
        #expect(try await client.pushResponse(events).lastDeviceSequence == 30)

        // Start an upload, signal the server half-way, then finish the upload: it must complete.
        let blob = [UInt8](repeating: 7, count: 200_000)
        let hash = Hex.encode(SHA256.hash(blob))
        let head =
            "PUT \(SyncRoutes.blob(library: "family", hash: hash)) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Length: \(blob.count)\r\nConnection: close\r\n\r\n"
        let socket = try connectedSocket(port: server.port)
        defer { close(socket) }
        try sendAll(socket, Array(head.utf8) + blob[0..<100_000])
        // The signal comes once the upload is under way (its temporary file made), and the rest of
        // the body once the server has begun to shut down: events, not times.
        let temporary = directory.path("blobs") + "/tmp"
        try await waitUntil("the upload is under way") {
            ((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []).contains { $0.hasPrefix("upload-") }
        }
        kill(server.process.processIdentifier, SIGTERM)
        try await server.waitForLog("shutting down")
        try sendAll(socket, Array(blob[100_000...]))
        let response = receiveAll(socket)
        #expect(response.hasPrefix("HTTP/1.1 201"))
        let (status, log) = server.terminate()
        #expect(status == 0)
        #expect(log.contains("msg=request") && log.contains("status=201") && log.contains("msg=stopped"))
        #expect(!log.contains(token))

        // A new process on the same files has everything.
        let again = try ServerProcess(database: db, blobs: directory.path("blobs"))
        let reopened = TestClient(port: again.port, token: token)
        #expect(try await reopened.pullAll().map(\.event) == events)
        #expect(try await reopened.send("GET", SyncRoutes.blob(library: "family", hash: hash)).body == blob)
        #expect(again.terminate().status == 0)
    }

    @Test("serve fails with exit 1 and a hint when the port is taken")
    func portInUse() throws {
        let directory = try TemporaryDirectory()
        let first = try ServerProcess(database: directory.path("a.sqlite"), blobs: directory.path("blobs"))
        let run = try runTool([
            "serve", "--db", directory.path("b.sqlite"), "--blobs", directory.path("blobs"), "--listen", "127.0.0.1:\(first.port)",
        ])
        #expect(run.status == 1)
        #expect(run.error.contains("in use"))
        #expect(first.terminate().status == 0)
    }
}

func connectedSocket(port: UInt16) throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard socket >= 0, connected == 0 else { throw ServerStoreError("cannot connect to 127.0.0.1:\(port)") }
    var time = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    return socket
}

func sendAll(_ socket: Int32, _ bytes: [UInt8]) throws {
    var sent = 0
    while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard count > 0 else { throw ServerStoreError("send failed") }
        sent += count
    }
}

func receiveAll(_ socket: Int32) -> String {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        received += buffer[0..<count]
    }
    return String(decoding: received, as: UTF8.self)
}
