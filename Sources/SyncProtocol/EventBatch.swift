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

    /// The framing: `PLEB`, version 1, events with nothing before their content hash.
    static let body = BinaryEventBody(name: "event batch", magic: "PLEB", version: 1, eventPrefixBytes: 0)

    /// Encodes a push of `events` by `device`, hashing each event's canonical bytes once.
    public static func encode(device: DeviceID, events: [Event]) -> [UInt8] {
        var writer = ByteWriter(capacity: 16 + events.count * 220)
        body.writeStart(into: &writer)
        writer.write(bytes: Array(device.rawValue.utf8))
        writer.write(varint: UInt64(events.count))
        var canonical = CanonicalEventWriter()
        var digest = SHA256()
        for event in events { canonical.append(event, hashingWith: &digest, to: &writer) }
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
        try body.readStart(&reader)
        let name = String(decoding: try body.header(&reader, "no device name") { try $0.readBytes() }, as: UTF8.self)
        if let problem = DeviceID.problem(with: name) { throw WireFormatError(field: "device", message: problem) }
        let count = try body.readCount(&reader, bodySize: bytes.count)
        var events: [ReceivedEvent] = []
        events.reserveCapacity(count)
        for index in 0..<count {
            let (hash, event) = try BinaryEventBody.readEvent(&reader, path: "events[\(index)]")
            if let problem = event.envelopeProblem, event.deviceSequence >= 1 {
                events.append(
                    .invalid(
                        id: event.id, deviceSequence: event.deviceSequence, field: "events[\(index)].\(problem.field)",
                        problem: problem.message))
            } else if let problem = event.envelopeProblem {
                throw WireFormatError(field: "events[\(index)].\(problem.field)", message: problem.message)
            } else {
                events.append(.valid(WireEvent(event, hash: hash)))
            }
        }
        try body.readEnd(reader, bodySize: bytes.count)
        return ReceivedPush(device: DeviceID(name), events: events)
    }
}
