import Foundation
import LedgerCore

/// A JSON body that does not have the shape the protocol requires: the field (as a path such as
/// `events[3].id`) and what is wrong with it.
public struct WireFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The path of the offending field, or empty for the body as a whole.
    public let field: String
    /// What is wrong.
    public let message: String

    /// Creates an error.
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { field.isEmpty ? message : "field '\(field)': \(message)" }
}

/// Reads a value for `field`, turning a ``JSONError`` into a ``WireFormatError`` that names it.
func reading<T>(_ field: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as JSONError {
        throw WireFormatError(field: field(), message: error.message)
    }
}

/// One event on the wire: the envelope of a `Event` in JSON, with its content hash,
/// and in pull responses the server's sequence and chain value.
///
/// ```json
/// {"format":2,"id":"0193…","library":"0193…","device":"anna-phone","deviceSeq":1,
///  "hlc":"115636476084387840","changeBlock":"0193…","object":"0193…","type":"asset.created",
///  "schemaVersion":2,"payload":"AQID","hash":"9f86…","serverSeq":12,"chainHash":"4b22…"}
/// ```
///
/// `hlc` is a decimal string because the packed stamp exceeds 2^53, which JSON numbers in
/// other languages cannot hold; `payload` is base64; `hash` is the lowercase hex SHA-256 of the
/// event's canonical bytes (`Event.contentHash`). `format` is absent for format 1
/// (what the first clients sent); `library` is absent for an unbound event; `keyId` and `nonce`
/// (base64) are present only for a sealed payload.
public struct WireEvent: Sendable, Hashable {
    /// The event.
    public var event: Event
    /// The content hash sent with the event (SHA-256 of the canonical bytes).
    public var hash: [UInt8]
    /// The server's sequence for the event (pull responses only).
    public var serverSequence: Int64?
    /// The server's hash-chain value after the event (pull responses only).
    public var chainHash: [UInt8]?

    /// The event's identifier (its idempotency key).
    public var id: UUID { event.id }
    /// The device that made the event.
    public var device: DeviceID { event.device }
    /// The event's position among its device's events (1, 2, 3, …).
    public var deviceSequence: Int64 { event.deviceSequence }
    /// The hybrid logical clock stamp.
    public var timestamp: HLCTimestamp { event.timestamp }
    /// The event type, such as `asset.created`.
    public var type: String { event.type }
    /// The opaque payload.
    public var payload: [UInt8] { event.payload }

    /// The wire form of `event`, with its content hash computed.
    public init(_ event: Event, serverSequence: Int64? = nil, chainHash: [UInt8]? = nil) {
        self.init(event, hash: event.contentHash, serverSequence: serverSequence, chainHash: chainHash)
    }

    /// The wire form of `event` with a content hash already known.
    public init(_ event: Event, hash: [UInt8], serverSequence: Int64? = nil, chainHash: [UInt8]? = nil) {
        self.event = event
        self.hash = hash
        self.serverSequence = serverSequence
        self.chainHash = chainHash
    }

    /// The wire forms of `events`, hashing them with one reusable digest and buffer (faster
    /// than ``init(_:serverSequence:chainHash:)`` one by one).
    public static func hashing(_ events: [Event]) -> [WireEvent] {
        var canonical = CanonicalEventWriter()
        var digest = SHA256()
        return events.map { WireEvent($0, hash: canonical.contentHash(of: $0, with: &digest)) }
    }

    /// Whether ``hash`` is the SHA-256 of the event's canonical bytes.
    public var hasValidHash: Bool { constantTimeEquals(hash, event.contentHash) }

    /// The longest event type accepted, in bytes.
    public static var maximumTypeLength: Int { Event.maximumTypeLength }

    /// Writes the event as a JSON object.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if event.format != .v1 {
            writer.key("format"); writer.integer(Int64(event.format.rawValue))
        }
        writer.key("id"); writer.uuid(event.id)
        if let library = event.library {
            writer.key("library"); writer.uuid(library)
        }
        writer.key("device"); writer.string(event.device.rawValue)
        writer.key("deviceSeq"); writer.integer(event.deviceSequence)
        writer.key("hlc"); writer.decimalString(event.timestamp.rawValue)
        writer.key("changeBlock"); writer.uuid(event.changeBlock)
        writer.key("object"); writer.uuid(event.object)
        writer.key("type"); writer.string(event.type)
        writer.key("schemaVersion"); writer.integer(Int64(event.schemaVersion))
        if let seal = event.seal {
            writer.key("keyId"); writer.integer(Int64(seal.keyID))
            writer.key("nonce"); writer.base64(seal.nonce)
        }
        writer.key("payload"); writer.base64(event.payload)
        writer.key("hash"); writer.hex(hash)
        if let serverSequence {
            writer.key("serverSeq"); writer.integer(serverSequence)
        }
        if let chainHash {
            writer.key("chainHash"); writer.hex(chainHash)
        }
        writer.endObject()
    }

    /// Reads an event object strictly: any missing or invalid field is an error naming it.
    public static func read(from reader: inout JSONReader, path: @autoclosure () -> String = "event") throws -> WireEvent {
        switch try readReceived(from: &reader, path: path()) {
        case .valid(let event): return event
        case .invalid(_, _, let field, let problem): throw WireFormatError(field: field, message: problem)
        }
    }

    /// Reads an event object as a server receives it. The identifier and device sequence must
    /// be present and valid (otherwise the event could not even be acknowledged, and this
    /// throws); any other invalid value makes the event ``ReceivedEvent/invalid(id:deviceSequence:field:problem:)``
    /// so it can be acknowledged as rejected. A member of the wrong JSON type always throws.
    public static func readReceived(from reader: inout JSONReader, path pathText: @autoclosure () -> String = "event") throws
        -> ReceivedEvent
    {
        var id: UUID?, device: DeviceID?, deviceSequence: Int64?, timestamp: HLCTimestamp?
        var changeBlock: UUID?, object: UUID?, type: String?, schemaVersion: Int?, payload: [UInt8]?, hash: [UInt8]?
        var serverSequence: Int64?, chainHash: [UInt8]?
        var format = Event.Format.v1, library: UUID?, keyID: UInt32?, nonce: [UInt8]?
        var problem: (field: String, message: String)?
        func note(_ field: String, _ message: String) {
            if problem == nil { problem = ("\(pathText()).\(field)", message) }
        }
        try reading(pathText()) { try reader.beginObject() }
        while let key = try reading(pathText(), { try reader.nextKey() }) {
            var field: String { "\(pathText()).\(key)" }
            switch key {
            case "format":
                let value = try reading(field) { try reader.readInt64() }
                if let known = UInt8(exactly: value).flatMap(Event.Format.init(rawValue:)) {
                    format = known
                } else {
                    note(key, "must be 1 or 2")
                }
            case "id":
                id = try reading(field) { try reader.withStringBytes(parseUUID) }
                if id == nil { throw WireFormatError(field: field, message: "not a valid UUID") }
            case "library":
                library = try reading(field) { try reader.withStringBytes(parseUUID) }
                if library == nil || library == Event.unboundLibrary { note(key, "not a valid library UUID") }
            case "device":
                let name = try reading(field) { try reader.readString() }
                if let issue = DeviceID.problem(with: name) { note(key, issue) } else { device = DeviceID(name) }
            case "deviceSeq":
                let value = try reading(field) { try reader.readInt64() }
                guard value >= 1 else { throw WireFormatError(field: field, message: "must be a positive integer") }
                deviceSequence = value
            case "hlc":
                let value = try reading(field) { try reader.withStringBytes(parseDecimal) }
                if let value { timestamp = HLCTimestamp(rawValue: value) } else { note(key, "must be a decimal integer string") }
            case "changeBlock":
                changeBlock = try reading(field) { try reader.withStringBytes(parseUUID) }
                if changeBlock == nil { note(key, "not a valid UUID") }
            case "object":
                object = try reading(field) { try reader.withStringBytes(parseUUID) }
                if object == nil { note(key, "not a valid UUID") }
            case "type":
                let value = try reading(field) { try reader.readString() }
                if let issue = Event.typeProblem(value) { note(key, issue) } else { type = value }
            case "schemaVersion":
                let value = try reading(field) { try reader.readInt64() }
                if (1...Int64(Int32.max)).contains(value) {
                    schemaVersion = Int(value)
                } else {
                    note(key, "must be between 1 and 2147483647")
                }
            case "keyId":
                let value = try reading(field) { try reader.readInt64() }
                if let key = UInt32(exactly: value), key > 0 { keyID = key } else { note(key, "must be between 1 and 4294967295") }
            case "nonce":
                nonce = try reading(field) { try reader.withStringBytes { Base64.decode($0) } }
                if nonce == nil { note(key, "not valid base64") }
            case "payload":
                payload = try reading(field) { try reader.withStringBytes { Base64.decode($0) } }
                if payload == nil { note(key, "not valid base64") }
            case "hash":
                hash = try reading(field) { try reader.withStringBytes { parseHex($0, count: 32) } }
                if hash == nil { note(key, "must be 64 hexadecimal digits") }
            case "serverSeq":
                serverSequence = try reading(field) { try reader.readInt64() }
            case "chainHash":
                chainHash = try reading(field) { try reader.withStringBytes { parseHex($0, count: 32) } }
                if chainHash == nil { note(key, "must be 64 hexadecimal digits") }
            default:
                try reading(field) { try reader.skipValue() }
            }
        }
        guard let id else { throw WireFormatError(field: "\(pathText()).id", message: "is missing") }
        guard let deviceSequence else { throw WireFormatError(field: "\(pathText()).deviceSeq", message: "is missing") }
        if problem == nil, (keyID == nil) != (nonce == nil) {
            note(keyID == nil ? "keyId" : "nonce", "is missing (a sealed payload has both keyId and nonce)")
        }
        if problem == nil, format == .v1, library != nil || keyID != nil {
            note(library != nil ? "library" : "keyId", "is not part of a format 1 event")
        }
        if let problem { return .invalid(id: id, deviceSequence: deviceSequence, field: problem.field, problem: problem.message) }
        let missing = [
            ("device", device == nil), ("hlc", timestamp == nil), ("changeBlock", changeBlock == nil), ("object", object == nil),
            ("type", type == nil), ("schemaVersion", schemaVersion == nil), ("payload", payload == nil), ("hash", hash == nil),
        ].first { $0.1 }
        if let missing {
            return .invalid(id: id, deviceSequence: deviceSequence, field: "\(pathText()).\(missing.0)", problem: "is missing")
        }
        let seal = keyID.map { Event.Seal(keyID: $0, nonce: nonce ?? []) }
        let event = Event(
            id: id, library: library, device: device!, deviceSequence: deviceSequence, timestamp: timestamp!, changeBlock: changeBlock!,
            object: object!, type: type!, schemaVersion: schemaVersion!, seal: seal, payload: payload!, format: format)
        if let issue = event.envelopeProblem {
            return .invalid(id: id, deviceSequence: deviceSequence, field: "\(pathText()).\(issue.field)", problem: issue.message)
        }
        var wire = WireEvent(event, hash: hash!)
        wire.serverSequence = serverSequence
        wire.chainHash = chainHash
        return .valid(wire)
    }

    /// Why `type` cannot be an event type, or nil: 1–128 bytes of printable ASCII.
    public static func typeProblem(_ type: String) -> String? { Event.typeProblem(type) }
}

/// An event as a server reads it from a push: either a complete, well-formed event, or the
/// identifier and device sequence of one with an invalid field.
public enum ReceivedEvent: Sendable, Hashable {
    /// Every field is present and well formed (its hash is not checked yet).
    case valid(WireEvent)
    /// A field is missing or invalid; `field` names it.
    case invalid(id: UUID, deviceSequence: Int64, field: String, problem: String)

    /// The event's identifier.
    public var id: UUID {
        switch self {
        case .valid(let event): return event.id
        case .invalid(let id, _, _, _): return id
        }
    }

    /// The event's device sequence.
    public var deviceSequence: Int64 {
        switch self {
        case .valid(let event): return event.deviceSequence
        case .invalid(_, let sequence, _, _): return sequence
        }
    }
}

// MARK: Field parsers over raw UTF-8

/// Hex digit values by byte; 0xFF marks a byte that is not a hex digit.
private let hexValues: [UInt8] = {
    var table = [UInt8](repeating: 0xFF, count: 256)
    for (index, digit) in "0123456789abcdef".utf8.enumerated() { table[Int(digit)] = UInt8(index) }
    for (index, digit) in "ABCDEF".utf8.enumerated() { table[Int(digit)] = UInt8(10 + index) }
    return table
}()

private func hexValue(_ byte: UInt8) -> UInt8? {
    let value = hexValues[Int(byte)]
    return value == 0xFF ? nil : value
}

/// Parses a UUID in its 36-character form (either case), or returns nil.
public func parseUUID(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
    guard text.count == 36 else { return nil }
    var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    let ok = withUnsafeMutableBytes(of: &raw) { output -> Bool in
        var index = 0
        for position in 0..<16 {
            if position == 4 || position == 6 || position == 8 || position == 10 {
                guard text[index] == UInt8(ascii: "-") else { return false }
                index += 1
            }
            guard let high = hexValue(text[index]), let low = hexValue(text[index + 1]) else { return false }
            output[position] = high << 4 | low
            index += 2
        }
        return true
    }
    return ok ? UUID(uuid: raw) : nil
}

/// Parses exactly `count` bytes written as hex digits (either case), or returns nil.
public func parseHex(_ text: UnsafeBufferPointer<UInt8>, count: Int) -> [UInt8]? {
    guard text.count == count * 2 else { return nil }
    var valid = true
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        hexValues.withUnsafeBufferPointer { table in
            for index in 0..<count {
                let high = table[Int(text[2 * index])], low = table[Int(text[2 * index + 1])]
                if (high | low) > 0x0F { valid = false }
                buffer[index] = high << 4 | (low & 0x0F)
            }
        }
        initialized = count
    }
    return valid ? bytes : nil
}

/// Parses an unsigned decimal integer of 1–20 digits that fits `UInt64`, or returns nil.
public func parseDecimal(_ text: UnsafeBufferPointer<UInt8>) -> UInt64? {
    guard !text.isEmpty, text.count <= 20 else { return nil }
    var value: UInt64 = 0
    for byte in text {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
        if overflow1 || overflow2 { return nil }
        value = sum
    }
    return value
}
