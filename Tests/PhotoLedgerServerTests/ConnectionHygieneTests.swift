import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// Connection limits and request deadlines on loopback against the real server; the start-up
/// duties against the real `photoledger-server` process.
@Suite("Connection hygiene")
struct ConnectionHygieneTests {
    let eventsPath = SyncRoutes.events(library: "family")

    @Test("one address's slow-header flood gets its share of connections only; /v1/health answers others")
    func slowHeaderFlood() async throws {
        let fixture = try ServerFixture {
            $0.maximumConnectionsPerAddress = 8
            $0.maximumConnections = 32
            $0.requestHeadTimeout = .seconds(600)
            // Nor may the flood's connections reach their idle timeout while the test runs.
            $0.connectionTimeoutSeconds = 600
        }
        let flood = try (0..<40).map { _ in try RawConnection(port: fixture.server.port, from: "127.0.0.1") }
        for connection in flood { connection.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n") }
        try await waitUntil("the flood's connections beyond its share are closed") {
            flood.filter { $0.isClosedByServer(within: .milliseconds(1)) }.count >= 32
        }
        // Another client still gets answers, however long the flood goes on.
        for round in 0..<3 {
            for connection in flood { connection.send("X-Slow-\(round): 1\r\n") }
            #expect(try healthAnswers(fixture, from: "127.0.0.2"))
        }
        // The flood's own address is at its limit: a new connection from it is closed at once.
        let more = try RawConnection(port: fixture.server.port, from: "127.0.0.1")
        #expect(more.isClosedByServer(within: TestPatience.limit))
        // A flooding connection that finishes its head is served.
        let open = flood.filter { !$0.isClosedByServer(within: .milliseconds(1)) }
        #expect(open.count == 8)
        open[0].send("\r\n")
        #expect(try open[0].response().status == 200)
    }

    @Test("a request head that trickles in is closed at its deadline, bytes or not")
    func headDeadline() async throws {
        let fixture = try ServerFixture { $0.requestHeadTimeout = .seconds(1) }
        let slow = try RawConnection(port: fixture.server.port)
        slow.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        var lines = 0
        // A line every 200 ms; the bound (ten minutes of lines) only ends a broken server's run.
        while !slow.isClosedByServer(within: .milliseconds(200)) {
            lines += 1
            guard lines < 3000 else { break }
            slow.send("X-Slow-\(lines): 1\r\n")
        }
        #expect(lines < 3000, "the connection stayed open for ten minutes of header lines")
        func closed() -> LogRecord? { fixture.logger.records.first { $0.message == "closed a slow connection" } }
        try await waitUntil("the closure is logged") { closed() != nil }
        #expect(closed()?["waiting_for"] == "head")
        #expect(closed()?["address"] == "127.0.0.1")
        #expect(try healthAnswers(fixture, from: "127.0.0.1"))
    }

    @Test("a request body that trickles in is closed at its deadline, and nothing is stored")
    func bodyDeadline() async throws {
        let fixture = try ServerFixture {
            $0.requestBodyTimeout = .seconds(1)
            $0.minimumBodyBytesPerSecond = 1 << 30
        }
        var factory = EventFactory()
        let body = PushRequest(device: "anna-phone", events: factory.make(5)).encoded()
        let slow = try RawConnection(port: fixture.server.port)
        slow.send(
            rawRequest(
                "POST", eventsPath, token: fixture.tokens["anna-phone"],
                fields: ["Content-Type: application/json", "Content-Length: \(body.count)"]))
        var sent = 0
        // A byte every 200 ms; the bound only ends a broken server's run.
        while !slow.isClosedByServer(within: .milliseconds(200)), sent < min(body.count - 1, 3000) {
            slow.send([body[sent]])
            sent += 1
        }
        #expect(sent < min(body.count - 1, 3000), "the body trickled in for all but its last byte")
        try await waitUntil("the closure is logged") { fixture.logger.records.contains { $0.message == "closed a slow connection" } }
        #expect(fixture.logger.records.first { $0.message == "closed a slow connection" }?["waiting_for"] == "body")
        #expect(try await fixture.client().pullAll().isEmpty)
    }

    @Test("an upload cut short by a crash leaves no temporary file once the server process restarts")
    func temporaryUploadsAreCleaned() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path("server.sqlite")
        let blobs = directory.path("blobs")
        _ = try runTool(["admin", "create-library", "family", "--db", db])
        let token = try runTool([
            "admin", "issue-token", "--db", db, "--library", "family", "--device", "anna-phone", "--scope", "readWrite",
        ])
        .output.trimmingCharacters(in: .whitespacesAndNewlines)
        let temporary = blobs + "/tmp"
        let first = try ShellServerProcess(database: db, blobs: blobs, logDirectory: directory)
        let blob = [UInt8](repeating: 9, count: 100_000)
        let upload = try RawConnection(port: first.port)
        upload.send(
            Array(
                "PUT \(SyncRoutes.blob(library: "family", hash: Hex.encode(SHA256.hash(blob)))) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(blob.count)\r\n\r\n"
                    .utf8)
                + blob.prefix(50_000))
        // The server makes the file when the body starts (the folder also holds resumable
        // uploads'), and removes it when the body's deadline passes (about 26 s here) or the
        // connection idles out (60 s). So the crash comes from a thread of its own as soon as the
        // file is there: in a busy parallel run, this test's task may wait its turn longer than that.
        let uploads: @Sendable () -> [String] = {
            ((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []).filter { $0.hasPrefix("upload-") }
        }
        let server = first.process.processIdentifier
        let crashed = TestSignal()
        Thread.detachNewThread {
            let deadline = TestPatience.dateDeadline
            while uploads().count != 1, Date() < deadline { usleep(1000) }
            kill(server, SIGKILL)
            crashed.signal()
        }
        await crashed.wait()
        first.crash()
        #expect(uploads().count == 1, "the upload's temporary file did not appear")

        let second = try ShellServerProcess(database: db, blobs: blobs, logDirectory: directory)
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
        #expect(second.log.contains("msg=\"removed unfinished uploads\" files=1"))
        #expect(second.terminate() == 0)
    }

    @Test(
        "the server process raises its soft limit of open files at start, within the hard limit, and logs it",
        .enabled(if: OpenFileLimitProbe.hard >= 4096, "the hard limit of open files leaves nothing to raise"))
    func openFileLimitRaised() async throws {
        let directory = try TemporaryDirectory()
        let server = try ShellServerProcess(
            database: directory.path("server.sqlite"), blobs: directory.path("blobs"), logDirectory: directory, softOpenFileLimit: 1024)
        let line = server.log.split(separator: "\n").first { $0.contains("msg=\"raised the open-file limit\"") }
        #expect(line?.contains("from=1024") == true, "\(server.log)")
        #expect(server.log.contains("msg=listening"))
        #expect(server.terminate() == 0)
    }
}
@Suite("The server tool's connection options")
struct ServeLimitOptionTests {
    @Test("serve takes the waiting-pull and connection limits as counts; anything else is a usage error")
    func limitOptions() throws {
        let directory = try TemporaryDirectory()
        let base = ["serve", "--db", directory.path("server.sqlite"), "--blobs", directory.path("blobs"), "--listen", "127.0.0.1:0"]
        for (option, value) in [("--max-waiting-pulls", "many"), ("--max-connections", "0"), ("--max-connections-per-address", "-1")] {
            let run = try runTool(base + [option, value])
            #expect(run.status == 64, "\(option) \(value)")
            #expect(run.error.hasPrefix("Error: ") && run.error.contains(option), "\(run.error)")
        }
        let server = try ShellServerProcess(
            database: directory.path("server.sqlite"), blobs: directory.path("blobs"), logDirectory: directory,
            options: ["--max-waiting-pulls", "7", "--max-connections", "9", "--max-connections-per-address", "3"])
        #expect(server.log.contains("max_connections=16 max_waiting_pulls=7 max_connections_per_address=3"), "\(server.log)")
        #expect(server.terminate() == 0)
        let help = try runTool(["serve", "--help"])
        for option in ["--max-waiting-pulls", "--max-connections", "--max-connections-per-address"] {
            #expect(help.output.contains(option))
        }
    }
}

/// The hard limit of open files of the test process, which the server processes it starts inherit.
enum OpenFileLimitProbe {
    static var hard: UInt64 {
        var limits = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        return UInt64(limits.rlim_max)
    }
}
