// Command-line parsing for PhotoLedger's tools, following swift-argument-parser's conventions:
// nested subcommands, `--name value` and `--name=value`, flags, `--` to end options, help laid
// out as OVERVIEW / USAGE / ARGUMENTS / OPTIONS / SUBCOMMANDS, and usage errors that carry the
// usage line so the tool can print `Error: …` and exit 64.

/// An option of a command: a flag (`--json`) or an option with a value (`--album <title>`).
public struct OptionDefinition: Sendable {
    /// The long name, without the dashes.
    public let name: String
    /// The one-letter name, without the dash.
    public let shortName: Character?
    /// The placeholder of the value (`title` in `--album <title>`); nil for a flag.
    public let valueName: String?
    /// One line of help.
    public let help: String

    /// A flag: present or absent.
    public static func flag(_ name: String, short: Character? = nil, help: String) -> OptionDefinition {
        OptionDefinition(name: name, shortName: short, valueName: nil, help: help)
    }

    /// An option with a value. Given several times, every value is kept in order.
    public static func option(_ name: String, short: Character? = nil, value: String, help: String) -> OptionDefinition {
        OptionDefinition(name: name, shortName: short, valueName: value, help: help)
    }

    var isFlag: Bool { valueName == nil }

    var synopsis: String { "--\(name)" + (valueName.map { " <\($0)>" } ?? "") }

    var helpLabel: String { (shortName.map { "-\($0), " } ?? "") + synopsis }
}

/// A positional argument of a command.
public struct ArgumentDefinition: Sendable {
    /// How many values the argument takes.
    public enum Arity: Sendable {
        /// Exactly one.
        case one
        /// Zero or one.
        case optional
        /// One or more (only as the last argument).
        case oneOrMore
        /// Zero or more (only as the last argument).
        case zeroOrMore
    }

    /// The placeholder, shown as `<name>`.
    public let name: String
    /// One line of help.
    public let help: String
    /// How many values it takes.
    public let arity: Arity

    /// Describes a positional argument.
    public init(_ name: String, arity: Arity = .one, help: String) {
        self.name = name
        self.help = help
        self.arity = arity
    }

    var synopsis: String {
        switch arity {
        case .one: return "<\(name)>"
        case .optional: return "[<\(name)>]"
        case .oneOrMore: return "<\(name)> ..."
        case .zeroOrMore: return "[<\(name)> ...]"
        }
    }
}

/// A command: what it does, its arguments and options, and its subcommands.
public struct CommandDefinition: Sendable {
    /// The name typed on the command line.
    public let name: String
    /// One line: what the command does.
    public let abstract: String
    /// More paragraphs of help, shown after the overview.
    public let discussion: String?
    /// Positional arguments, in order.
    public let arguments: [ArgumentDefinition]
    /// The command's own options.
    public let options: [OptionDefinition]
    /// Subcommands; a command with subcommands takes no arguments of its own.
    public let subcommands: [CommandDefinition]

    /// Describes a command.
    public init(
        _ name: String, abstract: String, discussion: String? = nil, arguments: [ArgumentDefinition] = [],
        options: [OptionDefinition] = [], subcommands: [CommandDefinition] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
    }

    func subcommand(named name: String) -> CommandDefinition? { subcommands.first { $0.name == name } }
}

/// A command line that does not follow the usage. Tools print `Error: <message>`, the usage line
/// and a pointer to the help, and exit 64 (`EX_USAGE`).
public struct UsageError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The usage line of the command that was being parsed.
    public let usage: String
    /// The command to run for the full help, such as `photoledger import --help`.
    public let helpCommand: String

    /// Describes a usage error.
    public init(message: String, usage: String, helpCommand: String) {
        self.message = message
        self.usage = usage
        self.helpCommand = helpCommand
    }

    /// The text to print on standard error.
    public var description: String { "Error: \(message)\nUsage: \(usage)\n  See '\(helpCommand)' for more information.\n" }
}

/// A parsed command line: which command, and its option and argument values.
public struct ParsedCommandLine: Sendable {
    /// The subcommand names from the root, such as `["album", "create"]`; empty for the root.
    public let path: [String]
    /// True when help was asked for (`--help`, `-h` or `help <command>`): print
    /// ``CommandLineParser/help(for:)`` for ``path`` and exit 0.
    public let isHelpRequest: Bool
    var flags: Set<String> = []
    var optionValues: [String: [String]] = [:]
    var argumentValues: [String: [String]] = [:]

    /// Whether a flag was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }
    /// The last value of an option, or nil.
    public func value(_ name: String) -> String? { optionValues[name]?.last }
    /// Every value of an option, in order.
    public func values(_ name: String) -> [String] { optionValues[name] ?? [] }
    /// The value of a positional argument (the first, for a repeated one), or nil.
    public func argument(_ name: String) -> String? { argumentValues[name]?.first }
    /// Every value of a positional argument.
    public func arguments(_ name: String) -> [String] { argumentValues[name] ?? [] }
}

/// Parses command lines of a tool and writes their help.
public struct CommandLineParser: Sendable {
    /// The tool: its name is the program name.
    public let root: CommandDefinition
    /// Options every command accepts, anywhere on the command line.
    public let globalOptions: [OptionDefinition]

    private static let helpOption = OptionDefinition.flag("help", short: "h", help: "Show help information.")

    /// A parser for the tool `root`.
    public init(root: CommandDefinition, globalOptions: [OptionDefinition] = []) {
        self.root = root
        self.globalOptions = globalOptions
    }

    /// Parses the arguments after the program name.
    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedCommandLine {
        var command = root
        var path: [String] = []
        var positionals: [String] = []
        var result = ParsedCommandLine(path: [], isHelpRequest: false)
        var index = 0
        var optionsEnded = false
        if arguments.first == "help" {
            return try helpRequest(Array(arguments.dropFirst()))
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if !optionsEnded, argument == "--" {
                optionsEnded = true
            } else if !optionsEnded, argument.hasPrefix("-"), argument.count > 1, !Self.isNumber(argument) {
                let (name, inlineValue) = Self.split(argument)
                guard let option = resolve(name, in: command) else {
                    throw usageError("unknown option '\(argument)'", path: path, command: command)
                }
                if option.name == "help" {
                    return ParsedCommandLine(path: path, isHelpRequest: true)
                }
                if option.isFlag {
                    guard inlineValue == nil else {
                        throw usageError("the flag '--\(option.name)' takes no value", path: path, command: command)
                    }
                    result.flags.insert(option.name)
                } else if let value = inlineValue ?? (index < arguments.count ? arguments[index] : nil) {
                    if inlineValue == nil { index += 1 }
                    result.optionValues[option.name, default: []].append(value)
                } else {
                    throw usageError("missing value for '\(option.synopsis)'", path: path, command: command)
                }
            } else if !command.subcommands.isEmpty {
                guard let subcommand = command.subcommand(named: argument) else {
                    throw usageError("unknown subcommand '\(argument)'", path: path, command: command)
                }
                command = subcommand
                path.append(argument)
            } else {
                positionals.append(argument)
            }
        }
        if !command.subcommands.isEmpty {
            throw usageError("missing subcommand", path: path, command: command)
        }
        result.argumentValues = try assign(positionals, to: command, path: path)
        return ParsedCommandLine(
            path: path, isHelpRequest: false, flags: result.flags, optionValues: result.optionValues, argumentValues: result.argumentValues)
    }

    /// The usage line of a command, such as `photoledger album create <title>`.
    public func usage(for path: [String]) -> String {
        let command = definition(for: path) ?? root
        var parts = [([root.name] + path).joined(separator: " ")]
        if !command.subcommands.isEmpty {
            parts.append("<subcommand>")
        }
        parts += command.arguments.map(\.synopsis)
        parts += command.options.map { "[\($0.synopsis)]" }
        if !globalOptions.isEmpty { parts.append("[<global-options>]") }
        return parts.joined(separator: " ")
    }

    /// The full help of a command, in swift-argument-parser's layout.
    public func help(for path: [String]) -> String {
        let command = definition(for: path) ?? root
        var text = "OVERVIEW: \(command.abstract)\n"
        if let discussion = command.discussion { text += "\n\(discussion)\n" }
        text += "\nUSAGE: \(usage(for: path))\n"
        if !command.arguments.isEmpty {
            text += "\nARGUMENTS:\n" + command.arguments.map { Self.row("<\($0.name)>", $0.help) }.joined()
        }
        let isRoot = path.isEmpty
        let own = command.options + (isRoot ? globalOptions : []) + [Self.helpOption]
        text += "\nOPTIONS:\n" + own.map { Self.row($0.helpLabel, $0.help) }.joined()
        if !isRoot, !globalOptions.isEmpty {
            text += "\nGLOBAL OPTIONS:\n" + globalOptions.map { Self.row($0.helpLabel, $0.help) }.joined()
        }
        if !command.subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n" + command.subcommands.map { Self.row($0.name, $0.abstract) }.joined()
            text += "\n  See '\(root.name) help \((path + ["<subcommand>"]).joined(separator: " "))' for detailed help.\n"
        }
        return text
    }

    /// The definition at a path of subcommand names, or nil.
    public func definition(for path: [String]) -> CommandDefinition? {
        var command = root
        for name in path {
            guard let next = command.subcommand(named: name) else { return nil }
            command = next
        }
        return command
    }

    // MARK: Helpers

    private func helpRequest(_ names: [String]) throws(UsageError) -> ParsedCommandLine {
        var path: [String] = []
        for name in names {
            guard let command = definition(for: path), command.subcommand(named: name) != nil else {
                throw usageError("no help for unknown subcommand '\(name)'", path: path, command: definition(for: path) ?? root)
            }
            path.append(name)
        }
        return ParsedCommandLine(path: path, isHelpRequest: true)
    }

    private func resolve(_ name: String, in command: CommandDefinition) -> OptionDefinition? {
        let candidates = command.options + globalOptions + [Self.helpOption]
        if name.hasPrefix("--") {
            return candidates.first { "--" + $0.name == name }
        }
        return candidates.first { $0.shortName.map { "-\($0)" } == name }
    }

    private func assign(_ values: [String], to command: CommandDefinition, path: [String]) throws(UsageError) -> [String: [String]] {
        var assigned: [String: [String]] = [:]
        var remaining = values[...]
        for (offset, argument) in command.arguments.enumerated() {
            let laterRequired = command.arguments[(offset + 1)...].filter { $0.arity == .one || $0.arity == .oneOrMore }.count
            switch argument.arity {
            case .one:
                guard let value = remaining.popFirst() else {
                    throw usageError("missing expected argument '<\(argument.name)>'", path: path, command: command)
                }
                assigned[argument.name] = [value]
            case .optional:
                if remaining.count > laterRequired, let value = remaining.popFirst() { assigned[argument.name] = [value] }
            case .oneOrMore, .zeroOrMore:
                let taken = max(0, remaining.count - laterRequired)
                if argument.arity == .oneOrMore, taken == 0 {
                    throw usageError("missing expected argument '<\(argument.name)>'", path: path, command: command)
                }
                assigned[argument.name] = Array(remaining.prefix(taken))
                remaining = remaining.dropFirst(taken)
            }
        }
        if let extra = remaining.first {
            throw usageError("unexpected argument '\(extra)'", path: path, command: command)
        }
        return assigned
    }

    /// A usage error of the command at `path`, for checks made after parsing (a value out of range).
    public func usageError(_ message: String, path: [String]) -> UsageError {
        usageError(message, path: path, command: definition(for: path) ?? root)
    }

    private func usageError(_ message: String, path: [String], command: CommandDefinition) -> UsageError {
        UsageError(message: message, usage: usage(for: path), helpCommand: ([root.name] + path + ["--help"]).joined(separator: " "))
    }

    private static func split(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    private static func isNumber(_ argument: String) -> Bool { Int(argument) != nil }

    private static func row(_ label: String, _ help: String) -> String {
        let padded = "  " + label
        return padded.count < 26 ? padded + String(repeating: " ", count: 26 - padded.count) + help + "\n" : padded + "\n" + String(repeating: " ", count: 26) + help + "\n"
    }
}
