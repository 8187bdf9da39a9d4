import Foundation
import LedgerCore

/// The binary form of a pull page (`application/vnd.photoledger.event-page`): the same content
/// as a JSON ``PullResponse``, with each event as its canonical bytes. A client asks for it with
/// `Accept`; the server answers JSON to a client that does not.
///
/// With JSON pages, parsing took about a sixth of a pulling device's CPU, and writing them a
/// good part of the server's: each UUID, hash and payload went to text and back. Here every
/// field travels as it is hashed, so nothing is converted, and the body is about half the size.
///
/// Layout (varints are unsigned LEB128):
///
/// | bytes | content |
/// |---|---|
/// | 4 | magic `PLEP` |
/// | 1 | format version, 1 |
/// | 1 | flags: bit 0 set when more events follow (`hasMore`); the other bits are 0 |
/// | varint | `nextCursor` |
/// | varint | the number of events |
///
/// then for each event, in server order:
///
/// | bytes | content |
/// |---|---|
/// | varint | the server sequence (≥ 1) |
/// | 32 | the server's chain value after the event |
/// | 32 | the content hash: SHA-256 of the canonical bytes |
/// | varint | the length of the canonical bytes |
/// | length | the canonical bytes (`Event.writeCanonicalBytes(into:)`) |
///
/// The body ends with the last event: trailing bytes are an error.
public enum EventPage {
    /// The media type of the binary form.
    public static let contentType = "application/vnd.photoledger.event-page"

    /// The framing: `PLEP`, version 1, events whose server sequence (at least one byte) and
    /// chain value (32) come before their content hash.
    static let body = BinaryEventBody(name: "event page", magic: "PLEP", version: 1, eventPrefixBytes: 1 + 32)

    /// Writes a page event by event, with a header whose values are known before the events.
    public struct Writer {
        private var writer: ByteWriter
        private var canonical = CanonicalEventWriter()
        private let count: Int
        private var written = 0

        /// Starts a page of `count` events.
        public init(count: Int, nextCursor: Int64, hasMore: Bool, capacity: Int? = nil) {
            writer = ByteWriter(capacity: capacity ?? (16 + count * 200))
            EventPage.body.writeStart(into: &writer)
            writer.write(byte: hasMore ? 1 : 0)
            writer.write(varint: UInt64(max(0, nextCursor)))
            writer.write(varint: UInt64(count))
            self.count = count
        }

        /// Appends the next event.
        public mutating func append(_ event: Event, serverSequence: Int64, chainHash: [UInt8], contentHash: [UInt8]) {
            precondition(written < count, "more events than the page was started with")
            precondition(chainHash.count == 32 && contentHash.count == 32, "hashes are 32 bytes")
            written += 1
            writer.write(varint: UInt64(max(0, serverSequence)))
            writer.write(raw: chainHash)
            canonical.append(event, hash: contentHash, to: &writer)
        }

        /// The page; every announced event must have been appended.
        public var bytes: [UInt8] {
            precondition(written == count, "\(written) of \(count) events appended")
            return writer.bytes
        }
    }

    /// Encodes `response` in the binary form. Every event must carry its server sequence and
    /// chain value, as pull pages do.
    public static func encode(_ response: PullResponse) -> [UInt8] {
        var page = Writer(count: response.events.count, nextCursor: response.nextCursor, hasMore: response.hasMore)
        for event in response.events {
            precondition(
                event.serverSequence != nil && event.chainHash != nil, "a pull page's events carry a server sequence and chain value")
            page.append(event.event, serverSequence: event.serverSequence!, chainHash: event.chainHash!, contentHash: event.hash)
        }
        return page.bytes
    }

    /// Decodes a page strictly, with the checks a JSON page gets: every event must have valid
    /// fields (a device name, a positive device sequence, a type of printable ASCII, a schema
    /// version from 1 to 2³¹−1) and a server sequence of at least 1.
    ///
    /// The content hashes are read, not checked here (``WireEvent/hasValidHash``).
    ///
    /// - Throws: ``WireFormatError`` naming the event and field, or the body, that is malformed.
    public static func decode(_ bytes: [UInt8]) throws -> PullResponse {
        var reader = ByteReader(bytes)
        try body.readStart(&reader)
        let flags = try body.header(&reader, "no flags") { try $0.readByte() }
        guard flags & ~1 == 0 else { throw WireFormatError(field: "flags", message: "unknown flags \(flags)") }
        let cursor = try body.header(&reader, "no nextCursor") { try $0.readVarint() }
        guard cursor <= UInt64(Int64.max) else { throw WireFormatError(field: "nextCursor", message: "exceeds 2^63-1") }
        let count = try body.readCount(&reader, bodySize: bytes.count)
        var events: [WireEvent] = []
        events.reserveCapacity(count)
        for index in 0..<count {
            events.append(try readEvent(&reader, path: "events[\(index)]"))
        }
        try body.readEnd(reader, bodySize: bytes.count)
        return PullResponse(events: events, nextCursor: Int64(cursor), hasMore: flags & 1 != 0)
    }

    private static func readEvent(_ reader: inout ByteReader, path: @autoclosure () -> String) throws -> WireEvent {
        let sequence = try BinaryEventBody.field(&reader, path(), "serverSeq") { try $0.readVarint() }
        guard (1...UInt64(Int64.max)).contains(sequence) else {
            throw WireFormatError(field: "\(path()).serverSeq", message: "must be an integer from 1 to 2^63-1")
        }
        let chainHash = try BinaryEventBody.field(&reader, path(), "chainHash") { try $0.readRaw(count: 32) }
        let (hash, event) = try BinaryEventBody.readEvent(&reader, path: path())
        if let problem = event.envelopeProblem {
            throw WireFormatError(field: "\(path()).\(problem.field)", message: problem.message)
        }
        return WireEvent(event, hash: hash, serverSequence: Int64(sequence), chainHash: chainHash)
    }
}
