import Foundation

/// An HTTP method such as `GET` or `POST`.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method token as sent on the request line, for example `"GET"`.
    public let rawValue: String

    /// Creates a method from its token, for example `HTTPMethod(rawValue: "PATCH")`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `GET`: read a resource.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`: read only the headers of a resource.
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`: send data to be processed.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`: store a resource.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `DELETE`: remove a resource.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `PATCH`: change part of a resource.
    public static let patch = HTTPMethod(rawValue: "PATCH")

    /// The method token.
    public var description: String { rawValue }
}

/// An ordered list of HTTP header fields, looked up by name without regard to case.
///
/// The values of credentials (`Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`) are
/// replaced by `<redacted>` in ``description``, ``debugDescription`` and in `dump` output, so headers
/// can be logged safely.
///
/// ```swift
/// var headers: HTTPHeaders = ["Content-Type": "application/json"]
/// headers["authorization"] = "Bearer …"
/// headers["AUTHORIZATION"]  // "Bearer …"
/// ```
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// One header field: a name and its value.
    public struct Field: Sendable, Equatable {
        /// The name as it was given or received, for example `"Content-Type"`.
        public var name: String
        /// The value, without surrounding whitespace.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The names whose values are secrets and never appear in descriptions.
    static let sensitiveNames: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    private var fields: [Field]

    /// Creates a list of fields, in the given order.
    public init(_ fields: [Field] = []) { self.fields = fields }

    /// Creates a list from name-value pairs, in the given order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The value of the first field with this name (any case), or `nil`.
    ///
    /// Setting a value replaces every field with this name; setting `nil` removes them.
    public subscript(name: String) -> String? {
        get { fields.first { Self.sameName($0.name, name) }?.value }
        set {
            guard let newValue else {
                remove(name: name)
                return
            }
            guard let index = fields.firstIndex(where: { Self.sameName($0.name, name) }) else {
                fields.append(Field(name: name, value: newValue))
                return
            }
            fields[index].value = newValue
            fields = fields.enumerated().filter { $0.offset == index || !Self.sameName($0.element.name, name) }.map(\.element)
        }
    }

    /// The values of every field with this name (any case), in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Whether a field with this name (any case) is present.
    public func contains(_ name: String) -> Bool { fields.contains { Self.sameName($0.name, name) } }

    /// Appends a field, keeping any existing fields with the same name.
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    /// Removes every field with this name (any case).
    public mutating func remove(name: String) { fields.removeAll { Self.sameName($0.name, name) } }

    /// The number of fields.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// Iterates over the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The fields as `Name: value` lines, with credentials redacted.
    public var description: String {
        "[" + fields.map { "\($0.name): \(Self.displayValue($0))" }.joined(separator: ", ") + "]"
    }

    /// Same as ``description``: credentials are redacted.
    public var debugDescription: String { description }

    /// A mirror that shows the fields with credentials redacted.
    public var customMirror: Mirror {
        Mirror(self, children: fields.map { (label: $0.name, value: Self.displayValue($0) as Any) }, displayStyle: .dictionary)
    }

    static func sameName(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && lhs.lowercased() == rhs.lowercased()
    }

    static func isSensitive(_ name: String) -> Bool { sensitiveNames.contains(name.lowercased()) }

    private static func displayValue(_ field: Field) -> String { isSensitive(field.name) ? "<redacted>" : field.value }
}

extension HTTPHeaders {
    /// The first byte of a 206 answer's `Content-Range: bytes N-M/T` (`value`), or nil for
    /// another form.
    package static func contentRangeStart(_ value: String) -> Int64? {
        guard value.lowercased().hasPrefix("bytes "), let dash = value.firstIndex(of: "-") else { return nil }
        return Int64(value[value.index(value.startIndex, offsetBy: 6)..<dash].trimmingCharacters(in: .whitespaces))
    }
}
