// The shape of a command-line tool, after swift-argument-parser: one type per command, whose
// properties declare its arguments, options and flags (``Argument``, ``Option``, ``Flag``,
// ``OptionGroup``), with a static ``CommandConfiguration`` naming it and its subcommands.

/// A type whose properties declare command-line arguments, options and flags.
///
/// Every stored property is one of the property wrappers ``Argument``, ``Option``, ``Flag`` or
/// ``OptionGroup``. The parser creates a value with ``init()`` to read the declarations, then
/// decodes a second value holding the parsed values and calls ``validate()`` on it.
public protocol ParsableArguments: Decodable, SendableMetatype {
    /// Creates a value holding the declarations (the parser fills in the values).
    init()

    /// Checks the parsed values together. Throw ``ValidationError`` for a value the command
    /// cannot accept: the tool reports it as a usage error of the command (exit 64).
    mutating func validate() throws
}

extension ParsableArguments {
    /// Accepts every combination of values.
    public mutating func validate() throws {}
}

/// A command: a ``ParsableArguments`` type with a name, help texts and subcommands.
///
/// ```swift
/// struct Create: ParsableCommand {
///     static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an album.")
///     @OptionGroup(title: "GLOBAL OPTIONS") var global: GlobalOptions
///     @Argument(help: "The album's title.") var title: String
///     func run() throws { … }
/// }
/// ```
public protocol ParsableCommand: ParsableArguments {
    /// The command's name, help texts and subcommands.
    static var configuration: CommandConfiguration { get }

    /// Does the command's work. Throw ``ValidationError`` for a usage error found only now,
    /// ``ExitCode`` to end with a status and no message, any other error to fail (exit 1).
    mutating func run() throws
}

extension ParsableCommand {
    /// A command named after its type, without help texts or subcommands.
    public static var configuration: CommandConfiguration { CommandConfiguration() }

    /// A command with subcommands runs one of them: it has no work of its own.
    public mutating func run() throws {
        throw ValidationError("missing subcommand")
    }
}

/// A command whose work is asynchronous. A tool with any such command starts from an
/// `AsyncParsableCommand` root, calling `await Root.main()` from an `async` function (top-level
/// code would pick the synchronous `main`).
public protocol AsyncParsableCommand: ParsableCommand {
    /// Does the command's work.
    mutating func run() async throws
}

/// The name, help texts and subcommands of a command.
public struct CommandConfiguration: Sendable {
    /// The name typed on the command line; nil derives it from the type's name
    /// (`ListDevices` → `list-devices`).
    public var commandName: String?
    /// One line: what the command does.
    public var abstract: String
    /// More paragraphs of help, shown after the overview as written.
    public var discussion: String
    /// The version printed by `--version`; empty for a tool without that option.
    public var version: String
    /// The subcommands, in the order help lists them. A command with subcommands takes no
    /// positional arguments of its own.
    public var subcommands: [any ParsableCommand.Type]

    /// Describes a command.
    public init(
        commandName: String? = nil, abstract: String = "", discussion: String = "", version: String = "",
        subcommands: [any ParsableCommand.Type] = []
    ) {
        self.commandName = commandName
        self.abstract = abstract
        self.discussion = discussion
        self.version = version
        self.subcommands = subcommands
    }
}

extension ParsableCommand {
    /// The name typed on the command line.
    static var commandName: String {
        configuration.commandName ?? Naming.kebabCase(String(describing: Self.self))
    }
}
