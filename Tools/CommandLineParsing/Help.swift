/// The help and usage line of a command, in swift-argument-parser's layout: OVERVIEW, USAGE,
/// ARGUMENTS, OPTIONS, a section per titled option group, SUBCOMMANDS.
struct Help {
    /// The root command and the subcommands down to the command described.
    let stack: [any ParsableCommand.Type]

    /// Help text is wrapped to this many columns.
    static let width = 80
    /// Where the help of each row starts.
    static let labelWidth = 26

    private var command: any ParsableCommand.Type { stack[stack.count - 1] }
    private var layout: CommandLayout { CommandLayout(command) }
    private var names: [String] { stack.map { $0.commandName } }

    /// `photoledger album insert <album> <asset> ... --at <index> [<global-options>]`.
    var usage: String {
        var parts = [names.joined(separator: " ")]
        if !command.configuration.subcommands.isEmpty { parts.append("<subcommand>") }
        let visible = layout.active.filter(\.isVisible)
        parts += visible.filter(\.isPositional).map(\.synopsis)
        parts += visible.filter { !$0.isPositional && $0.sectionTitle == nil }.map {
            $0.isRequiredOption ? $0.synopsis : "[\($0.synopsis)]"
        }
        parts += sectionTitles(visible).map { "[<\($0.lowercased().split(separator: " ").joined(separator: "-"))>]" }
        return parts.joined(separator: " ")
    }

    /// The full help.
    var text: String {
        let configuration = command.configuration
        var text =
            configuration.abstract.isEmpty
            ? "" : Self.wrap("OVERVIEW: \(configuration.abstract)", width: Self.width).joined(separator: "\n") + "\n\n"
        if !configuration.discussion.isEmpty { text += configuration.discussion + "\n\n" }
        text += "USAGE: \(usage)\n"
        let visible = layout.active.filter(\.isVisible)
        let arguments = visible.filter(\.isPositional)
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n" + arguments.map { Self.row($0.helpLabel, $0.helpText) }.joined()
        }
        var options = visible.filter { !$0.isPositional && $0.sectionTitle == nil }.map { ($0.helpLabel, $0.helpText) }
        if stack.count == 1, !configuration.version.isEmpty { options.append(("--version", "Show the version.")) }
        options.append(("-h, --help", "Show help information."))
        text += "\nOPTIONS:\n" + options.map { Self.row($0.0, $0.1) }.joined()
        for title in sectionTitles(visible) {
            text += "\n\(title):\n" + visible.filter { $0.sectionTitle == title }.map { Self.row($0.helpLabel, $0.helpText) }.joined()
        }
        if !configuration.subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n" + configuration.subcommands.map { Self.row($0.commandName, $0.configuration.abstract) }.joined()
            let path = (names.dropFirst() + ["<subcommand>"]).joined(separator: " ")
            text += "\n  See '\(names[0]) help \(path)' for detailed help.\n"
        }
        return text
    }

    /// A usage error of the command.
    func usageError(_ message: String) -> UsageError {
        UsageError(message: message, usage: usage, helpCommand: (names + ["--help"]).joined(separator: " "))
    }

    // MARK: Helpers

    private func sectionTitles(_ definitions: [ArgumentDefinition]) -> [String] {
        var titles: [String] = []
        for title in definitions.compactMap(\.sectionTitle) where !titles.contains(title) { titles.append(title) }
        return titles
    }

    /// One row: the label, then the help wrapped beside it (below it when the label is long).
    static func row(_ label: String, _ help: String) -> String {
        let lines = wrap(help, width: width - labelWidth)
        let indent = String(repeating: " ", count: labelWidth)
        let padded = "  " + label
        var text: String
        var rest = lines[...]
        if padded.count < labelWidth - 1 {
            text = padded + String(repeating: " ", count: labelWidth - padded.count) + (rest.popFirst() ?? "") + "\n"
        } else {
            text = padded + "\n"
        }
        for line in rest { text += indent + line + "\n" }
        return text
    }

    /// Splits text into lines of at most `width` characters at spaces (a longer word has a line to itself).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.isEmpty ? [""] : lines
    }
}
