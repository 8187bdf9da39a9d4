/// One declared argument, option or flag, as the parser and the help see it.
struct ArgumentDefinition {
    /// How many positional values an argument takes.
    enum Arity {
        /// Exactly one.
        case one
        /// Zero or one.
        case optional
        /// One or more (the last argument only).
        case oneOrMore
        /// Zero or more (the last argument only).
        case zeroOrMore

        var isRequired: Bool { self == .one || self == .oneOrMore }
    }

    enum Kind {
        case flag
        case option(repeating: Bool, parsing: ArrayParsingStrategy)
        case positional(Arity)
    }

    /// The value a property holds when the command line does not give it.
    enum Initial {
        /// None: the command line must give it.
        case none
        /// This value (an `Any` holding the property's type).
        case value(Any)
    }

    var kind: Kind
    /// The property path from the command: `json`, or `global.json` inside an option group.
    var route: String
    var longName: String?
    var shortName: Character?
    var help: ArgumentHelp
    /// The option group's section title, for options declared in a titled group.
    var sectionTitle: String?
    var valueName: String
    var expectation: String
    var allValues: [String]
    var initial: Initial
    var defaultDescription: String?
    /// Whether one command-line text is a valid value.
    var accepts: (String) -> Bool
    /// The property's value from the texts given (at least one).
    var makeValue: ([String]) -> Any?

    var isPositional: Bool {
        if case .positional = kind { return true }
        return false
    }

    var isVisible: Bool { help.visibility == .default }

    /// An option or flag that must be given.
    var isRequiredOption: Bool {
        if case .option = kind, case .none = initial { return true }
        return false
    }

    /// The name as typed: `--album`, or `-q` for an option with only a short name.
    var displayName: String {
        if let longName { return "--" + longName }
        return shortName.map { "-\($0)" } ?? "<\(valueName)>"
    }

    /// The key of the option's values on a command line: options of one name share them.
    var optionKey: String { displayName }

    /// `--album <title>`, `--json`, `<path> ...`.
    var synopsis: String {
        switch kind {
        case .flag: return displayName
        case .option(let repeating, let parsing):
            return "\(displayName) <\(valueName)>" + (repeating || parsing == .remaining ? " ..." : "")
        case .positional(let arity):
            switch arity {
            case .one: return "<\(valueName)>"
            case .optional: return "[<\(valueName)>]"
            case .oneOrMore: return "<\(valueName)> ..."
            case .zeroOrMore: return "[<\(valueName)> ...]"
            }
        }
    }

    /// The label of the help row: `-q, --quiet`, `--album <title>`, `<path>`.
    var helpLabel: String {
        switch kind {
        case .positional: return "<\(valueName)>"
        case .flag, .option:
            let short = shortName.map { "-\($0)" }
            let long = longName.map { "--\($0)" }
            let names = [short, long].compactMap { $0 }.joined(separator: ", ")
            if case .option = kind { return names + " <\(valueName)>" }
            return names
        }
    }

    /// The help line with the values and default appended.
    var helpText: String {
        var notes: [String] = []
        if !allValues.isEmpty { notes.append("values: " + allValues.joined(separator: ", ")) }
        if let defaultDescription { notes.append("default: " + defaultDescription) }
        guard !notes.isEmpty else { return help.abstract }
        return (help.abstract.isEmpty ? "" : help.abstract + " ") + "(" + notes.joined(separator: "; ") + ")"
    }

    /// Whether a typed name (`--album`, `-q`) names this option or flag.
    func isNamed(_ name: String) -> Bool {
        guard !isPositional else { return false }
        if let longName, name == "--" + longName { return true }
        if let shortName, name == "-\(shortName)" { return true }
        return false
    }
}

/// A property wrapper that declares command-line input.
protocol ArgumentDeclaring {
    /// The definitions the property declares (a group declares those of its type), with routes
    /// starting at the property.
    func definitions(property: String) -> [ArgumentDefinition]
}

/// The declarations of a ``ParsableArguments`` type, read from a value made by `init()`.
enum Declarations {
    static func definitions(of type: any ParsableArguments.Type) -> [ArgumentDefinition] {
        Mirror(reflecting: type.init()).children.flatMap { child -> [ArgumentDefinition] in
            guard let label = child.label, label.hasPrefix("_"), let declaring = child.value as? any ArgumentDeclaring else { return [] }
            return declaring.definitions(property: String(label.dropFirst()))
        }
    }
}

/// What one command accepts: its declarations, where an option of its own hides a grouped
/// option of the same name (its group's property then keeps its default).
struct CommandLayout {
    /// Every declaration, hidden ones included.
    let all: [ArgumentDefinition]
    /// The declarations the command line reaches.
    let active: [ArgumentDefinition]

    init(_ type: any ParsableArguments.Type) {
        let all = Declarations.definitions(of: type)
        let depth = { (definition: ArgumentDefinition) in definition.route.split(separator: ".").count }
        self.all = all
        active = all.filter { definition in
            !all.contains { other in
                guard !definition.isPositional, !other.isPositional, depth(other) < depth(definition) else { return false }
                return (other.longName != nil && other.longName == definition.longName)
                    || (other.shortName != nil && other.shortName == definition.shortName)
            }
        }
    }

    var positionals: [ArgumentDefinition] { active.filter(\.isPositional) }

    var options: [ArgumentDefinition] { active.filter { !$0.isPositional } }

    func option(named name: String) -> ArgumentDefinition? { options.first { $0.isNamed(name) } }

    func definition(at route: String) -> ArgumentDefinition? { all.first { $0.route == route } }

    func isActive(_ route: String) -> Bool { active.contains { $0.route == route } }
}
