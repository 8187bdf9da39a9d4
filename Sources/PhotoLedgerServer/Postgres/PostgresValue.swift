import Foundation
import LedgerCore

/// The PostgreSQL types the server store binds and reads, by their type identifiers (OIDs).
enum PostgresType: UInt32, Sendable, Hashable {
    /// `boolean`.
    case bool = 16
    /// `bytea`: binary data.
    case bytea = 17
    /// `bigint`.
    case int8 = 20
    /// `integer`.
    case int4 = 23
    /// `text`.
    case text = 25
    /// `boolean[]`.
    case boolArray = 1000
    /// `bytea[]`.
    case byteaArray = 1001
    /// `text[]`.
    case textArray = 1009
    /// `bigint[]`.
    case int8Array = 1016

    /// The array type of this element type.
    var arrayType: PostgresType {
        switch self {
        case .bool: return .boolArray
        case .bytea: return .byteaArray
        case .int8: return .int8Array
        case .text: return .textArray
        default: return self
        }
    }
}

/// A statement parameter, sent in PostgreSQL's binary format: never interpolated into SQL.
enum PostgresValue: Sendable, Hashable {
    /// A `bigint`.
    case int64(Int64)
    /// An `integer`.
    case int32(Int32)
    /// A `text`.
    case text(String)
    /// A `bytea`.
    case bytes([UInt8])
    /// A `boolean`.
    case bool(Bool)
    /// SQL NULL of a type.
    case null(PostgresType)
    /// A one-dimensional array of `element` values (each one of that type, or its null).
    indirect case array(element: PostgresType, [PostgresValue])

    /// Bytes, or NULL of type `bytea`.
    static func optionalBytes(_ value: [UInt8]?) -> PostgresValue { value.map(PostgresValue.bytes) ?? .null(.bytea) }

    /// The 16 bytes of an identifier, as `bytea`.
    static func uuid(_ value: UUID) -> PostgresValue { .bytes(value.bytes) }

    /// The value's type.
    var type: PostgresType {
        switch self {
        case .int64: return .int8
        case .int32: return .int4
        case .text: return .text
        case .bytes: return .bytea
        case .bool: return .bool
        case .null(let type): return type
        case .array(let element, _): return element.arrayType
        }
    }

    /// Appends the value's binary form to `buffer`; returns false (appending nothing) for NULL.
    func encode(into buffer: inout [UInt8]) -> Bool {
        switch self {
        case .int64(let value): buffer.appendBigEndian(UInt64(bitPattern: value))
        case .int32(let value): buffer.appendBigEndian(UInt32(bitPattern: value))
        case .text(let value): buffer.append(contentsOf: value.utf8)
        case .bytes(let value): buffer.append(contentsOf: value)
        case .bool(let value): buffer.append(value ? 1 : 0)
        case .null: return false
        case .array(let element, let values):
            // array_send: dimensions, has-nulls flag, element type, then (length, lower bound)
            // per dimension and (length or -1, bytes) per element.
            let hasNulls = values.contains { if case .null = $0 { return true } else { return false } }
            buffer.appendBigEndian(UInt32(values.isEmpty ? 0 : 1))
            buffer.appendBigEndian(UInt32(hasNulls ? 1 : 0))
            buffer.appendBigEndian(element.rawValue)
            if !values.isEmpty {
                buffer.appendBigEndian(UInt32(values.count))
                buffer.appendBigEndian(UInt32(1))
            }
            for value in values {
                let lengthAt = buffer.count
                buffer.appendBigEndian(UInt32(0))
                if value.encode(into: &buffer) {
                    let length = UInt32(buffer.count - lengthAt - 4)
                    withUnsafeBytes(of: length.bigEndian) { buffer.replaceSubrange(lengthAt..<lengthAt + 4, with: $0) }
                } else {
                    withUnsafeBytes(of: UInt32.max.bigEndian) { buffer.replaceSubrange(lengthAt..<lengthAt + 4, with: $0) }
                }
            }
        }
        return true
    }
}

extension [UInt8] {
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
