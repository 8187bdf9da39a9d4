import Foundation

/// Writes the compact binary encoding used for event payloads and canonical event bytes:
/// unsigned LEB128 varints, zigzag signed varints, length-prefixed bytes and strings.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// An empty writer.
    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Removes everything written, keeping the capacity.
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Appends one byte.
    public mutating func write(byte: UInt8) { bytes.append(byte) }

    /// Appends an unsigned varint.
    public mutating func write(varint value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends a signed integer as a zigzag varint.
    public mutating func write(int value: Int64) {
        write(varint: UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends a big-endian 64-bit integer (fixed width, for canonical bytes).
    public mutating func write(fixed value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends a double as its IEEE 754 bit pattern.
    public mutating func write(double value: Double) { write(fixed: value.bitPattern) }

    /// Appends raw bytes with no length.
    public mutating func write(raw: [UInt8]) { bytes.append(contentsOf: raw) }

    /// Appends raw bytes with no length.
    public mutating func write(raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }

    /// Appends bytes prefixed by their length.
    public mutating func write(bytes value: [UInt8]) {
        write(varint: UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends a UTF-8 string prefixed by its length.
    public mutating func write(string value: String) {
        var value = value
        value.withUTF8 { utf8 in
            write(varint: UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Appends the 16 bytes of a UUID.
    public mutating func write(uuid value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    /// Appends a Boolean as one byte.
    public mutating func write(bool value: Bool) { bytes.append(value ? 1 : 0) }
}

/// Where canonical bytes are written: a ``ByteWriter``, or a buffer sized beforehand.
protocol ByteSink {
    mutating func write(byte: UInt8)
    mutating func write(raw: UnsafeRawBufferPointer)
}

extension ByteSink {
    mutating func write(varint value: UInt64) {
        var value = value
        while value >= 0x80 {
            write(byte: UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        write(byte: UInt8(value))
    }

    mutating func write(fixed value: UInt64) { withUnsafeBytes(of: value.bigEndian) { write(raw: $0) } }

    mutating func write(uuid value: UUID) { withUnsafeBytes(of: value.uuid) { write(raw: $0) } }

    mutating func write(string value: String) {
        var value = value
        value.withUTF8 { utf8 in
            write(varint: UInt64(utf8.count))
            write(raw: UnsafeRawBufferPointer(utf8))
        }
    }

    mutating func write(lengthPrefixed bytes: UnsafeRawBufferPointer) {
        write(varint: UInt64(bytes.count))
        write(raw: bytes)
    }
}

extension ByteWriter: ByteSink {}

/// Writes into a buffer allocated for a known bound (writing past it traps).
struct BufferByteSink: ByteSink {
    private let buffer: UnsafeMutableRawBufferPointer
    /// The bytes written so far.
    private(set) var count = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func write(byte: UInt8) {
        precondition(count < buffer.count, "a write past the buffer's bound")
        buffer[count] = byte
        count += 1
    }

    mutating func write(raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress else { return }
        precondition(buffer.count - count >= raw.count, "a write past the buffer's bound")
        (buffer.baseAddress! + count).copyMemory(from: source, byteCount: raw.count)
        count += raw.count
    }
}

/// Reading past the end of encoded bytes, or bytes that do not encode what was expected.
public struct DecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What could not be read.
    public let message: String
    /// The byte offset where reading failed.
    public let offset: Int

    /// Creates a decoding error.
    public init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "cannot decode \(message) at byte \(offset)" }
}

/// Reads what ``ByteWriter`` wrote.
public struct ByteReader {
    private let bytes: [UInt8]
    /// The read position.
    public private(set) var offset: Int

    /// A reader at the start of `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// Reads one byte.
    public mutating func readByte() throws -> UInt8 {
        guard offset < bytes.count else { throw DecodingError("a byte past the end", offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Reads an unsigned varint; one whose value does not fit 64 bits is an error.
    public mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            // The tenth byte holds bit 63 only: more would be cut off.
            guard shift < 63 || byte <= 1 else { throw DecodingError("a varint beyond 64 bits", offset: offset - 1) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// Reads a zigzag signed varint.
    public mutating func readInt() throws -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// Reads a big-endian 64-bit integer.
    public mutating func readFixed() throws -> UInt64 {
        guard bytes.count - offset >= 8 else { throw DecodingError("a 64-bit integer past the end", offset: offset) }
        var value: UInt64 = 0
        for index in 0..<8 { value = value << 8 | UInt64(bytes[offset + index]) }
        offset += 8
        return value
    }

    /// Reads a double.
    public mutating func readDouble() throws -> Double { Double(bitPattern: try readFixed()) }

    /// Reads `count` raw bytes.
    public mutating func readRaw(count: Int) throws -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else {
            throw DecodingError("\(count) bytes past the end", offset: offset)
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Reads length-prefixed bytes.
    public mutating func readBytes() throws -> [UInt8] {
        try readRaw(count: readLength())
    }

    /// Reads a length prefix that fits in the bytes left.
    private mutating func readLength() throws -> Int {
        let count = try readVarint()
        guard count <= UInt64(bytes.count - offset) else { throw DecodingError("a length of \(count) past the end", offset: offset) }
        return Int(count)
    }

    /// Reads a length-prefixed UTF-8 string.
    public mutating func readString() throws -> String {
        let count = try readLength()
        let start = offset
        let text = bytes.withUnsafeBufferPointer { buffer in
            String(validating: UnsafeBufferPointer(rebasing: buffer[start..<start + count]), as: UTF8.self)
        }
        guard let text else { throw DecodingError("invalid UTF-8 text", offset: start) }
        offset += count
        return text
    }

    /// Reads `count` raw bytes and lends them to `body` without copying them.
    public mutating func withRaw<T>(count: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        guard count >= 0, bytes.count - offset >= count else {
            throw DecodingError("\(count) bytes past the end", offset: offset)
        }
        let start = offset
        offset += count
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
    }

    /// Reads length-prefixed bytes and lends them to `body` without copying them.
    public mutating func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let count = try readLength()
        let start = offset
        offset += count
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
    }

    /// Reads a UUID.
    public mutating func readUUID() throws -> UUID {
        guard bytes.count - offset >= 16 else { throw DecodingError("16 bytes past the end", offset: offset) }
        let start = offset
        offset += 16
        return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(fromByteOffset: start, as: uuid_t.self)) }
    }

    /// Reads a Boolean.
    public mutating func readBool() throws -> Bool {
        let start = offset
        switch try readByte() {
        case 0: return false
        case 1: return true
        default: throw DecodingError("a Boolean", offset: start)
        }
    }
}
