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
///
/// A push in an end-to-end encrypted library may carry the key store changes its events need
/// (their assets' keys) in the same request: the keyed form
/// (`application/vnd.photoledger.keyed-event-batch`), which the server applies, under the key
/// store's rules, in the transaction that stores the events, and answers in
/// ``PushResponse/keys``. Its layout is the same but for the magic, `PLEK` (format version 1),
/// and the changes between the device's name and the number of events: a varint count (at most
/// `KeyStoreBody.maximumChanges`), then each change as a binary key change list carries it
/// (flags, name, value; see ``KeyStoreBody``). A server that does not know the keyed form
/// answers 415: the client then writes the keys to the key store and pushes the plain form.
public enum EventBatch {
    /// The media type of the binary form.
    public static let contentType = "application/vnd.photoledger.event-batch"
    /// The media type of the keyed form: key store changes, then the events.
    public static let keyedContentType = "application/vnd.photoledger.keyed-event-batch"

    /// The framing: `PLEB`, version 1, events with nothing before their content hash.
    static let body = BinaryEventBody(name: "event batch", magic: "PLEB", version: 1, eventPrefixBytes: 0)
    /// The keyed form's framing: `PLEK`, version 1, events as in ``body``.
    static let keyedBody = BinaryEventBody(name: "keyed event batch", magic: "PLEK", version: 1, eventPrefixBytes: 0)
    /// The keyed form's changes, counted as a key change list counts them.
    static let keyedChanges = BinaryEventBody(
        name: "keyed event batch", magic: "PLEK", version: 1, item: ("change", "changes"), minimumItemSize: KeyStoreBody.minimumItemSize)

    /// Encodes a push of `events` by `device`, hashing each event's canonical bytes once; with
    /// `keys` (at most `KeyStoreBody.maximumChanges`), in the keyed form
    /// (``keyedContentType``), otherwise in the plain one (``contentType``).
    public static func encode(device: DeviceID, keys: [KeyChange] = [], events: [Event]) -> [UInt8] {
        precondition(
            keys.count <= KeyStoreBody.maximumChanges, "a keyed event batch carries at most \(KeyStoreBody.maximumChanges) changes")
        var writer = ByteWriter(capacity: 16 + events.count * 220 + (keys.isEmpty ? 0 : KeyStoreBody.encodedSize(of: keys)))
        (keys.isEmpty ? body : keyedBody).writeStart(into: &writer)
        writer.write(bytes: Array(device.rawValue.utf8))
        if !keys.isEmpty { KeyStoreBody.write(keys, into: &writer) }
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
        try decode(bytes, keyed: false)
    }

    /// Decodes a push in the keyed form (``keyedContentType``) as the server reads it: as
    /// ``decode(_:)``, with the key store changes in ``ReceivedPush/keys``.
    ///
    /// - Throws: ``WireFormatError`` naming the change or event and field, or the body, that is
    ///   malformed (a change as a binary key change list refuses it).
    public static func decodeKeyed(_ bytes: [UInt8]) throws -> ReceivedPush {
        try decode(bytes, keyed: true)
    }

    private static func decode(_ bytes: [UInt8], keyed: Bool) throws -> ReceivedPush {
        let body = keyed ? keyedBody : body
        var reader = ByteReader(bytes)
        try body.readStart(&reader)
        let name = String(decoding: try body.header(&reader, "no device name") { try $0.readBytes() }, as: UTF8.self)
        if let problem = DeviceID.problem(with: name) { throw WireFormatError(field: "device", message: problem) }
        let keys = keyed ? try KeyStoreBody.readChanges(&reader, framing: keyedChanges, bodySize: bytes.count) : []
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
        return ReceivedPush(device: DeviceID(name), keys: keys, events: events)
    }
}
