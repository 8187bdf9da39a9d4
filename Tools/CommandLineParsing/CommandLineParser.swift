/// What a command line asks the tool to do.
public enum CommandLineRequest {
    /// Run this command.
    case run(CommandInvocation)
    /// Print this help text and exit 0 (`--help`, `-h`, `help <subcommand>`).
    case help(String)
    /// Print this version and exit 0 (`--version`).
    case version(String)
}

/// A parsed and validated command, with the commands above it.
public struct CommandInvocation {
    /// The command to run, its properties holding the parsed values.
    public var command: any ParsableCommand
    /// The root command and the subcommands down to ``command``.
    let stack: [any ParsableCommand.Type]

    /// The subcommand names from the root (`["album", "create"]`); empty for the root itself.
    public var path: [String] { stack.dropFirst().map { $0.commandName } }

    /// A usage error of the command: its message, usage line and where to find its help.
    public func usageError(_ message: String) -> UsageError { Help(stack: stack).usageError(message) }
}

extension ParsableCommand {
    /// Parses the arguments after the program name, with this type as the tool's root command:
    /// finds the subcommand, checks and converts every value, and validates the command.
    public static func parse(commandLine arguments: [String]) throws(UsageError) -> CommandLineRequest {
        try CommandLineParser(root: Self.self).parse(arguments)
    }

    /// The help of the command at `path` (subcommand names from this root), or nil when there is none.
    public static func helpMessage(for path: [String] = []) -> String? {
        CommandLineParser(root: Self.self).stack(for: path).map { Help(stack: $0).text }
    }

    /// The usage line of the command at `path`, or nil when there is none.
    public static func usage(for path: [String] = []) -> String? {
        CommandLineParser(root: Self.self).stack(for: path).map { Help(stack: $0).usage }
    }
}

/// Reads a command line: subcommands by name, options and flags anywhere after the command that
/// declares them (so a parent's options are accepted before and after its subcommands' names),
/// `--name value` and `--name=value`, `--` to end the options, positional values in order.
struct CommandLineParser {
    let root: any ParsableCommand.Type

    func parse(_ arguments: [String]) throws(UsageError) -> CommandLineRequest {
        var stack: [any ParsableCommand.Type] = [root]
        var layouts = [CommandLayout(root)]
        var values = ParsedValues()
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if !optionsEnded, argument == "--" {
                optionsEnded = true
            } else if !optionsEnded, Self.isOption(argument) {
                if argument == "--help" || argument == "-h" { return .help(Help(stack: stack).text) }
                if argument == "--version", stack.count == 1, !root.configuration.version.isEmpty {
                    return .version(root.configuration.version)
                }
                let (name, inline) = Self.split(argument)
                guard let definition = layouts.reversed().lazy.compactMap({ $0.option(named: name) }).first else {
                    throw Help(stack: stack).usageError("unknown option '\(argument)'")
                }
                let texts = try optionTexts(definition, inline: inline, arguments: arguments, index: &index, stack: stack)
                values.options[definition.optionKey, default: []] += texts
            } else if !stack[stack.count - 1].configuration.subcommands.isEmpty {
                if stack.count == 1, argument == "help" { return try helpRequest(Array(arguments[index...])) }
                guard let subcommand = Self.subcommand(named: argument, of: stack[stack.count - 1]) else {
                    throw Help(stack: stack).usageError("unknown subcommand '\(argument)'")
                }
                stack.append(subcommand)
                layouts.append(CommandLayout(subcommand))
            } else {
                positionals.append(argument)
            }
        }
        return .run(try invocation(stack: stack, layout: layouts[layouts.count - 1], values: values, positionals: positionals))
    }

    /// The commands from the root down the names of `path`, or nil when a name is not a subcommand.
    func stack(for path: [String]) -> [any ParsableCommand.Type]? {
        var stack: [any ParsableCommand.Type] = [root]
        for name in path {
            guard let next = Self.subcommand(named: name, of: stack[stack.count - 1]) else { return nil }
            stack.append(next)
        }
        return stack
    }

    // MARK: Steps

    private func optionTexts(
        _ definition: ArgumentDefinition, inline: String?, arguments: [String], index: inout Int, stack: [any ParsableCommand.Type]
    ) throws(UsageError) -> [String] {
        let help = Help(stack: stack)
        var texts: [String]
        switch definition.kind {
        case .flag:
            guard inline == nil else { throw help.usageError("the flag '\(definition.displayName)' takes no value") }
            return [""]
        case .option(_, .remaining):
            texts = (inline.map { [$0] } ?? []) + arguments[index...]
            index = arguments.count
        case .option, .positional:
            if let inline {
                texts = [inline]
            } else if index < arguments.count, !Self.isOption(arguments[index]) {
                texts = [arguments[index]]
                index += 1
            } else {
                texts = []
            }
        }
        guard !texts.isEmpty else { throw help.usageError("missing value for '\(definition.helpLabel)'") }
        if let invalid = texts.first(where: { !definition.accepts($0) }) {
            throw help.usageError(Self.invalidValue(invalid, for: "'\(definition.helpLabel)'", definition))
        }
        return texts
    }

    private func invocation(
        stack: [any ParsableCommand.Type], layout: CommandLayout, values: ParsedValues, positionals: [String]
    ) throws(UsageError) -> CommandInvocation {
        let help = Help(stack: stack)
        let command = stack[stack.count - 1]
        guard command.configuration.subcommands.isEmpty else { throw help.usageError("missing subcommand") }
        var values = values
        values.positionals = try assign(positionals, to: layout.positionals, help: help)
        if let missing = layout.options.first(where: { $0.isRequiredOption && values.options[$0.optionKey] == nil }) {
            throw help.usageError("missing '\(missing.helpLabel)'")
        }
        do {
            var parsed = try command.init(from: ArgumentDecoder(layout: layout, values: values, prefix: ""))
            try parsed.validate()
            return CommandInvocation(command: parsed, stack: stack)
        } catch let error as ValidationError {
            throw help.usageError(error.message)
        } catch {
            throw help.usageError("\(error)")
        }
    }

    /// Gives the positional values to the arguments in order; an argument that takes several
    /// leaves enough for the required ones after it.
    private func assign(_ texts: [String], to arguments: [ArgumentDefinition], help: Help) throws(UsageError) -> [String: [String]] {
        var assigned: [String: [String]] = [:]
        var remaining = texts[...]
        for (offset, argument) in arguments.enumerated() {
            guard case .positional(let arity) = argument.kind else { continue }
            let laterRequired = arguments[(offset + 1)...].filter {
                if case .positional(let later) = $0.kind { return later.isRequired }
                return false
            }.count
            let available = max(0, remaining.count - laterRequired)
            let taken: Int
            switch arity {
            case .one: taken = min(1, remaining.count)
            case .optional: taken = min(1, available)
            case .oneOrMore, .zeroOrMore: taken = available
            }
            if arity.isRequired, taken == 0 { throw help.usageError("missing expected argument '<\(argument.valueName)>'") }
            let values = Array(remaining.prefix(taken))
            if let invalid = values.first(where: { !argument.accepts($0) }) {
                throw help.usageError(Self.invalidValue(invalid, for: "'<\(argument.valueName)>'", argument))
            }
            if !values.isEmpty { assigned[argument.route] = values }
            remaining = remaining.dropFirst(taken)
        }
        if let extra = remaining.first { throw help.usageError("unexpected argument '\(extra)'") }
        return assigned
    }

    private func helpRequest(_ names: [String]) throws(UsageError) -> CommandLineRequest {
        var stack: [any ParsableCommand.Type] = [root]
        for name in names where !Self.isOption(name) {
            guard let next = Self.subcommand(named: name, of: stack[stack.count - 1]) else {
                throw Help(stack: stack).usageError("no help for unknown subcommand '\(name)'")
            }
            stack.append(next)
        }
        return .help(Help(stack: stack).text)
    }

    // MARK: Helpers

    private static func subcommand(named name: String, of command: any ParsableCommand.Type) -> (any ParsableCommand.Type)? {
        command.configuration.subcommands.first { $0.commandName == name }
    }

    /// Whether an argument is an option's name: it starts with a dash, is not a dash alone and is
    /// not a negative number (those are values).
    static func isOption(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument.count > 1 && Double(argument) == nil
    }

    private static func split(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    private static func invalidValue(_ text: String, for label: String, _ definition: ArgumentDefinition) -> String {
        "invalid value '\(text)' for \(label): expected \(definition.expectation)"
    }
}
