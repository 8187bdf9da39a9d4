import Foundation

/// JSON text that is not well formed, or a value of another type than expected.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public let message: String
    /// The byte offset in the input where reading stopped.
    public let offset: Int

    /// Creates an error.
    public init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}

/// The kind of the next JSON value, from its first byte.
public enum JSONKind: Sendable, Equatable {
    /// `{`.
    case object
    /// `[`.
    case array
    /// `"`.
    case string
    /// A digit or `-`.
    case number
    /// `true` or `false`.
    case bool
    /// `null`.
    case null
}

/// A fast pull reader of JSON text: the caller walks the structure it expects and reads values
/// directly into its own types, without building a tree.
///
/// A reader borrows its input and exists only inside ``read(_:_:)``:
///
/// ```swift
/// let count = try JSONReader.read(body) { reader in
///     var count: Int64 = 0
///     try reader.beginObject()
///     while let key = try reader.nextKey() {
///         if key == "count" { count = try reader.readInt64() } else { try reader.skipValue() }
///     }
///     return count
/// }
/// ```
public struct JSONReader {
    /// The input; valid only inside ``read(_:_:)``.
    public let input: UnsafeBufferPointer<UInt8>
    /// The read position.
    public private(set) var offset = 0
    private var atContainerStart = false

    /// Nesting deeper than this is refused, so hostile input cannot exhaust the stack.
    public static let maximumDepth = 64

    init(input: UnsafeBufferPointer<UInt8>) { self.input = input }

    /// Runs `body` with a reader over `bytes`, then checks that only whitespace follows.
    public static func read<T>(_ bytes: [UInt8], _ body: (inout JSONReader) throws -> T) throws -> T {
        try bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(input: buffer)
            let result = try body(&reader)
            reader.skipWhitespace()
            guard reader.offset == buffer.count else { throw reader.error("unexpected text after the JSON value") }
            return result
        }
    }

    /// An error at the current position.
    public func error(_ message: String) -> JSONError { JSONError(message, offset: offset) }

    mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws {
        skipWhitespace()
        guard offset < input.count, input[offset] == byte else {
            throw error(offset < input.count ? "expected \(what)" : "unexpected end of input, expected \(what)")
        }
        offset += 1
    }

    /// The kind of the next value.
    public mutating func peek() throws -> JSONKind {
        skipWhitespace()
        guard offset < input.count else { throw error("unexpected end of input, expected a value") }
        switch input[offset] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw error("unexpected character")
        }
    }

    /// Whether the next value is of `kind` (without consuming it).
    public mutating func isNext(_ kind: JSONKind) throws -> Bool { try peek() == kind }

    // MARK: Containers

    /// Reads `{`.
    public mutating func beginObject() throws {
        guard try peek() == .object else { throw error("expected an object") }
        offset += 1
        atContainerStart = true
    }

    /// Reads the next member's key and its colon, or the closing `}` (returning nil).
    public mutating func nextKey() throws -> String? {
        skipWhitespace()
        if offset < input.count, input[offset] == UInt8(ascii: "}") {
            offset += 1
            atContainerStart = false
            return nil
        }
        if !atContainerStart { try expect(UInt8(ascii: ","), "',' or '}'") }
        atContainerStart = false
        guard try peek() == .string else { throw error("expected a member name") }
        let key = try readString()
        try expect(UInt8(ascii: ":"), "':'")
        return key
    }

    /// Reads `[`.
    public mutating func beginArray() throws {
        guard try peek() == .array else { throw error("expected an array") }
        offset += 1
        atContainerStart = true
    }

    /// Moves to the next element (returning true), or reads the closing `]` (returning false).
    public mutating func nextElement() throws -> Bool {
        skipWhitespace()
        if offset < input.count, input[offset] == UInt8(ascii: "]") {
            offset += 1
            atContainerStart = false
            return false
        }
        if !atContainerStart { try expect(UInt8(ascii: ","), "',' or ']'") }
        atContainerStart = false
        return true
    }

    // MARK: Scalars

    /// Calls `body` with the UTF-8 bytes of the next string (escapes decoded). The buffer is
    /// valid only inside `body`; no `String` is allocated when the text has no escapes.
    public mutating func withStringBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
        guard try peek() == .string else { throw error("expected a string") }
        atContainerStart = false
        let start = offset + 1
        var index = start
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "\"") {
                offset = index + 1
                return try body(UnsafeBufferPointer(rebasing: input[start..<index]))
            }
            if byte == UInt8(ascii: "\\") {
                offset = start
                let decoded = try decodeEscapedString()
                return try decoded.withUnsafeBufferPointer { try body($0) }
            }
            if byte < 0x20 {
                offset = index
                throw error("control character in a string")
            }
            index += 1
        }
        offset = index
        throw error("unterminated string")
    }

    private mutating func decodeEscapedString() throws -> [UInt8] {
        var output: [UInt8] = []
        while offset < input.count {
            let byte = input[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""): return output
            case UInt8(ascii: "\\"):
                guard offset < input.count else { throw error("unterminated escape") }
                let escape = input[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                case UInt8(ascii: "b"): output.append(0x08)
                case UInt8(ascii: "f"): output.append(0x0C)
                case UInt8(ascii: "n"): output.append(0x0A)
                case UInt8(ascii: "r"): output.append(0x0D)
                case UInt8(ascii: "t"): output.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &output)
                default: throw error("invalid escape")
                }
            case 0..<0x20: throw error("control character in a string")
            default: output.append(byte)
            }
        }
        throw error("unterminated string")
    }

    private mutating func readHex4() throws -> UInt32 {
        guard input.count - offset >= 4 else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    private mutating func appendUnicodeEscape(to output: inout [UInt8]) throws {
        var scalar = try readHex4()
        if (0xD800..<0xDC00).contains(scalar) {
            guard input.count - offset >= 6, input[offset] == UInt8(ascii: "\\"), input[offset + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate in \\u escape")
            }
            offset += 2
            let low = try readHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in \\u escape") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00..<0xE000).contains(scalar) {
            throw error("unpaired surrogate in \\u escape")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
        output.append(contentsOf: UTF8.encode(unicode)!)
    }

    /// Reads a string (valid UTF-8 required).
    public mutating func readString() throws -> String {
        let start = offset
        let text = try withStringBytes { bytes -> String? in
            var ascii = true
            for byte in bytes where byte >= 0x80 {
                ascii = false
                break
            }
            return ascii ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
        }
        guard let text else {
            offset = start
            throw error("invalid UTF-8 in a string")
        }
        return text
    }

    private mutating func numberSpan() throws -> (start: Int, end: Int, isInteger: Bool) {
        guard try peek() == .number else { throw error("expected a number") }
        atContainerStart = false
        let start = offset
        var index = offset
        var isInteger = true
        if input[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[index]) { index += 1 }
        guard index > digitsStart else { throw error("expected digits") }
        if input[digitsStart] == UInt8(ascii: "0"), index - digitsStart > 1 { throw error("leading zero in a number") }
        if index < input.count, input[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let fractionStart = index
            while index < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[index]) { index += 1 }
            guard index > fractionStart else { offset = index; throw error("expected digits after '.'") }
        }
        if index < input.count, input[index] == UInt8(ascii: "e") || input[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < input.count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") { index += 1 }
            let exponentStart = index
            while index < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[index]) { index += 1 }
            guard index > exponentStart else { offset = index; throw error("expected exponent digits") }
        }
        offset = index
        return (start, index, isInteger)
    }

    /// Reads an integer; a fraction, an exponent or a value outside `Int64` is an error.
    public mutating func readInt64() throws -> Int64 {
        let (start, end, isInteger) = try numberSpan()
        guard isInteger else { offset = start; throw error("expected an integer") }
        let negative = input[start] == UInt8(ascii: "-")
        var magnitude: UInt64 = 0
        for index in (negative ? start + 1 : start)..<end {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(input[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { offset = start; throw error("integer out of range") }
            magnitude = sum
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { offset = start; throw error("integer out of range") }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { offset = start; throw error("integer out of range") }
        return Int64(magnitude)
    }

    /// Reads any number as a `Double`.
    public mutating func readDouble() throws -> Double {
        let (start, end, _) = try numberSpan()
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<end]), as: UTF8.self)
        guard let value = Double(text) else { offset = start; throw error("number out of range") }
        return value
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard input.count - offset >= count else { return false }
        for index in 0..<count where input[offset + index] != text.utf8Start[index] { return false }
        offset += count
        return true
    }

    /// Reads `true` or `false`.
    public mutating func readBool() throws -> Bool {
        guard try peek() == .bool else { throw error("expected true or false") }
        atContainerStart = false
        if literal("true") { return true }
        if literal("false") { return false }
        throw error("expected true or false")
    }

    /// Reads `null`.
    public mutating func readNull() throws {
        guard try peek() == .null, literal("null") else { throw error("expected null") }
        atContainerStart = false
    }

    /// Skips the next value, whatever it is.
    public mutating func skipValue() throws { _ = try readValue(depth: 0, keep: false) }

    /// Reads the next value as a tree.
    public mutating func readValue() throws -> JSONValue { try readValue(depth: 0, keep: true) }

    private mutating func readValue(depth: Int, keep: Bool) throws -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        switch try peek() {
        case .null:
            try readNull()
            return .null
        case .bool: return .bool(try readBool())
        case .string:
            if keep { return .string(try readString()) }
            try withStringBytes { _ in }
            return .null
        case .number:
            let start = offset
            let (_, _, isInteger) = try numberSpan()
            offset = start
            if isInteger, let value = try? readInt64() { return .integer(value) }
            offset = start
            return .double(try readDouble())
        case .array:
            try beginArray()
            var elements: [JSONValue] = []
            while try nextElement() {
                let element = try readValue(depth: depth + 1, keep: keep)
                if keep { elements.append(element) }
            }
            return .array(elements)
        case .object:
            try beginObject()
            var members: [String: JSONValue] = [:]
            while let key = try nextKey() {
                let member = try readValue(depth: depth + 1, keep: keep)
                if keep { members[key] = member }
            }
            return .object(members)
        }
    }
}

/// A JSON value as a tree: for small bodies, errors and tests. Hot paths read with
/// ``JSONReader`` and write with ``JSONWriter`` instead.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without fraction or exponent that fits `Int64`.
    case integer(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object (member order is not kept; writing sorts the keys).
    case object([String: JSONValue])

    /// Parses JSON text.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONReader.read(bytes) { try $0.readValue() }
    }

    /// Parses JSON text.
    public static func parse(_ text: String) throws -> JSONValue { try parse(Array(text.utf8)) }

    /// The member named `key` of an object, or nil.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, or nil for other values.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The integer, or nil for other values.
    public var int64Value: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }

    /// The Boolean, or nil for other values.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The elements, or nil for other values.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Compact JSON text with object keys sorted.
    public var serialized: [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }
}
