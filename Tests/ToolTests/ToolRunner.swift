import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import TestSupportKit
import Testing

/// What a finished process left behind.
struct ToolResult {
    let status: Int32
    let output: String
    let errors: String

    /// Standard output parsed as JSON.
    func json() throws -> Any { try JSONSerialization.jsonObject(with: Data(output.utf8)) }
}

/// Runs the built tools as separate processes, the way people run them.
enum ToolRunner {
    /// The directory that holds the built executables: found by walking up from the test
    /// bundle's own executable until a directory contains `photoledger`.
    static let binDirectory: URL = {
        let start = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: start).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("photoledger").path) { return directory }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: "/nonexistent")
    }()

    /// Runs `tool` with `arguments` and waits for it.
    static func run(_ tool: String, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws -> ToolResult
    {
        try run(executable: binDirectory.appendingPathComponent(tool), arguments, environment: environment, directory: directory)
    }

    /// Runs the program at `executable` with `arguments` and waits for it.
    static func run(executable: URL, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws -> ToolResult
    {
        let process = ChildProcess()
        process.executableURL = executable
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged["PHOTOLEDGER_LIBRARY"] = nil
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let errorReader = PipeDrain(errors)
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ToolResult(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self), errors: errorReader.finish())
    }
}

/// Reads a pipe to its end on another thread, so a process never blocks on a full pipe.
final class PipeDrain: @unchecked Sendable {
    // Safe to share: `data` is written by the reading thread before `done` is signalled and read after waiting for it.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func finish() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}

/// A temporary folder with a library, driven through `photoledger`.
final class Workspace {
    let folder: URL
    let library: URL
    let device: String

    init(device: String = "test-device", initialize: Bool = true) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("photoledger-tool-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        library = folder.appendingPathComponent("library.sqlite")
        self.device = device
        if initialize {
            let result = try cli(["init", "--device", device])
            #expect(result.status == 0, "init failed: \(result.errors)")
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Runs `photoledger` on this workspace's library.
    @discardableResult
    func cli(_ arguments: [String], environment: [String: String] = [:]) throws -> ToolResult {
        try ToolRunner.run("photoledger", arguments + ["--library", library.path], environment: environment)
    }

    /// Runs `photoledger --json` and parses the output; fails the test on a non-zero exit.
    func json(_ arguments: [String]) throws -> Any {
        let result = try cli(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments) failed: \(result.errors)")
        return try result.json()
    }

    /// Writes a real JPEG (distinct per seed) and returns its path.
    @discardableResult
    func photo(_ name: String, seed: UInt64, in subfolder: String = "photos", date: Date? = nil) throws -> String {
        let directory = folder.appendingPathComponent(subfolder)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        let bytes = JPEGEncoder().encode(
            RGBImage.scene(width: 48, height: 32, seed: seed), creationDate: date, location: Location(latitude: 48.85, longitude: 2.35))
        try Data(bytes).write(to: url)
        return url.path
    }

    /// Writes a file with arbitrary bytes and returns its path.
    @discardableResult
    func file(_ name: String, _ bytes: [UInt8], in subfolder: String = "photos") throws -> String {
        let directory = folder.appendingPathComponent(subfolder)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    /// Imports files and returns the identifiers of the imported assets, in order.
    func importPhotos(_ paths: [String], album: String? = nil) throws -> [String] {
        let result = try json(["import"] + paths + (album.map { ["--album", $0] } ?? [])) as? [String: Any]
        return (result?["imported"] as? [[String: Any]] ?? []).compactMap { $0["localIdentifier"] as? String }
    }

    /// The albums as `albums --json` lists them.
    func albums() throws -> [[String: Any]] { try json(["albums"]) as? [[String: Any]] ?? [] }

    /// The assets as `assets --json` lists them, with extra arguments.
    func assets(_ arguments: [String] = []) throws -> [[String: Any]] { try json(["assets"] + arguments) as? [[String: Any]] ?? [] }
}
