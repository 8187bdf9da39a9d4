#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ParsableCommand {
    /// Runs the tool whose root command this is: parses the process's arguments (or
    /// `arguments`), runs the command and exits.
    ///
    /// Help and `--version` print on standard output and exit 0. Usage errors — from parsing,
    /// from `validate()`, or a ``ValidationError`` thrown by `run()` — print `Error: …`, the
    /// command's usage line and where to find its help on standard error and exit 64. An
    /// ``ExitCode`` ends the process with its status. Any other error is printed as
    /// `describeFailure` describes it (`Error: …`, `Hint: …`), with its exit status.
    public static func main(
        _ arguments: [String]? = nil, describeFailure: (any Error) -> CommandFailure = CommandFailure.init(describing:)
    ) -> Never {
        let invocation = parseOrExit(arguments)
        var command = invocation.command
        do {
            try command.run()
        } catch {
            exit(invocation, error, describeFailure)
        }
        Termination.exit(0)
    }

    static func parseOrExit(_ arguments: [String]?) -> CommandInvocation {
        do {
            switch try parse(commandLine: arguments ?? Array(CommandLine.arguments.dropFirst())) {
            case .run(let invocation): return invocation
            case .help(let text): Termination.finish(output: text, status: 0)
            case .version(let version): Termination.finish(output: version + "\n", status: 0)
            }
        } catch {
            Termination.finish(errors: error.description, status: ExitCode.validationFailure.rawValue)
        }
    }

    static func exit(_ invocation: CommandInvocation, _ error: any Error, _ describeFailure: (any Error) -> CommandFailure) -> Never {
        switch error {
        case let error as ValidationError:
            Termination.finish(errors: invocation.usageError(error.message).description, status: ExitCode.validationFailure.rawValue)
        case let error as UsageError:
            Termination.finish(errors: error.description, status: ExitCode.validationFailure.rawValue)
        case let error as ExitCode:
            Termination.finish(status: error.rawValue)
        case let error as CommandFailure:
            Termination.finish(errors: error.description, status: error.exitCode)
        default:
            let failure = describeFailure(error)
            Termination.finish(errors: failure.description, status: failure.exitCode)
        }
    }
}

extension AsyncParsableCommand {
    /// Runs the tool whose root command this is, as ``ParsableCommand/main(_:describeFailure:)``
    /// does, awaiting commands whose work is asynchronous.
    public static func main(
        _ arguments: [String]? = nil, describeFailure: (any Error) -> CommandFailure = CommandFailure.init(describing:)
    ) async -> Never {
        let invocation = parseOrExit(arguments)
        do {
            if var command = invocation.command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                var command = invocation.command
                try command.run()
            }
        } catch {
            exit(invocation, error, describeFailure)
        }
        Termination.exit(0)
    }

    /// Not used: an asynchronous command runs through its `async` `run()`.
    public mutating func run() throws {
        throw ValidationError("\(Self.commandName) runs asynchronously: start the tool with 'await \(Self.self).main()'")
    }
}

/// Ending the process.
enum Termination {
    /// Writes standard output's pending text and `output`, then `errors` on standard error, and exits.
    static func finish(output: String = "", errors: String = "", status: Int32) -> Never {
        print(output, terminator: "")
        fflush(nil)
        write(errors, to: 2)
        exit(status)
    }

    static func exit(_ status: Int32) -> Never {
        fflush(nil)
        #if canImport(Glibc)
            Glibc.exit(status)
        #else
            Darwin.exit(status)
        #endif
    }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { buffer in
                #if canImport(Glibc)
                    Glibc.write(descriptor, buffer.baseAddress, buffer.count)
                #else
                    Darwin.write(descriptor, buffer.baseAddress, buffer.count)
                #endif
            }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
