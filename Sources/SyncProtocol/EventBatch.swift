import Foundation
import LedgerCore

/// The binary form of a push (`application/vnd.photoledger.event-batch`): the same content as a
/// JSON ``PushRequest``, each event as its canonical bytes, the bytes its content hash covers, so
/// neither side converts identifiers, hashes and payloads to text and back, and the server checks
/// a hash over the bytes as they arrived. A server that does not know it answers 415, and the
/// client pushes JSON.
///
/// Layout (varints are unsigned LEB128):
///
/// | bytes | content |
/// |---|---|
/// | 4 | magic `PLEB` |
/// | 1 | format version, 1 |
/// | varint + bytes | the pushing device's name |
/// | varint | the number of events |
///
/// then for each event, in device-sequence order:
///
/// | bytes | content |
/// |---|---|
/// | 32 | the content hash: SHA-256 of the canonical bytes |
/// | varint | the length of the canonical bytes |
/// | length | the canonical bytes (`Event.writeCanonicalBytes(into:)`) |
///
/// The body ends with the last event: trailing bytes are an error.
public enum EventBatch {
    /// The media type of the binary form.
    public static let contentType = "application/vnd.photoledger.event-batch"

    static let magic: [UInt8] = Array("PLEB".utf8)
    static let version: UInt8 = 1
    /// The smallest possible encoded event: a hash, a one-byte length and the fixed part of the
    /// canonical bytes (empty device, type and payload).
    static let minimumEventSize = 32 + 1 + (1 + 16 + 1 + 8 + 8 + 16 + 16 + 1 + 1 + 1)

    /// Encodes a push of `events` by `device`, hashing each event's canonical bytes once.
    public static func encode(device: DeviceID, events: [Event]) -> [UInt8] {
        var writer = ByteWriter(capacity: 16 + events.count * 220)
        writer.write(raw: magic)
        writer.write(byte: version)
        writer.write(bytes: Array(device.rawValue.utf8))
        writer.write(varint: UInt64(events.count))
        var scratch = ByteWriter(capacity: 512)
        var digest = SHA256()
        for event in events {
            scratch.removeAll()
            event.writeCanonicalBytes(into: &scratch)
            scratch.bytes.withUnsafeBytes { digest.update($0) }
            writer.write(raw: digest.finalizeAndReset())
            writer.write(bytes: scratch.bytes)
        }
        return writer.bytes
    }

    /// Decodes a push as the server reads it. An event whose envelope has an invalid field (a
    /// device name, a device sequence, a type, a schema version) is ``ReceivedEvent/invalid(id:deviceSequence:field:problem:)``,
    /// as in JSON, so it consumes its sequence; a body that is not a batch is an error.
    ///
    /// The content hashes are read, not checked here.
    ///
    /// - Throws: ``WireFormatError`` naming the event and field, or the body, that is malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ReceivedPush {
        var reader = ByteReader(bytes)
        func body<T>(_ what: String, _ read: (inout ByteReader) throws -> T) throws -> T {
            do { return try read(&reader) } catch let error as DecodingError {
                throw WireFormatError(field: "", message: "not an event batch: \(what) (\(error))")
            }
        }
        let magic = try body("it does not start with 'PLEB'") { try $0.readRaw(count: 4) }
        guard magic == Self.magic else { throw WireFormatError(field: "", message: "not an event batch: it does not start with 'PLEB'") }
        let version = try body("no format version") { try $0.readByte() }
        guard version == Self.version else {
            throw WireFormatError(field: "", message: "event batch format version \(version) is not supported (this build reads version 1)")
        }
        let name = String(decoding: try body("no device name") { try $0.readBytes() }, as: UTF8.self)
        if let problem = DeviceID.problem(with: name) { throw WireFormatError(field: "device", message: problem) }
        let count = try body("no event count") { try $0.readVarint() }
        guard count <= UInt64(bytes.count / minimumEventSize) else {
            throw WireFormatError(field: "events", message: "a count of \(count) events does not fit in \(bytes.count) bytes")
        }
        var events: [ReceivedEvent] = []
        events.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            let path = "events[\(index)]"
            func field<T>(_ name: String, _ read: (inout ByteReader) throws -> T) throws -> T {
                do { return try read(&reader) } catch let error as DecodingError {
                    throw WireFormatError(field: "\(path).\(name)", message: "\(error)")
                }
            }
            let hash = try field("hash") { try $0.readRaw(count: 32) }
            let event = try field("canonical") { reader in
                let length = try reader.readVarint()
                let start = reader.offset
                let event = try Event.readCanonical(from: &reader, validating: false)
                guard UInt64(reader.offset - start) == length else {
                    throw DecodingError("canonical bytes of \(reader.offset - start) bytes where the length says \(length)", offset: start)
                }
                return event
            }
            if let problem = event.envelopeProblem, event.deviceSequence >= 1 {
                events.append(
                    .invalid(
                        id: event.id, deviceSequence: event.deviceSequence, field: "\(path).\(problem.field)", problem: problem.message))
            } else if let problem = event.envelopeProblem {
                throw WireFormatError(field: "\(path).\(problem.field)", message: problem.message)
            } else {
                events.append(.valid(WireEvent(event, hash: hash)))
            }
        }
        guard reader.isAtEnd else {
            let extra = bytes.count - reader.offset
            throw WireFormatError(field: "", message: extra == 1 ? "1 byte follows the last event" : "\(extra) bytes follow the last event")
        }
        return ReceivedPush(device: DeviceID(name), events: events)
    }
}
