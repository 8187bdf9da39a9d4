import CChildProcess
import Foundation

/// A child process the tests start: the part of Foundation's `Process` they use, started with
/// `posix_spawn` and every descriptor but the three standard ones closed in the child.
///
/// Not Foundation's `Process`: on Linux its `run()` reads each entry of `/proc/self/fd` as a
/// whole `dirent` (256 name bytes) whatever the entry's length, past the end of the directory
/// buffer once the test process holds about 1,350 descriptors, and crashes when that buffer ends
/// a mapping (swift-corelibs-foundation pull request 5472). A test process with many servers,
/// databases and connections open at once gets there.
public final class ChildProcess: @unchecked Sendable {
    // Safe to share: the configuration is set before `run()` on one thread; `pid` is written
    // once by `run()` before any other thread is told of the process; `state` is a mutex and
    // `exited` a condition around it.
    /// The program to run.
    public var executableURL: URL?
    /// Its arguments (after the program's path).
    public var arguments: [String]?
    /// Its environment; nil for this process's.
    public var environment: [String: String]?
    /// Its working directory; nil for this process's.
    public var currentDirectoryURL: URL?
    /// Its standard input: a `Pipe` (its reading end), a `FileHandle`, or nil for this process's own.
    public var standardInput: Any?
    /// Its standard output: a `Pipe` (its writing end), a `FileHandle`, or nil for this process's own.
    public var standardOutput: Any?
    /// Its standard error, as `standardOutput`.
    public var standardError: Any?

    private var pid: pid_t = 0
    private let exited = NSCondition()
    private var status: Int32?

    /// A process to configure, then start with ``run()``.
    public init() {}

    /// The child's process identifier once it has started, 0 before.
    public var processIdentifier: Int32 { pid }

    /// Whether the child has started and not yet exited.
    public var isRunning: Bool { exited.withLock { pid != 0 && status == nil } }

    /// Starts the child; throws when it cannot be started (a missing program, say).
    public func run() throws {
        guard let path = executableURL?.path else { throw ChildProcessError("no program to run") }
        let argv = ([path] + (arguments ?? [])).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var child: pid_t = 0
        let result = envp.withOptionalPointer { environment in
            argv.withUnsafeBufferPointer { arguments in
                plt_spawn(
                    &child, path, arguments.baseAddress, environment, currentDirectoryURL?.path,
                    Self.descriptor(standardInput, reading: true),
                    Self.descriptor(standardOutput, reading: false), Self.descriptor(standardError, reading: false))
            }
        }
        guard result == 0 else { throw ChildProcessError("cannot start \(path): \(String(cString: strerror(result)))") }
        pid = child
        let started = child
        // The child holds its ends of the pipes now; this process keeps only the other ends, so
        // that reading them ends when the child does.
        (standardInput as? Pipe).map { try? $0.fileHandleForReading.close() }
        (standardOutput as? Pipe).map { try? $0.fileHandleForWriting.close() }
        (standardError as? Pipe).map { try? $0.fileHandleForWriting.close() }
        let thread = Thread { [self] in
            var raw: Int32 = 0
            while waitpid(started, &raw, 0) < 0 && errno == EINTR {}
            exited.withLock {
                status = raw
                exited.broadcast()
            }
        }
        thread.name = "child-process-\(started)"
        thread.start()
    }

    /// Waits until the child has exited.
    public func waitUntilExit() {
        exited.lock()
        defer { exited.unlock() }
        while status == nil { exited.wait() }
    }

    /// The child's exit status, or the signal that ended it; 0 while it runs.
    public var terminationStatus: Int32 {
        guard let raw = exited.withLock({ status }) else { return 0 }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    /// Whether the child exited or was ended by a signal.
    public var terminationReason: Foundation.Process.TerminationReason {
        guard let raw = exited.withLock({ status }) else { return .exit }
        return raw & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    /// Sends SIGTERM to the child, unless it has exited.
    public func terminate() { signal(SIGTERM) }

    /// Sends SIGINT to the child, unless it has exited.
    public func interrupt() { signal(SIGINT) }

    private func signal(_ number: Int32) {
        exited.withLock {
            if pid != 0 && status == nil { kill(pid, number) }
        }
    }

    /// The descriptor the child gets for a standard stream: -1 for this process's own, -2 for
    /// /dev/null.
    private static func descriptor(_ stream: Any?, reading: Bool) -> Int32 {
        switch stream {
        case let pipe as Pipe: (reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting).fileDescriptor
        case let handle as FileHandle: handle === FileHandle.nullDevice ? -2 : handle.fileDescriptor
        default: -1
        }
    }
}

/// A child process that could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension Optional where Wrapped == [UnsafeMutablePointer<CChar>?] {
    fileprivate func withOptionalPointer<R>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> R) -> R {
        guard let self else { return body(nil) }
        return self.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
