/// What a property wrapper holds: the declaration before parsing, the value after.
enum Declared<Value> {
    /// The definition, made once the property's name is known.
    case declaration((_ property: String) -> ArgumentDefinition)
    case value(Value)

    var value: Value {
        get {
            guard case .value(let value) = self else {
                preconditionFailure("a command-line property of type \(Value.self) was read before the command line was parsed")
            }
            return value
        }
        set { self = .value(newValue) }
    }

    func definitions(property: String) -> [ArgumentDefinition] {
        guard case .declaration(let make) = self else { return [] }
        return [make(property)]
    }
}

extension ArgumentDefinition {
    /// A definition of a value of type `T`, the property holding `Value`.
    static func of<T: ExpressibleByArgument>(
        _: T.Type, kind: Kind, property: String, names: NameSpecification, help: ArgumentHelp?, initial: Initial,
        defaultDescription: String? = nil, makeValue: @escaping ([String]) -> Any?
    ) -> ArgumentDefinition {
        let help = help ?? ArgumentHelp()
        let resolved = names.resolve(property: property)
        let isPositional: Bool
        if case .positional = kind { isPositional = true } else { isPositional = false }
        return ArgumentDefinition(
            kind: kind, route: property, longName: isPositional ? nil : resolved.long, shortName: isPositional ? nil : resolved.short,
            help: help, sectionTitle: nil, valueName: help.valueName ?? resolved.long ?? Naming.kebabCase(property),
            expectation: T.valueExpectation, allValues: T.allValueStrings, initial: initial, defaultDescription: defaultDescription,
            accepts: { T(argument: $0) != nil }, makeValue: makeValue)
    }
}

// MARK: Option

/// An option with a value: `--album <title>`, `--threads 4`, `--album=Trip`.
///
/// ```swift
/// @Option(help: "Add the assets to this album.") var album: String?   // optional
/// @Option var threads = 4                                               // with a default
/// @Option(help: ArgumentHelp("…", valueName: "index")) var at: Int      // required
/// @Option var tag: [String] = []                                         // repeatable
/// ```
@propertyWrapper
public struct Option<Value>: Decodable, ArgumentDeclaring {
    var storage: Declared<Value>

    /// The parsed value.
    public var wrappedValue: Value {
        get { storage.value }
        set { storage.value = newValue }
    }

    public init(from decoder: any Decoder) throws {
        storage = .value(try PropertyDecoder.value(Value.self, from: decoder))
    }

    init(_ make: @escaping (_ property: String) -> ArgumentDefinition) { storage = .declaration(make) }

    func definitions(property: String) -> [ArgumentDefinition] { storage.definitions(property: property) }
}

extension Option where Value: ExpressibleByArgument {
    /// An option that keeps `wrappedValue` when not given.
    public init(wrappedValue: Value, name: NameSpecification = .long, help: ArgumentHelp? = nil) {
        self.init { property in
            .of(
                Value.self, kind: .option(repeating: false, parsing: .singleValue), property: property, names: name, help: help,
                initial: .value(wrappedValue), defaultDescription: wrappedValue.defaultValueDescription,
                makeValue: { $0.last.flatMap(Value.init(argument:)) })
        }
    }

    /// An option that must be given.
    public init(name: NameSpecification = .long, help: ArgumentHelp? = nil) {
        self.init { property in
            .of(
                Value.self, kind: .option(repeating: false, parsing: .singleValue), property: property, names: name, help: help,
                initial: .none, makeValue: { $0.last.flatMap(Value.init(argument:)) })
        }
    }
}

extension Option {
    /// An option that is nil when not given.
    public init<Wrapped: ExpressibleByArgument>(wrappedValue: Wrapped? = nil, name: NameSpecification = .long, help: ArgumentHelp? = nil)
    where Value == Wrapped? {
        self.init { property in
            .of(
                Wrapped.self, kind: .option(repeating: false, parsing: .singleValue), property: property, names: name, help: help,
                initial: .value(wrappedValue as Any), defaultDescription: wrappedValue?.defaultValueDescription,
                makeValue: { texts in texts.last.flatMap(Wrapped.init(argument:)).map { Optional.some($0) as Any } })
        }
    }

    /// An option given any number of times, each value kept in order; with `.remaining`, the
    /// option takes every argument after it.
    public init<Element: ExpressibleByArgument>(
        wrappedValue: [Element] = [], name: NameSpecification = .long, help: ArgumentHelp? = nil,
        parsing: ArrayParsingStrategy = .singleValue
    ) where Value == [Element] {
        self.init { property in
            .of(
                Element.self, kind: .option(repeating: true, parsing: parsing), property: property, names: name, help: help,
                initial: .value(wrappedValue),
                makeValue: { texts in
                    let values = texts.compactMap(Element.init(argument:))
                    return values.count == texts.count ? values : nil
                })
        }
    }
}

// MARK: Flag

/// A flag: present or absent (`--json`, `-q`). Its value is true when given.
@propertyWrapper
public struct Flag: Decodable, ArgumentDeclaring {
    var storage: Declared<Bool>

    /// Whether the flag was given.
    public var wrappedValue: Bool {
        get { storage.value }
        set { storage.value = newValue }
    }

    /// Declares a flag, false unless given.
    public init(wrappedValue: Bool = false, name: NameSpecification = .long, help: ArgumentHelp? = nil) {
        storage = .declaration { property in
            let resolved = name.resolve(property: property)
            return ArgumentDefinition(
                kind: .flag, route: property, longName: resolved.long, shortName: resolved.short, help: help ?? ArgumentHelp(),
                sectionTitle: nil, valueName: resolved.long ?? property, expectation: "", allValues: [], initial: .value(wrappedValue),
                defaultDescription: nil, accepts: { _ in true }, makeValue: { _ in true })
        }
    }

    public init(from decoder: any Decoder) throws {
        storage = .value(try PropertyDecoder.value(Bool.self, from: decoder))
    }

    func definitions(property: String) -> [ArgumentDefinition] { storage.definitions(property: property) }
}

// MARK: Argument

/// A positional argument: `<title>`, `[<object>]`, `<path> ...`.
///
/// A plain type takes exactly one value; an optional type zero or one; an array one or more,
/// or zero or more when it has a default (`= []`). Only the last argument may take several.
@propertyWrapper
public struct Argument<Value>: Decodable, ArgumentDeclaring {
    var storage: Declared<Value>

    /// The parsed value.
    public var wrappedValue: Value {
        get { storage.value }
        set { storage.value = newValue }
    }

    public init(from decoder: any Decoder) throws {
        storage = .value(try PropertyDecoder.value(Value.self, from: decoder))
    }

    init(_ make: @escaping (_ property: String) -> ArgumentDefinition) { storage = .declaration(make) }

    func definitions(property: String) -> [ArgumentDefinition] { storage.definitions(property: property) }
}

extension Argument where Value: ExpressibleByArgument {
    /// An argument that must be given.
    public init(help: ArgumentHelp? = nil) {
        self.init { property in
            .of(
                Value.self, kind: .positional(.one), property: property, names: [], help: help, initial: .none,
                makeValue: { $0.first.flatMap(Value.init(argument:)) })
        }
    }
}

extension Argument {
    /// An argument that may be left out (then nil).
    public init<Wrapped: ExpressibleByArgument>(help: ArgumentHelp? = nil) where Value == Wrapped? {
        self.init { property in
            .of(
                Wrapped.self, kind: .positional(.optional), property: property, names: [], help: help, initial: .value(Value.none as Any),
                makeValue: { texts in texts.first.flatMap(Wrapped.init(argument:)).map { Optional.some($0) as Any } })
        }
    }

    /// One or more values.
    public init<Element: ExpressibleByArgument>(help: ArgumentHelp? = nil) where Value == [Element] {
        self.init(arity: .oneOrMore, initial: .none, help: help)
    }

    /// Zero or more values, `wrappedValue` when none is given.
    public init<Element: ExpressibleByArgument>(wrappedValue: [Element], help: ArgumentHelp? = nil) where Value == [Element] {
        self.init(arity: .zeroOrMore, initial: .value(wrappedValue), help: help)
    }

    private init<Element: ExpressibleByArgument>(arity: ArgumentDefinition.Arity, initial: ArgumentDefinition.Initial, help: ArgumentHelp?)
    where Value == [Element] {
        self.init { property in
            .of(
                Element.self, kind: .positional(arity), property: property, names: [], help: help, initial: initial,
                makeValue: { texts in
                    let values = texts.compactMap(Element.init(argument:))
                    return values.count == texts.count ? values : nil
                })
        }
    }
}

// MARK: OptionGroup

/// Options declared once in a ``ParsableArguments`` type and shared by several commands, such
/// as a tool's global options. With a title, help lists them in a section of their own and
/// usage shows them as one placeholder (`[<global-options>]`).
///
/// A parent command and its subcommands that declare the same group share the values: the
/// options are accepted before or after the subcommand's name.
@propertyWrapper
public struct OptionGroup<Value: ParsableArguments>: Decodable, ArgumentDeclaring {
    /// The parsed group; nil in the value that holds the declarations.
    var group: Value?
    let title: String?

    /// The parsed group.
    public var wrappedValue: Value {
        get {
            guard let group else { preconditionFailure("the option group \(Value.self) was read before the command line was parsed") }
            return group
        }
        set { group = newValue }
    }

    /// Declares the group; `title` names its help section (`GLOBAL OPTIONS`).
    public init(title: String? = nil) {
        self.title = title
    }

    public init(from decoder: any Decoder) throws {
        var group = try Value(from: try PropertyDecoder.nested(decoder))
        try group.validate()
        self.group = group
        title = nil
    }

    func definitions(property: String) -> [ArgumentDefinition] {
        Declarations.definitions(of: Value.self).map { member in
            var member = member
            member.route = property + "." + member.route
            member.sectionTitle = member.sectionTitle ?? title
            return member
        }
    }
}
