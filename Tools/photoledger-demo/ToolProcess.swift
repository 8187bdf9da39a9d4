import Foundation

/// A failure of the demo: what went wrong, with the tool's own error output.
struct DemoError: Error, CustomStringConvertible {
    let description: String
}

/// Runs the built `photoledger` and `photoledger-server` executables, found beside the demo's own.
struct Tools {
    /// The directory of the built executables.
    let directory: URL

    /// The directory holding this executable (the build products directory).
    static func beside(_ executable: String = CommandLine.arguments[0]) -> Tools {
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? executable
        return Tools(directory: URL(fileURLWithPath: path).deletingLastPathComponent())
    }

    /// Checks that the tools were built.
    func check() throws {
        for tool in ["photoledger", "photoledger-server"]
        where !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent(tool).path) {
            throw DemoError(description: "\(tool) is not built in \(directory.path); run 'bash Tools/demo.sh', which builds it")
        }
    }

    /// Runs a tool to completion and returns its standard output; a non-zero exit is an error
    /// that carries the tool's standard error.
    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = directory.appendingPathComponent(tool)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PHOTOLEDGER_LIBRARY"] = nil
        process.environment = environment
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let errorReader = PipeReader(errors)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let errorText = errorReader.finish()
        guard process.terminationStatus == 0 else {
            throw DemoError(
                description: "'\(tool) \(arguments.joined(separator: " "))' exited with \(process.terminationStatus):\n\(errorText)")
        }
        return text
    }

    /// Runs `photoledger` for the library of `device`, with `--json`, and parses its output.
    func json(_ device: Device, _ arguments: [String]) throws -> Any {
        let text = try run("photoledger", arguments + ["--library", device.library.path, "--json"])
        return try JSONSerialization.jsonObject(with: Data(text.utf8))
    }
}

/// Drains a pipe on another thread so the process writing to it never blocks.
final class PipeReader: @unchecked Sendable {
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

    /// Waits for the end of the stream and returns everything read.
    func finish() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}

/// The sync server, running as a child process on a free loopback port.
final class ServerProcess {
    let process = Process()
    let url: String
    private let logReader: PipeReader

    /// Starts `photoledger-server serve` and waits until it listens.
    init(tools: Tools, folder: URL) throws {
        process.executableURL = tools.directory.appendingPathComponent("photoledger-server")
        process.arguments = [
            "serve", "--db", folder.appendingPathComponent("server.sqlite").path, "--blobs", folder.appendingPathComponent("blobs").path,
            "--listen", "127.0.0.1:0", "--threads", "2",
        ]
        let output = Pipe(), log = Pipe()
        process.standardOutput = output
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        logReader = PipeReader(log)
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("listening on ") else {
            process.waitUntilExit()
            throw DemoError(description: "the server did not start:\n\(logReader.finish())")
        }
        url = String(text.dropFirst("listening on ".count))
    }

    /// Stops the server with SIGTERM, waits for it, and returns its request log.
    @discardableResult
    func stop() -> String {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return logReader.finish()
    }
}

/// `photoledger sync --watch` of one device, running while the demo goes on: its output is read
/// line by line as it comes.
final class WatchProcess: @unchecked Sendable {
    // Safe to share: `text` is touched only while `lock` is held.
    private let process = Process()
    private let lock = NSLock()
    private var text = ""

    /// Starts watching `library`.
    init(tools: Tools, library: URL) throws {
        process.executableURL = tools.directory.appendingPathComponent("photoledger")
        process.arguments = ["sync", "--watch", "--library", library.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                lock.withLock { text += String(decoding: chunk, as: UTF8.self) }
            }
        }
    }

    /// Waits (up to a minute) for a line containing `needle` and returns it.
    func line(containing needle: String) throws -> String {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let found = lock.withLock { text.split(separator: "\n").first { $0.contains(needle) }.map(String.init) }
            if let found { return found }
            usleep(1_000)
        }
        throw DemoError(
            description: "'photoledger sync --watch' did not print '\(needle)' within a minute; it printed:\n\(lock.withLock { text })")
    }

    /// Interrupts it as Ctrl-C would and returns its exit status.
    func interrupt() -> Int32 {
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        return process.terminationStatus
    }
}
