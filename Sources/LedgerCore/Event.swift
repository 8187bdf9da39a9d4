import Foundation

/// One immutable entry of the log: an envelope that the store, the sync engine and the server
/// understand, around a payload that only the library reads.
///
/// An event's canonical bytes (``writeCanonicalBytes(into:)``) are what both hash chains and the
/// content hash cover. Two formats exist:
///
/// - Format 1, written by the first versions: the envelope without library binding or seal.
/// - Format 2, written by this build: the envelope also names the library the event belongs to
///   (so it cannot be replayed into another library) and, for a payload sealed with end-to-end
///   encryption, the key and nonce it was sealed with. The envelope up to the payload is the
///   associated data of the seal, so the server can check identifiers, sequences, scopes and
///   chains without reading the payload, and a sealed payload cannot be moved to another envelope.
///
/// Events keep the format they were made in forever: their hashes cannot change.
public struct Event: Sendable, Hashable {
    /// The layout of an event's canonical bytes.
    public enum Format: UInt8, Sendable, Hashable, Comparable {
        /// The first layout: no library binding, no seal.
        case v1 = 1
        /// Library binding and seal in the envelope.
        case v2 = 2

        /// The format this build writes.
        public static let current = Format.v2

        public static func < (lhs: Format, rhs: Format) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// How a sealed payload was encrypted: which key, and the nonce.
    public struct Seal: Sendable, Hashable {
        /// The key's identifier within the library (1, 2, …: 0 means a plain payload).
        public var keyID: UInt32
        /// A nonce of up to ``inlineNonceLength`` bytes, held in the seal itself: sealed events
        /// are decoded, copied and stored by the ten thousand, and a nonce of their own on the
        /// heap cost each an allocation and every copy a reference count.
        private var inline: (UInt64, UInt64, UInt64) = (0, 0, 0)
        private var inlineCount: UInt8 = 0
        /// A longer nonce (only a damaged or hostile envelope carries one), or nil.
        private var spilled: [UInt8]?

        /// The longest nonce accepted, in bytes.
        public static let maximumNonceLength = 64
        /// The longest nonce held without an allocation: XChaCha20-Poly1305's, which this build
        /// seals with.
        static let inlineNonceLength = 24

        /// A seal by key `keyID` with `nonce`.
        public init(keyID: UInt32, nonce: [UInt8]) {
            self.keyID = keyID
            nonce.withUnsafeBytes { setNonce($0) }
        }

        /// A seal by key `keyID` with the nonce `nonce` (copied).
        public init(keyID: UInt32, nonce: UnsafeRawBufferPointer) {
            self.keyID = keyID
            setNonce(nonce)
        }

        /// The nonce the payload was sealed with.
        public var nonce: [UInt8] {
            get { withNonce { Array($0) } }
            set { newValue.withUnsafeBytes { setNonce($0) } }
        }

        /// The nonce's length, in bytes.
        public var nonceCount: Int { spilled?.count ?? Int(inlineCount) }

        /// Lends the nonce's bytes to `body` without copying them.
        public func withNonce<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            if let spilled { return try spilled.withUnsafeBytes(body) }
            return try withUnsafeBytes(of: inline) { try body(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(inlineCount)))) }
        }

        private mutating func setNonce(_ bytes: UnsafeRawBufferPointer) {
            inline = (0, 0, 0)
            if bytes.count <= Self.inlineNonceLength {
                spilled = nil
                inlineCount = UInt8(bytes.count)
                withUnsafeMutableBytes(of: &inline) { $0.copyMemory(from: bytes) }
            } else {
                spilled = Array(bytes)
                inlineCount = 0
            }
        }

        public static func == (lhs: Seal, rhs: Seal) -> Bool {
            lhs.keyID == rhs.keyID && lhs.withNonce { left in rhs.withNonce { right in left.elementsEqual(right) } }
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(keyID)
            hasher.combine(nonceCount)
            withNonce { hasher.combine(bytes: $0) }
        }
    }

    /// The layout of the event's canonical bytes.
    public var format: Format
    /// The event's identifier: a time-ordered UUIDv7, and the idempotency key everywhere.
    public var id: UUID
    /// The library the event belongs to, or nil for an unbound event (format 1, or made before
    /// its library learned its identifier).
    public var library: UUID?
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
    /// The event type, for example `asset.created` (see ``EventType``).
    public var type: String
    /// The version of the payload encoding for this type.
    public var schemaVersion: Int
    /// How the payload is sealed, or nil for a plain payload.
    public var seal: Seal?
    /// The encoded payload (sealed when ``seal`` is set).
    public var payload: [UInt8]

    /// Creates an event envelope. A format-1 event has neither library nor seal.
    public init(
        id: UUID, library: UUID? = nil, device: DeviceID, deviceSequence: Int64, timestamp: HLCTimestamp, changeBlock: UUID,
        object: UUID, type: String, schemaVersion: Int, seal: Seal? = nil, payload: [UInt8], format: Format = .current
    ) {
        precondition(format == .v2 || (library == nil && seal == nil), "a format-1 event has no library binding and no seal")
        self.format = format
        self.id = id
        self.library = library
        self.device = device
        self.deviceSequence = deviceSequence
        self.timestamp = timestamp
        self.changeBlock = changeBlock
        self.object = object
        self.type = type
        self.schemaVersion = schemaVersion
        self.seal = seal
        self.payload = payload
    }

    /// Writes the canonical bytes of the event, the input of every hash over it. The bytes are
    /// the same on every device and on the server: fixed field order, fixed-width integers,
    /// length-prefixed text and payload.
    ///
    /// Format 1: `01 id device deviceSeq hlc changeBlock object type schemaVersion payload`.
    /// Format 2: `02 id library device deviceSeq hlc changeBlock object type schemaVersion keyID
    /// nonce payload`, where an unbound library is 16 zero bytes and a plain payload has key 0
    /// and an empty nonce.
    public func writeCanonicalBytes(into writer: inout ByteWriter) {
        writeEnvelope(into: &writer)
        writer.write(bytes: payload)
    }

    /// Writes the canonical bytes up to the payload: the associated data a seal covers.
    public func writeEnvelope(into writer: inout ByteWriter) { writeEnvelope(to: &writer) }

    /// Writes the envelope into any sink (a growing writer, or a buffer of its bound's size).
    func writeEnvelope<Sink: ByteSink>(to sink: inout Sink) {
        sink.write(byte: format.rawValue)
        sink.write(uuid: id)
        if format == .v2 { sink.write(uuid: library ?? Self.unboundLibrary) }
        sink.write(string: device.rawValue)
        sink.write(fixed: UInt64(bitPattern: deviceSequence))
        sink.write(fixed: timestamp.rawValue)
        sink.write(uuid: changeBlock)
        sink.write(uuid: object)
        sink.write(string: type)
        sink.write(varint: UInt64(schemaVersion))
        if format == .v2 {
            sink.write(varint: UInt64(seal?.keyID ?? 0))
            if let seal { seal.withNonce { sink.write(lengthPrefixed: $0) } } else { sink.write(varint: 0) }
        }
    }

    /// The envelope bytes a seal covers as associated data (``writeEnvelope(into:)``).
    public var envelopeBytes: [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writeEnvelope(into: &writer)
        return writer.bytes
    }

    /// Lends the envelope bytes (``envelopeBytes``) to `body`, written into a temporary buffer
    /// (on the stack) rather than an array: a pull opens every sealed payload with them.
    public func withEnvelopeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        // Fixed fields, five varints of at most 10 bytes, and the texts and nonce.
        let bound = 1 + 16 + 16 + 8 + 8 + 16 + 16 + 5 * 10 + device.rawValue.utf8.count + type.utf8.count + (seal?.nonceCount ?? 0)
        return try withUnsafeTemporaryAllocation(byteCount: bound, alignment: 8) { buffer in
            var sink = BufferByteSink(buffer)
            writeEnvelope(to: &sink)
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<sink.count]))
        }
    }

    /// The library identifier written for an unbound format-2 event: 16 zero bytes.
    public static let unboundLibrary = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// Reads an event from its canonical bytes (as ``writeCanonicalBytes(into:)`` writes them)
    /// at the reader's position, in either format. Every field is checked as a peer's input must
    /// be (``envelopeProblem``): nothing read here can trap later.
    ///
    /// - Parameters:
    ///   - reader: The bytes, read from its position on.
    ///   - validating: Whether to check the envelope's fields (``envelopeProblem``); a caller
    ///     that reports each field's problem by name checks them itself.
    /// - Throws: ``DecodingError`` for an unknown format, bytes that end early, text that is not
    ///   UTF-8, or a field out of its range.
    public static func readCanonical(from reader: inout ByteReader, validating: Bool = true) throws -> Event {
        let start = reader.offset
        let version = try reader.readByte()
        guard let format = Format(rawValue: version) else {
            throw DecodingError("canonical event bytes of format \(version) (this build reads formats 1 and 2)", offset: start)
        }
        let id = try reader.readUUID()
        let library = format == .v2 ? try reader.readUUID() : nil
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
        var seal: Seal?
        if format == .v2 {
            let keyOffset = reader.offset
            let keyID = try reader.readVarint()
            guard keyID <= UInt64(UInt32.max) else { throw DecodingError("a key identifier of \(keyID)", offset: keyOffset) }
            seal = try reader.withBytes { nonce in
                guard keyID != 0 else {
                    guard nonce.isEmpty else { throw DecodingError("a nonce for a plain payload", offset: keyOffset) }
                    return nil
                }
                return Seal(keyID: UInt32(keyID), nonce: nonce)
            }
        }
        let payload = try reader.readBytes()
        let event = Event(
            id: id, library: library == unboundLibrary ? nil : library, device: device, deviceSequence: deviceSequence,
            timestamp: timestamp, changeBlock: changeBlock, object: object, type: type, schemaVersion: Int(schemaVersion), seal: seal,
            payload: payload, format: format)
        if validating, let problem = event.envelopeProblem {
            throw DecodingError("an event envelope whose \(problem.field) \(problem.message)", offset: start)
        }
        return event
    }

    /// The first envelope field that a peer may not send, with what is wrong with it, or nil
    /// when every field is acceptable: a valid device name, a positive device sequence, a type
    /// of 1–128 printable ASCII characters, a schema version from 1, a nonce of at most
    /// ``Seal/maximumNonceLength`` bytes.
    public var envelopeProblem: (field: String, message: String)? {
        if let problem = DeviceID.problem(with: device.rawValue) { return ("device", problem) }
        if deviceSequence < 1 { return ("deviceSeq", "must be a positive integer") }
        if let problem = Self.typeProblem(type) { return ("type", problem) }
        if !(1...Int(Int32.max)).contains(schemaVersion) { return ("schemaVersion", "must be between 1 and 2147483647") }
        if let seal {
            if seal.keyID == 0 { return ("keyId", "must be positive for a sealed payload") }
            if seal.nonceCount > Seal.maximumNonceLength { return ("nonce", "must be at most \(Seal.maximumNonceLength) bytes") }
        }
        if format == .v1 && (library != nil || seal != nil) { return ("format", "1 has no library binding and no seal") }
        return nil
    }

    /// The longest event type accepted, in bytes.
    public static let maximumTypeLength = 128

    /// Why `type` cannot be an event type, or nil: 1–128 bytes of printable ASCII.
    public static func typeProblem(_ type: String) -> String? {
        let utf8 = type.utf8
        guard !utf8.isEmpty, utf8.count <= maximumTypeLength, utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be 1 to \(maximumTypeLength) printable ASCII characters"
        }
        return nil
    }

    /// The canonical bytes of the event.
    public var canonicalBytes: [UInt8] {
        var writer = ByteWriter(capacity: 128 + payload.count)
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
