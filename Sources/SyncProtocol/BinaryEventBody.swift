import Foundation
import LedgerCore

/// What the two binary bodies of events (``EventBatch`` pushes and ``EventPage`` pulls) share:
/// a magic and a format version first, a count of events that must fit in the body, each
/// event as its content hash and its length-prefixed canonical bytes, and nothing after the
/// last event.
struct BinaryEventBody {
    /// The body's name in errors: "event batch", "event page".
    let name: String
    /// The four bytes that start every body.
    let magic: [UInt8]
    /// The format version this build writes and reads.
    let version: UInt8
    /// The fewest bytes an event takes in the body: what comes before its content hash, the
    /// hash, a one-byte length and the fixed part of the canonical bytes (empty device, type
    /// and payload). A count of events larger than the body could hold is refused before
    /// anything is allocated for them.
    let minimumEventSize: Int
    /// What the body holds, in errors: "event" and "events", or the items of another body
    /// framed the same way (the key store's entries).
    let item: (one: String, many: String)

    /// The fixed part of the canonical bytes: format, identifier, device length, device
    /// sequence, stamp, change block, object, type length, schema version, payload length.
    static let minimumCanonicalSize = 1 + 16 + 1 + 8 + 8 + 16 + 16 + 1 + 1 + 1

    /// A body whose events each start with `prefixBytes` bytes before their content hash.
    init(name: String, magic: String, version: UInt8, eventPrefixBytes prefixBytes: Int) {
        self.name = name
        self.magic = Array(magic.utf8)
        self.version = version
        minimumEventSize = prefixBytes + 32 + 1 + Self.minimumCanonicalSize
        item = ("event", "events")
    }

    /// A body of other items (`one`, `many` in errors), each taking at least `minimumItemSize` bytes.
    init(name: String, magic: String, version: UInt8, item: (one: String, many: String), minimumItemSize: Int) {
        self.name = name
        self.magic = Array(magic.utf8)
        self.version = version
        minimumEventSize = minimumItemSize
        self.item = item
    }

    /// "a" or "an", before the body's name.
    private var article: String { name.first.map { "aeiou".contains($0) } == true ? "an" : "a" }

    /// Writes the magic and the version.
    func writeStart(into writer: inout ByteWriter) {
        writer.write(raw: magic)
        writer.write(byte: version)
    }

    /// Reads a field of the header with `read`; a body cut short there is not such a body.
    func header<T>(_ reader: inout ByteReader, _ what: String, _ read: (inout ByteReader) throws -> T) throws -> T {
        do { return try read(&reader) } catch let error as DecodingError {
            throw WireFormatError(field: "", message: "not \(article) \(name): \(what) (\(error))")
        }
    }

    /// Reads and checks the magic and the version.
    func readStart(_ reader: inout ByteReader) throws {
        let text = String(decoding: magic, as: UTF8.self)
        let found = try header(&reader, "it does not start with '\(text)'") { try $0.readRaw(count: magic.count) }
        guard found == magic else { throw WireFormatError(field: "", message: "not \(article) \(name): it does not start with '\(text)'") }
        let version = try header(&reader, "no format version") { try $0.readByte() }
        guard version == self.version else {
            throw WireFormatError(
                field: "", message: "\(name) format version \(version) is not supported (this build reads version \(self.version))")
        }
    }

    /// Reads the number of events, which must fit in the `size` bytes of the body.
    func readCount(_ reader: inout ByteReader, bodySize size: Int) throws -> Int {
        let count = try header(&reader, "no \(item.one) count") { try $0.readVarint() }
        guard count <= UInt64(size / minimumEventSize) else {
            throw WireFormatError(field: item.many, message: "a count of \(count) \(item.many) does not fit in \(size) bytes")
        }
        return Int(count)
    }

    /// Checks that the last event ends the body.
    func readEnd(_ reader: ByteReader, bodySize size: Int) throws {
        guard !reader.isAtEnd else { return }
        let extra = size - reader.offset
        let what = extra == 1 ? "1 byte follows" : "\(extra) bytes follow"
        throw WireFormatError(field: "", message: "\(what) the last \(item.one)")
    }

    /// Reads one event's field with `read`, naming `path.field` in the error.
    static func field<T>(
        _ reader: inout ByteReader, _ path: @autoclosure () -> String, _ field: String, _ read: (inout ByteReader) throws -> T
    ) throws -> T {
        do { return try read(&reader) } catch let error as DecodingError {
            throw WireFormatError(field: "\(path()).\(field)", message: "\(error)")
        }
    }

    /// Reads an event's content hash and length-prefixed canonical bytes (envelopes are not
    /// validated here: each body decides what an invalid one means).
    static func readEvent(_ reader: inout ByteReader, path: @autoclosure () -> String) throws -> (hash: [UInt8], event: Event) {
        let hash = try field(&reader, path(), "hash") { try $0.readRaw(count: 32) }
        let event = try field(&reader, path(), "canonical") { reader in
            let length = try reader.readVarint()
            let start = reader.offset
            let event = try Event.readCanonical(from: &reader, validating: false)
            guard UInt64(reader.offset - start) == length else {
                throw DecodingError("canonical bytes of \(reader.offset - start) bytes where the length says \(length)", offset: start)
            }
            return event
        }
        return (hash, event)
    }
}

/// Writes events as their canonical bytes, with one reusable buffer, and hashes them with a
/// reusable digest: what pushes, pull pages and ``WireEvent/hashing(_:)`` do for every event.
struct CanonicalEventWriter {
    private var scratch = ByteWriter(capacity: 512)

    /// Writes `event`'s canonical bytes into the buffer.
    private mutating func encode(_ event: Event) {
        scratch.removeAll()
        event.writeCanonicalBytes(into: &scratch)
    }

    /// The content hash of `event` (`Event.contentHash`), hashed with `digest`.
    mutating func contentHash(of event: Event, with digest: inout SHA256) -> [UInt8] {
        encode(event)
        scratch.bytes.withUnsafeBytes { digest.update($0) }
        return digest.finalizeAndReset()
    }

    /// Appends `event` as a binary body carries it: its content hash `hash`, then its canonical
    /// bytes with their length first.
    mutating func append(_ event: Event, hash: [UInt8], to writer: inout ByteWriter) {
        encode(event)
        writeEncoded(hash: hash, to: &writer)
    }

    /// Appends `event` as ``append(_:hash:to:)`` does, hashing it with `digest`.
    mutating func append(_ event: Event, hashingWith digest: inout SHA256, to writer: inout ByteWriter) {
        // Hashed first: the buffer must hold this event's bytes when they are written.
        let hash = contentHash(of: event, with: &digest)
        writeEncoded(hash: hash, to: &writer)
    }

    private func writeEncoded(hash: [UInt8], to writer: inout ByteWriter) {
        writer.write(raw: hash)
        writer.write(bytes: scratch.bytes)
    }
}
