/// A value, or a combination of values, that a command cannot accept: thrown by
/// ``ParsableArguments/validate()`` or ``ParsableCommand/run()``, it is reported as a usage
/// error of the command (`Error: …`, the usage line, where to find help; exit 64).
public struct ValidationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, in the words of the command line.
    public let message: String

    /// Describes what is wrong.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Ends the tool with an exit status and no further message (the command printed its own).
public struct ExitCode: Error, Sendable, Equatable {
    /// The process exit status.
    public let rawValue: Int32

    /// An exit status.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// Status 0.
    public static let success = ExitCode(0)
    /// Status 1: the command failed.
    public static let failure = ExitCode(1)
    /// Status 64 (`EX_USAGE`): the command line does not follow the usage.
    public static let validationFailure = ExitCode(64)
}

/// A command line that does not follow a command's usage: printed as `Error: <message>`, the
/// usage line and where to find the help, with exit status 64.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The usage line of the command concerned, such as `photoledger album create <title>`.
    public let usage: String
    /// The command that shows the full help, such as `photoledger album create --help`.
    public let helpCommand: String

    /// Describes a usage error.
    public init(message: String, usage: String, helpCommand: String) {
        self.message = message
        self.usage = usage
        self.helpCommand = helpCommand
    }

    /// The text for standard error.
    public var description: String { "Error: \(message)\nUsage: \(usage)\n  See '\(helpCommand)' for more information.\n" }
}

/// How a tool reports a failure other than a usage error: `Error: <message>`, an optional
/// `Hint: <hint>` line, and the exit status.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    /// What happened.
    public var message: String
    /// What to do about it.
    public var hint: String?
    /// The process exit status.
    public var exitCode: Int32

    /// Describes a failure.
    public init(_ message: String, hint: String? = nil, exitCode: Int32 = 1) {
        self.message = message
        self.hint = hint
        self.exitCode = exitCode
    }

    /// A failure described by the error's own text.
    public init(describing error: any Error) {
        self.init("\(error)")
    }

    /// The text for standard error.
    public var description: String { "Error: \(message)\n" + (hint.map { "Hint: \($0)\n" } ?? "") }
}
