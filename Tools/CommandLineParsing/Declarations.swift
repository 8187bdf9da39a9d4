/// The names of an option or flag: long (`--dry-run`), short (`-r`), or both.
public struct NameSpecification: ExpressibleByArrayLiteral, Sendable {
    /// One name.
    public struct Element: Sendable {
        enum Kind: Sendable {
            case long
            case customLong(String)
            case short
            case customShort(Character)
        }

        let kind: Kind

        /// The long name made from the property's name: `dryRun` → `--dry-run`.
        public static let long = Element(kind: .long)
        /// The short name made from the first letter of the property's name.
        public static let short = Element(kind: .short)

        /// A long name given here, without the dashes.
        public static func customLong(_ name: String) -> Element { Element(kind: .customLong(name)) }

        /// A short name given here, without the dash.
        public static func customShort(_ letter: Character) -> Element { Element(kind: .customShort(letter)) }
    }

    let elements: [Element]

    public init(arrayLiteral elements: Element...) { self.elements = elements }

    /// The long name made from the property's name.
    public static let long: NameSpecification = [.long]
    /// The short name made from the first letter of the property's name.
    public static let short: NameSpecification = [.short]
    /// Both the long and the short name made from the property's name.
    public static let shortAndLong: NameSpecification = [.long, .short]

    /// A long name given here, without the dashes.
    public static func customLong(_ name: String) -> NameSpecification { [.customLong(name)] }

    /// A short name given here, without the dash.
    public static func customShort(_ letter: Character) -> NameSpecification { [.customShort(letter)] }

    func resolve(property: String) -> (long: String?, short: Character?) {
        var long: String?
        var short: Character?
        for element in elements {
            switch element.kind {
            case .long: long = Naming.kebabCase(property)
            case .customLong(let name): long = name
            case .short: short = property.first
            case .customShort(let letter): short = letter
            }
        }
        return (long, short)
    }
}

/// The help of an argument, option or flag: one line, the value's placeholder, and whether
/// help and usage show it. A string literal gives the line alone.
public struct ArgumentHelp: ExpressibleByStringLiteral, Sendable {
    /// One line: what the value means.
    public var abstract: String
    /// The placeholder in usage and help (`title` in `--album <title>`); nil uses the name.
    public var valueName: String?
    /// Whether help and usage show it.
    public var visibility: ArgumentVisibility

    /// Describes an argument, option or flag.
    public init(_ abstract: String = "", valueName: String? = nil, visibility: ArgumentVisibility = .default) {
        self.abstract = abstract
        self.valueName = valueName
        self.visibility = visibility
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// Accepted, but left out of help and usage: for a tool's internal use.
    public static let hidden = ArgumentHelp(visibility: .hidden)
}

/// Whether help and usage show an argument, option or flag.
public enum ArgumentVisibility: Sendable {
    /// Shown.
    case `default`
    /// Accepted but not shown.
    case hidden
}

/// How an option with several values takes them.
public enum ArrayParsingStrategy: Sendable {
    /// One value after each occurrence: `--tag a --tag b`.
    case singleValue
    /// Every argument after the option, whatever it looks like (at least one).
    case remaining
}

/// Names made from Swift identifiers.
enum Naming {
    /// `dryRun` → `dry-run`, `ListDevices` → `list-devices`.
    static func kebabCase(_ identifier: String) -> String {
        var words: [String] = []
        var current = ""
        for character in identifier {
            if character.isUppercase, !current.isEmpty, !(current.last?.isUppercase ?? false) {
                words.append(current)
                current = ""
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        return words.map { $0.lowercased() }.joined(separator: "-")
    }
}
