/// A type whose values can be typed on the command line: an option's value or a positional
/// argument. A text that is not a value is a usage error naming the option and
/// ``valueExpectation``.
public protocol ExpressibleByArgument {
    /// The value a command-line text stands for, or nil when it stands for none.
    init?(argument: String)

    /// What a valid text looks like, to complete "expected …": `a whole number`.
    static var valueExpectation: String { get }

    /// Every valid text, when the values are a short list (shown in help and errors); empty
    /// otherwise.
    static var allValueStrings: [String] { get }

    /// How help shows the value as a default.
    var defaultValueDescription: String { get }
}

extension ExpressibleByArgument {
    public static var allValueStrings: [String] { [] }

    public static var valueExpectation: String {
        allValueStrings.isEmpty ? "a valid value" : "one of " + allValueStrings.joined(separator: ", ")
    }

    public var defaultValueDescription: String { "\(self)" }
}

extension ExpressibleByArgument where Self: RawRepresentable, Self.RawValue == String {
    public init?(argument: String) { self.init(rawValue: argument) }

    public var defaultValueDescription: String { rawValue }
}

extension ExpressibleByArgument where Self: CaseIterable, Self: RawRepresentable, Self.RawValue == String {
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

extension String: ExpressibleByArgument {
    public init?(argument: String) { self = argument }

    public static var valueExpectation: String { "a text" }
}

extension ExpressibleByArgument where Self: FixedWidthInteger {
    public init?(argument: String) { self.init(argument, radix: 10) }

    public static var valueExpectation: String {
        Self.isSigned ? "a whole number" : "a whole number from 0 to \(Self.max)"
    }
}

extension Int: ExpressibleByArgument {}
extension Int32: ExpressibleByArgument {}
extension Int64: ExpressibleByArgument {}
extension UInt: ExpressibleByArgument {}
extension UInt16: ExpressibleByArgument {}
extension UInt32: ExpressibleByArgument {}
extension UInt64: ExpressibleByArgument {}

extension Double: ExpressibleByArgument {
    public init?(argument: String) {
        guard let value = Double(argument), value.isFinite else { return nil }
        self = value
    }

    public static var valueExpectation: String { "a number" }
}
