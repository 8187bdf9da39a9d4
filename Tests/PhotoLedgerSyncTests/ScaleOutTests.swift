import Foundation
import LedgerCore
import LedgerStore
import PhotoLedgerServer
import SyncProtocol
import SyncTransport
import Synchronization
import TestSupportKit
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// Sends each request to a server picked at random among those in service, as a load balancer
/// in front of stateless servers would: a device may reach a different server at every request.
final class RandomServerTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let state: Mutex<(ports: [UInt16], random: SeededRandomNumberGenerator)>

    init(base: any HTTPTransport, ports: [UInt16], seed: UInt64) {
        self.base = base
        state = Mutex((ports, SeededRandomNumberGenerator(seed: seed)))
    }

    /// Takes a server out of service (a health check would).
    func remove(_ port: UInt16) { state.withLock { $0.ports.removeAll { $0 == port } } }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        let port = state.withLock { state in state.ports.randomElement(using: &state.random)! }
        var request = request
        var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)!
        components.port = Int(port)
        request.url = components.url!
        return try await base.send(request)
    }
}

/// One `photoledger-server serve` process.
final class ServeProcess {
    let process = ChildProcess()
    let port: UInt16

    init(_ tool: URL, arguments: [String]) throws {
        process.executableURL = tool
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--threads", "2"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = UInt16(text.split(separator: ":").last ?? "") else { throw SyncError.invalidResponse("the server said '\(text)'") }
        self.port = port
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// A device of the scale-out test: a library and its engine.
struct ScaleOutDevice: Sendable {
    let library: PhotoLibrary
    let engine: SyncEngine

    func sync() async throws { try await engine.sync() }
    func dump() throws -> [String: [[SQLValue]]] { try Device.dump(library) }
}

@Suite("Several servers on one PostgreSQL")
struct ScaleOutTests {
    static let postgresURL = ProcessInfo.processInfo.environment["PHOTOLEDGER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// Runs a built tool to completion and returns its standard output.
    func run(_ tool: URL, _ arguments: [String]) throws -> String {
        let process = ChildProcess()
        process.executableURL = tool
        process.arguments = arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SyncError.invalidResponse("\(arguments.prefix(2)) failed: \(String(decoding: message, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A new database in the test PostgreSQL, by `psql`.
    func createDatabase(admin: String) throws -> String {
        let name = "pl_scale_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let psql = ChildProcess()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        psql.arguments = [admin, "-qc", "CREATE DATABASE \(name)"]
        try psql.run()
        psql.waitUntilExit()
        guard psql.terminationStatus == 0, var components = URLComponents(string: admin) else {
            throw SyncError.invalidResponse("psql failed")
        }
        components.path = "/" + name
        return components.string!
    }

    @Test(
        "thirty devices through three servers at random, one killed mid-push: all converge, every chain verifies, no sequence gap",
        .enabled(
            if: postgresURL != nil,
            "PostgreSQL tests skipped: set PHOTOLEDGER_TEST_POSTGRES_URL (Tools/test.sh starts a throwaway cluster and sets it)"))
    func threeServersThirtyDevices() async throws {
        let directory = try TemporaryDirectory()
        let tool = try builtExecutable("photoledger-server")
        let db = try createDatabase(admin: Self.postgresURL!)
        _ = try run(tool, ["admin", "create-library", "family", "--db", db])
        let names = (0..<30).map { DeviceID("device-\($0)") }
        let tokens = try names.map {
            try run(tool, ["admin", "issue-token", "--db", db, "--library", "family", "--device", $0.rawValue, "--scope", "readWrite"])
        }
        let blobs = directory.file("blobs").path
        let servers = try (0..<3).map { _ in try ServeProcess(tool, arguments: ["--db", db, "--blobs", blobs]) }
        let balancer = RandomServerTransport(base: CurlTransport(), ports: servers.map(\.port), seed: 7)
        let transport = RetryingTransport(
            wrapping: balancer, policy: RetryPolicy(maximumAttempts: 6), random: SeededRandomNumberGenerator(seed: 1), sleep: { _ in })
        var devices: [ScaleOutDevice] = []
        for (index, name) in names.enumerated() {
            var options = PhotoLibrary.Options()
            options.randomSeed = UInt64(index + 1)
            options.preauthorized = true
            let library = try PhotoLibrary(url: directory.file("\(name.rawValue).sqlite"), device: name, options: options)
            let remote = try SyncRemote(libraryURL: "http://127.0.0.1:\(servers[0].port)/v1/libraries/family", token: tokens[index])
            var engineOptions = SyncEngine.Options()
            engineOptions.pushBatchSize = 5  // several pushes per sync, so the kill lands in the middle of some
            devices.append(
                ScaleOutDevice(
                    library: library, engine: SyncEngine(library: library, remote: remote, transport: transport, options: engineOptions)))
        }

        /// Every device changes its library, then all sync at once (eight at a time).
        func round(_ number: Int, killing victim: ServeProcess? = nil) async throws {
            for (index, device) in devices.enumerated() {
                var random = SeededRandomNumberGenerator(seed: UInt64(number * 100 + index))
                try device.library.performChangesAndWait { _ = try $0.createAsset(from: photo(UInt64(number * 100 + index))) }
                for _ in 0..<6 { try? RandomChanges.apply(on: device.library, random: &random) }
            }
            let everyone = devices
            let target = victim.map { (pid: $0.process.processIdentifier, port: $0.port) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let target {
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(300))
                        kill(target.pid, SIGKILL)
                        balancer.remove(target.port)
                    }
                }
                for start in stride(from: 0, to: everyone.count, by: 8) {
                    group.addTask {
                        for device in everyone[start..<min(start + 8, everyone.count)] { try await device.sync() }
                    }
                }
                try await group.waitForAll()
            }
        }

        try await round(1)
        try await round(2, killing: servers[1])
        #expect(!servers[1].process.isRunning)
        try await round(3)
        for device in devices { try await device.sync() }  // everyone pulls the last pushes

        let reference = try devices[0].dump()
        for device in devices {
            #expect(try device.dump() == reference, "\(device.library.device) converged")
            #expect(try device.library.verifyChain().isIntact)
            #expect(try device.library.verifyServerChain().isIntact)
            #expect(try device.library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).count >= 90)
        }
        // The server log: one chain, sequences 1…N with no gap, whichever server is asked.
        let reply = try await CurlTransport().send(
            HTTPRequest(
                method: .get, url: URL(string: "http://127.0.0.1:\(servers[2].port)/v1/libraries/family/verify")!,
                headers: ["Authorization": "Bearer \(tokens[0])"]))
        let verification = try ChainVerification.decode(reply.body.bytes)
        let last = try devices[0].engine.cursor()
        #expect(verification == .intact(count: last))
    }
}
