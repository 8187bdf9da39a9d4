import CommandLineParsing
import Foundation
@preconcurrency import Glibc
import PhotoLedger
import PhotoLedgerWeb

/// `photoledger web`: the library in a browser.
struct Web: ParsableCommand {
    /// The environment variable that may hold the password.
    static let passwordEnvironment = "PHOTOLEDGER_WEB_PASSWORD"

    static let configuration = CommandConfiguration(
        commandName: "web", abstract: "Serve the library to a browser: albums, photos, history, sync status; changes too.",
        discussion: """
            Prints the address to open, with a token that starts a session in the browser (keep
            it to yourself), and serves until SIGINT (Ctrl-C) or SIGTERM. Pages update by
            themselves when the library changes, here or in another process (an import, a sync).
            Every change made in the browser is a change block, like the command line's: it syncs
            and shows in history.

            The server listens on 127.0.0.1 (this machine only) unless --listen says otherwise.
            It refuses requests that name another host (DNS rebinding) or come from another
            site's page, and needs the session for every page and change. Listening on another
            address needs a password (--password-file, or $PHOTOLEDGER_WEB_PASSWORD), asked by a
            login page; the traffic is plain HTTP, so use it only on a network you trust.
            """)

    @OptionGroup(title: GlobalOptions.title) var global: GlobalOptions

    @Option(
        help: ArgumentHelp(
            "The address and port to listen on: IPv4 (127.0.0.1:8090) or IPv6 in brackets ([::1]:8090); port 0 picks a free one.",
            valueName: "host:port"))
    var listen = ListenAddress(argument: "127.0.0.1:8090")!

    @Option(help: ArgumentHelp("A file whose first line is the password (required to listen beyond loopback).", valueName: "file"))
    var passwordFile: String?

    @Option(help: ArgumentHelp("Another name this machine is reached by, allowed in the Host header (repeatable).", valueName: "name"))
    var hostName: [String] = []

    @Option(
        help: ArgumentHelp(
            "How long a session may go unused before the browser must log in again (90s, 30m, 12h, 7d).", valueName: "duration"))
    var sessionIdle = SessionDuration(argument: "12h")!

    @Option(help: ArgumentHelp("How long a session lasts at most, used or not (90s, 30m, 12h, 7d).", valueName: "duration"))
    var sessionLifetime = SessionDuration(argument: "7d")!

    func run() throws {
        let context = try Context(global)
        let password = try readPassword()
        let termination = try TerminationPipe()
        let library = try context.openLibrary()
        let configuration = WebServer.Configuration(
            address: listen.host, port: listen.port, password: password, hostNames: hostName, sessionIdleTimeout: sessionIdle.duration,
            sessionLifetime: sessionLifetime.duration)
        let server: WebServer
        do {
            server = try WebServer(library: library, configuration: configuration)
        } catch {
            throw CommandFailure(error.message, hint: error.hint)
        }
        if context.json {
            context.emit(.object([("url", .string(server.url.absoluteString)), ("launchURL", .string(server.launchURL.absoluteString))]))
        } else {
            print("Serving \(context.libraryURL.path) at \(server.url.absoluteString)")
            print("Open this address to start a session (it carries a secret token): \(server.launchURL.absoluteString)")
            if password != nil { print("Or log in with the password at \(server.url.absoluteString)login") }
            print("Stop with Ctrl-C.")
            fflush(nil)
        }
        termination.wait()
        server.stop()
        context.say("Stopped.")
    }

    /// The password: the first line of --password-file, else $PHOTOLEDGER_WEB_PASSWORD, else none.
    private func readPassword() throws -> String? {
        if let passwordFile {
            guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw CommandFailure(
                    "cannot read the password file \(passwordFile)", hint: "check the path, and that the file is readable UTF-8 text")
            }
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.isEmpty else {
                throw CommandFailure("the password file \(passwordFile) is empty", hint: "write the password on its first line")
            }
            return line
        }
        let environment = ProcessInfo.processInfo.environment[Self.passwordEnvironment]
        return environment?.isEmpty == false ? environment : nil
    }
}

/// A length of time given as a number and a unit: `90s`, `30m`, `12h`, `7d`.
struct SessionDuration: ExpressibleByArgument {
    let duration: Duration

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = argument.last.flatMap({ units[$0] }), let count = Int64(argument.dropLast()), count > 0,
            count <= Int64.max / 86_400 / 1000
        else { return nil }
        duration = .seconds(count * unit)
    }

    static var valueExpectation: String { "a positive number followed by s, m, h or d, for example 30m" }
}

/// SIGINT and SIGTERM as a byte in a pipe (the self-pipe pattern): the handler only writes, which
/// is safe in a signal handler, and the command's thread waits by reading. A handler is used rather
/// than blocking the signals, because the tool's threads (its async runtime's) start before the
/// command runs and would not inherit a blocked mask.
private struct TerminationPipe {
    private let readEnd: Int32

    init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw CommandFailure("cannot make a pipe for the termination signals: \(String(cString: strerror(errno)))")
        }
        readEnd = ends[0]
        terminationWriteEnd = ends[1]
        signal(SIGPIPE, SIG_IGN)
        signal(SIGINT, terminationHandler)
        signal(SIGTERM, terminationHandler)
    }

    /// Returns once SIGINT or SIGTERM has arrived.
    func wait() {
        var byte: UInt8 = 0
        while read(readEnd, &byte, 1) != 1 {}
    }
}

/// The pipe's write end, for the handler. Written once before the handlers are installed, read only
/// by them.
nonisolated(unsafe) private var terminationWriteEnd: Int32 = -1

private let terminationHandler: @convention(c) (Int32) -> Void = { signal in
    var byte = UInt8(truncatingIfNeeded: signal)
    _ = write(terminationWriteEnd, &byte, 1)
}
