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

    /// The four bytes that start every page.
    static let magic: [UInt8] = Array("PLEP".utf8)
    /// The format version this build writes and reads.
    static let version: UInt8 = 1
    /// The smallest possible encoded event: a one-byte sequence, two hashes, a one-byte length
    /// and the fixed part of the canonical bytes (empty device, type and payload).
    static let minimumEventSize = 1 + 32 + 32 + 1 + (1 + 16 + 1 + 8 + 8 + 16 + 16 + 1 + 1 + 1)

    /// Writes a page event by event, with a header whose values are known before the events.
    public struct Writer {
        private var writer: ByteWriter
        private var scratch = ByteWriter(capacity: 512)
        private let count: Int
        private var written = 0

        /// Starts a page of `count` events.
        public init(count: Int, nextCursor: Int64, hasMore: Bool, capacity: Int? = nil) {
            writer = ByteWriter(capacity: capacity ?? (16 + count * 200))
            writer.write(raw: EventPage.magic)
            writer.write(byte: EventPage.version)
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
            scratch.removeAll()
            event.writeCanonicalBytes(into: &scratch)
            writer.write(varint: UInt64(max(0, serverSequence)))
            writer.write(raw: chainHash)
            writer.write(raw: contentHash)
            writer.write(bytes: scratch.bytes)
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
        func body<T>(_ what: String, _ read: (inout ByteReader) throws -> T) throws -> T {
            do { return try read(&reader) } catch let error as DecodingError {
                throw WireFormatError(field: "", message: "not an event page: \(what) (\(error))")
            }
        }
        let magic = try body("it does not start with 'PLEP'") { try $0.readRaw(count: 4) }
        guard magic == Self.magic else { throw WireFormatError(field: "", message: "not an event page: it does not start with 'PLEP'") }
        let version = try body("no format version") { try $0.readByte() }
        guard version == Self.version else {
            throw WireFormatError(field: "", message: "event page format version \(version) is not supported (this build reads version 1)")
        }
        let flags = try body("no flags") { try $0.readByte() }
        guard flags & ~1 == 0 else { throw WireFormatError(field: "flags", message: "unknown flags \(flags)") }
        let cursor = try body("no nextCursor") { try $0.readVarint() }
        guard cursor <= UInt64(Int64.max) else { throw WireFormatError(field: "nextCursor", message: "exceeds 2^63-1") }
        let count = try body("no event count") { try $0.readVarint() }
        guard count <= UInt64(bytes.count / minimumEventSize) else {
            throw WireFormatError(field: "events", message: "a count of \(count) events does not fit in \(bytes.count) bytes")
        }
        var events: [WireEvent] = []
        events.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            events.append(try readEvent(&reader, path: "events[\(index)]"))
        }
        guard reader.isAtEnd else {
            let extra = bytes.count - reader.offset
            throw WireFormatError(field: "", message: extra == 1 ? "1 byte follows the last event" : "\(extra) bytes follow the last event")
        }
        return PullResponse(events: events, nextCursor: Int64(cursor), hasMore: flags & 1 != 0)
    }

    private static func readEvent(_ reader: inout ByteReader, path: @autoclosure () -> String) throws -> WireEvent {
        func field<T>(_ name: String, _ read: (inout ByteReader) throws -> T) throws -> T {
            do { return try read(&reader) } catch let error as DecodingError {
                throw WireFormatError(field: "\(path()).\(name)", message: "\(error)")
            }
        }
        let sequence = try field("serverSeq") { try $0.readVarint() }
        guard (1...UInt64(Int64.max)).contains(sequence) else {
            throw WireFormatError(field: "\(path()).serverSeq", message: "must be an integer from 1 to 2^63-1")
        }
        let chainHash = try field("chainHash") { try $0.readRaw(count: 32) }
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
        if let problem = event.envelopeProblem {
            throw WireFormatError(field: "\(path()).\(problem.field)", message: problem.message)
        }
        return WireEvent(event, hash: hash, serverSequence: Int64(sequence), chainHash: chainHash)
    }
}
