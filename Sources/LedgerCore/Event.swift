import Foundation

/// One immutable entry of the log: an envelope that the store, the sync engine and the server
/// understand, around a payload that only the library reads.
public struct Event: Sendable, Hashable {
    /// The event's identifier: a time-ordered UUIDv7, and the idempotency key everywhere.
    public var id: UUID
    /// The device that made the event.
    public var device: DeviceID
    /// The position of the event among its device's events: 1, 2, 3, … with no gaps.
    public var deviceSequence: Int64
    /// The hybrid logical clock stamp given when the event was made.
    public var timestamp: HLCTimestamp
    /// The change block the event belongs to; every event of one block shares it.
    public var changeBlock: UUID
    /// The object the event is about (an asset or an album).
    public var object: UUID
    /// The event type, for example `asset.created`.
    public var type: String
    /// The version of the payload encoding for this type.
    public var schemaVersion: Int
    /// The encoded payload.
    public var payload: [UInt8]

    /// Creates an event envelope.
    public init(
        id: UUID, device: DeviceID, deviceSequence: Int64, timestamp: HLCTimestamp, changeBlock: UUID,
        object: UUID, type: String, schemaVersion: Int, payload: [UInt8]
    ) {
        self.id = id
        self.device = device
        self.deviceSequence = deviceSequence
        self.timestamp = timestamp
        self.changeBlock = changeBlock
        self.object = object
        self.type = type
        self.schemaVersion = schemaVersion
        self.payload = payload
    }

    /// Writes the canonical bytes of the event, the input of every hash over it. The bytes are
    /// the same on every device and on the server: fixed field order, fixed-width integers,
    /// length-prefixed text and payload.
    public func writeCanonicalBytes(into writer: inout ByteWriter) {
        writer.write(byte: Self.canonicalFormatVersion)
        writer.write(uuid: id)
        writer.write(string: device.rawValue)
        writer.write(fixed: UInt64(bitPattern: deviceSequence))
        writer.write(fixed: timestamp.rawValue)
        writer.write(uuid: changeBlock)
        writer.write(uuid: object)
        writer.write(string: type)
        writer.write(varint: UInt64(schemaVersion))
        writer.write(bytes: payload)
    }

    /// The version byte that starts canonical bytes.
    public static let canonicalFormatVersion: UInt8 = 1

    /// Reads an event from its canonical bytes (as ``writeCanonicalBytes(into:)`` writes them)
    /// at the reader's position. The fields are read as they are: checking that a device name,
    /// type or sequence is acceptable is the caller's part.
    ///
    /// - Throws: ``DecodingError`` for another format version, bytes that end early, or text that
    ///   is not UTF-8.
    public static func readCanonical(from reader: inout ByteReader) throws -> Event {
        let start = reader.offset
        let version = try reader.readByte()
        guard version == canonicalFormatVersion else {
            throw DecodingError("canonical event bytes of format version \(version) (this build reads version 1)", offset: start)
        }
        let id = try reader.readUUID()
        let device = DeviceID(try reader.readString())
        let deviceSequence = Int64(bitPattern: try reader.readFixed())
        let timestamp = HLCTimestamp(rawValue: try reader.readFixed())
        let changeBlock = try reader.readUUID()
        let object = try reader.readUUID()
        let type = try reader.readString()
        let versionOffset = reader.offset
        let schemaVersion = try reader.readVarint()
        guard schemaVersion <= UInt64(Int32.max) else {
            throw DecodingError("a schema version of \(schemaVersion)", offset: versionOffset)
        }
        let payload = try reader.readBytes()
        return Event(
            id: id, device: device, deviceSequence: deviceSequence, timestamp: timestamp, changeBlock: changeBlock, object: object,
            type: type, schemaVersion: Int(schemaVersion), payload: payload)
    }

    /// The canonical bytes of the event.
    public var canonicalBytes: [UInt8] {
        var writer = ByteWriter(capacity: 96 + payload.count)
        writeCanonicalBytes(into: &writer)
        return writer.bytes
    }

    /// SHA-256 of the canonical bytes: the event's content hash, which a server can check
    /// without reading the payload.
    public var contentHash: [UInt8] { SHA256.hash(canonicalBytes) }
}

/// Computes hash-chain values: `SHA-256(previous || canonical bytes)`, reusing one digest context.
public struct HashChain: ~Copyable {
    private var digest = SHA256()
    private var writer = ByteWriter(capacity: 512)
    /// The chain value after the last event linked.
    public private(set) var head: [UInt8]

    /// The 32 zero bytes that start every chain.
    public static let origin = [UInt8](repeating: 0, count: 32)

    /// A chain that continues from `head`.
    public init(head: [UInt8] = HashChain.origin) { self.head = head }

    /// The chain value `event` would have if linked after the current head; the head is unchanged.
    public mutating func hash(linking event: Event) -> [UInt8] {
        writer.removeAll()
        event.writeCanonicalBytes(into: &writer)
        digest.update(head)
        let canonical = writer.bytes
        canonical.withUnsafeBytes { digest.update($0) }
        return digest.finalizeAndReset()
    }

    /// Moves the head to a value returned by ``hash(linking:)``.
    public mutating func advance(to hash: [UInt8]) { head = hash }

    /// Links `event` after the current head and returns the new head.
    public mutating func link(_ event: Event) -> [UInt8] {
        let next = hash(linking: event)
        head = next
        return next
    }
}
