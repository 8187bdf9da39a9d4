import Foundation
import LedgerCore

/// A fast writer of compact JSON text into a byte buffer.
///
/// The writer tracks only whether a comma is due, so callers write the structure in order:
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("status"); writer.string("ok")
/// writer.key("count"); writer.integer(3)
/// writer.endObject()
/// let body = writer.bytes   // {"status":"ok","count":3}
/// ```
public struct JSONWriter: Sendable {
    /// The UTF-8 JSON text written so far.
    public private(set) var bytes: [UInt8]
    private var needsComma = false

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Removes everything written, keeping the capacity.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    /// Writes `{`.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Writes `}`.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Writes `[`.
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Writes `]`.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an array of `elements`, each written by `element`.
    mutating func array<Elements: Sequence>(_ elements: Elements, _ element: (inout JSONWriter, Elements.Element) -> Void) {
        beginArray()
        for value in elements { element(&self, value) }
        endArray()
    }

    /// Writes an object key and the colon; `name` must need no escaping (the protocol's keys).
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes an object key given at run time, escaped as needed.
    public mutating func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes a string value, escaping quotes, backslashes and control characters.
    public mutating func string(_ value: String) {
        separate()
        var value = value
        value.withUTF8 { appendEscaped($0) }
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var clean = true
        for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            clean = false
            break
        }
        if clean {
            bytes.append(contentsOf: utf8)
        } else {
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0..<0x20:
                    bytes.append(contentsOf: Array("\\u00".utf8))
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0xF)])
                default: bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Writes a signed integer.
    public mutating func integer(_ value: Int64) {
        separate()
        appendDecimal(value)
    }

    /// Writes an unsigned integer as a decimal string (for values that may exceed 2^53, which
    /// JSON readers in other languages would round).
    public mutating func decimalString(_ value: UInt64) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        appendDecimal(value)
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendDecimal(_ value: Int64) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            appendDecimal(value.magnitude)
        } else {
            appendDecimal(UInt64(value))
        }
    }

    private mutating func appendDecimal(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes of scratch space
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { scratch in
            while rest > 0 {
                scratch[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(scratch[index]) }
        }
    }

    /// Writes a floating-point number (`null` when not finite, which JSON cannot express).
    public mutating func number(_ value: Double) {
        separate()
        if !value.isFinite {
            bytes.append(contentsOf: Array("null".utf8))
        } else if value == value.rounded(), abs(value) < 9e15 {
            appendDecimal(Int64(value))
        } else {
            bytes.append(contentsOf: Array("\(value)".utf8))
        }
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? [0x74, 0x72, 0x75, 0x65] : [0x66, 0x61, 0x6C, 0x73, 0x65])
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
    }

    /// Appends `count` bytes written by `body` into uninitialized space, without per-byte checks.
    private mutating func appendBulk(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Void) {
        bytes.append(contentsOf: repeatElement(0, count: count))
        let start = bytes.count - count
        bytes.withUnsafeMutableBufferPointer { body($0.baseAddress! + start) }
    }

    /// Writes a UUID as its canonical 36-character uppercase string.
    public mutating func uuid(_ value: UUID) {
        separate()
        appendBulk(38) { output in
            output[0] = UInt8(ascii: "\"")
            output[37] = UInt8(ascii: "\"")
            Self.upperHexDigits.withUnsafeBufferPointer { digits in
                withUnsafeBytes(of: value.uuid) { raw in
                    var position = 1
                    for index in 0..<16 {
                        if index == 4 || index == 6 || index == 8 || index == 10 {
                            output[position] = UInt8(ascii: "-")
                            position += 1
                        }
                        output[position] = digits[Int(raw[index] >> 4)]
                        output[position + 1] = digits[Int(raw[index] & 0xF)]
                        position += 2
                    }
                }
            }
        }
    }

    static let upperHexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Writes bytes as a lowercase hexadecimal string.
    public mutating func hex(_ value: [UInt8]) {
        separate()
        appendBulk(value.count * 2 + 2) { output in
            output[0] = UInt8(ascii: "\"")
            output[value.count * 2 + 1] = UInt8(ascii: "\"")
            Self.hexDigits.withUnsafeBufferPointer { digits in
                for (index, byte) in value.enumerated() {
                    output[1 + 2 * index] = digits[Int(byte >> 4)]
                    output[2 + 2 * index] = digits[Int(byte & 0xF)]
                }
            }
        }
    }

    /// Writes bytes as a standard, padded base64 string.
    public mutating func base64(_ value: [UInt8]) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        Base64.encode(value, into: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Writes a parsed JSON value.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .integer(let number): integer(number)
        case .double(let real): number(real)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                key(name)
                self.value(member)
            }
            endObject()
        }
    }
}
