import Foundation
import LedgerCore

/// The binary forms of the key store's messages (`application/vnd.photoledger.key-store`): the
/// same content as the JSON ``KeyChangesRequest``, ``KeyChangesResponse`` and
/// ``KeyEntriesResponse``, with every value as its bytes (no base64) and no field names. A push
/// writes one asset key per asset it creates, and a new device reads every one of them: in
/// JSON, encoding and parsing them were most of what the key store cost both sides.
///
/// A client sends changes in this form with `Content-Type`, and asks for answers in it with
/// `Accept`. A server that does not know it answers a binary request 415 (the client sends JSON
/// from then on) and a JSON answer to the `Accept` (which the client reads as well).
///
/// Every body starts with a magic and a format version, then a header, a count of items that
/// must fit in the body, and the items; the body ends with the last item (trailing bytes are an
/// error). Varints are unsigned LEB128, signed ones zigzag; names and values are a varint
/// length and their bytes.
///
/// Key changes (a request, at most ``maximumChanges``):
///
/// | bytes | content |
/// |---|---|
/// | 4 + 1 | magic `PLKC`, format version 1 |
/// | varint | the number of changes |
/// | each: 1 | flags: bit 0 a value follows (a write; without it, a deletion), bit 1 `createOnly`; the other bits are 0 |
/// | each: varint + bytes | the name |
/// | each: varint + bytes | the value, when bit 0 is set |
///
/// Their results (the answer to a change request):
///
/// | bytes | content |
/// |---|---|
/// | 4 + 1 | magic `PLKR`, format version 1 |
/// | 1 | flags: bit 0 the store's positions follow; the other bits are 0 |
/// | 2 × signed varint | `from` and `through`, when bit 0 is set |
/// | varint | the number of results |
/// | each: 1 | the status (0 stored, 1 deleted, 2 conflict, 3 forbidden), plus 0x80 when a reason follows |
/// | each: varint + bytes | the name |
/// | each: varint + bytes | the reason, UTF-8, when 0x80 is set |
///
/// Entries (the answer to a read):
///
/// | bytes | content |
/// |---|---|
/// | 4 + 1 | magic `PLKE`, format version 1 |
/// | signed varint | `last`: the store's position after the entries |
/// | varint | the number of entries |
/// | each: varint + bytes | the name |
/// | each: varint + bytes | the value |
public enum KeyStoreBody {
    /// The media type of the binary forms.
    public static let contentType = "application/vnd.photoledger.key-store"

    /// The most changes in one binary request: as many as the largest pull page, more than a
    /// push batch of the sync engine's default size, whose asset keys then go in one request.
    public static let maximumChanges = SyncRoutes.maximumPageLimit

    /// An item's fewest bytes: a one-byte name with its length, and a one-byte field before or
    /// after it (flags, status, or an empty value's length).
    static let minimumItemSize = 3
    static let changes = BinaryEventBody(
        name: "key change list", magic: "PLKC", version: 1, item: ("change", "changes"), minimumItemSize: minimumItemSize)
    static let results = BinaryEventBody(
        name: "key change result list", magic: "PLKR", version: 1, item: ("result", "results"), minimumItemSize: minimumItemSize)
    static let entries = BinaryEventBody(
        name: "key entry list", magic: "PLKE", version: 1, item: ("entry", "entries"), minimumItemSize: minimumItemSize)

    private static let statuses: [KeyChangeStatus] = [.stored, .deleted, .conflict, .forbidden]

    // MARK: Changes

    /// Encodes `request`.
    public static func encode(_ request: KeyChangesRequest) -> [UInt8] {
        var writer = ByteWriter(capacity: 16 + encodedSize(of: request.changes))
        changes.writeStart(into: &writer)
        write(request.changes, into: &writer)
        return writer.bytes
    }

    /// About the bytes `list` takes as ``write(_:into:)`` writes it.
    static func encodedSize(of list: [KeyChange]) -> Int {
        list.reduce(0) { $0 + 4 + $1.name.utf8.count + ($1.value?.count ?? 0) }
    }

    /// Writes the number of changes in `list`, then each change: its flags, its name and its
    /// value (what a change list and a keyed event batch carry).
    static func write(_ list: [KeyChange], into writer: inout ByteWriter) {
        writer.write(varint: UInt64(list.count))
        for change in list {
            writer.write(byte: (change.value == nil ? 0 : 1) | (change.createOnly ? 2 : 0))
            writer.write(string: change.name)
            if let value = change.value { writer.write(bytes: value) }
        }
    }

    /// Decodes a change request as the server reads it.
    ///
    /// - Throws: ``WireFormatError`` naming the change and field, or the body, that is malformed:
    ///   a body cut short, a count larger than ``maximumChanges`` or than the body could hold,
    ///   unknown flags, an invalid name, a value larger than `KeyEntryName.maximumValueBytes`,
    ///   bytes after the last change.
    public static func decodeChanges(_ bytes: [UInt8]) throws -> KeyChangesRequest {
        var reader = ByteReader(bytes)
        try changes.readStart(&reader)
        let decoded = try readChanges(&reader, framing: changes, bodySize: bytes.count)
        try changes.readEnd(reader, bodySize: bytes.count)
        return KeyChangesRequest(changes: decoded)
    }

    /// Reads what ``write(_:into:)`` wrote, in a body of `size` bytes framed by `framing`: at
    /// most ``maximumChanges``, each with known flags, a valid name and a value of at most
    /// `KeyEntryName.maximumValueBytes`.
    static func readChanges(_ reader: inout ByteReader, framing: BinaryEventBody, bodySize size: Int) throws -> [KeyChange] {
        let count = try framing.readCount(&reader, bodySize: size)
        guard count <= maximumChanges else {
            throw WireFormatError(field: "changes", message: "must hold at most \(maximumChanges) changes, not \(count)")
        }
        var decoded: [KeyChange] = []
        decoded.reserveCapacity(count)
        for index in 0..<count {
            let path = "changes[\(index)]"
            let flags = try BinaryEventBody.field(&reader, path, "flags") { try $0.readByte() }
            guard flags & ~3 == 0 else { throw WireFormatError(field: "\(path).flags", message: "unknown flags \(flags)") }
            let name = try readName(&reader, path)
            let value = flags & 1 == 0 ? nil : try readValue(&reader, path)
            decoded.append(KeyChange(name: name, value: value, createOnly: flags & 2 != 0))
        }
        return decoded
    }

    // MARK: Results

    /// Encodes `response`.
    public static func encode(_ response: KeyChangesResponse) -> [UInt8] {
        var writer = ByteWriter(capacity: 32 + response.results.count * 48)
        results.writeStart(into: &writer)
        if let from = response.from, let through = response.through {
            writer.write(byte: 1)
            writer.write(int: from)
            writer.write(int: through)
        } else {
            // A response names both positions or neither (a server that does not say).
            writer.write(byte: 0)
        }
        writer.write(varint: UInt64(response.results.count))
        for result in response.results {
            writer.write(byte: UInt8(statuses.firstIndex(of: result.status)!) | (result.reason == nil ? 0 : 0x80))
            writer.write(string: result.name)
            if let reason = result.reason { writer.write(string: reason) }
        }
        return writer.bytes
    }

    /// Decodes the answer to a change request as the client reads it.
    ///
    /// - Throws: ``WireFormatError`` naming the result and field, or the body, that is malformed.
    public static func decodeResults(_ bytes: [UInt8]) throws -> KeyChangesResponse {
        var reader = ByteReader(bytes)
        try results.readStart(&reader)
        let flags = try results.header(&reader, "no flags") { try $0.readByte() }
        guard flags & ~1 == 0 else { throw WireFormatError(field: "flags", message: "unknown flags \(flags)") }
        var from: Int64?, through: Int64?
        if flags & 1 != 0 {
            from = try results.header(&reader, "no 'from' position") { try $0.readInt() }
            through = try results.header(&reader, "no 'through' position") { try $0.readInt() }
        }
        let count = try results.readCount(&reader, bodySize: bytes.count)
        var decoded: [KeyChangesResponse.Result] = []
        decoded.reserveCapacity(count)
        for index in 0..<count {
            let path = "results[\(index)]"
            let byte = try BinaryEventBody.field(&reader, path, "status") { try $0.readByte() }
            guard Int(byte & 0x7F) < statuses.count else {
                throw WireFormatError(field: "\(path).status", message: "unknown status \(byte & 0x7F)")
            }
            let name = try BinaryEventBody.field(&reader, path, "name") { try $0.readString() }
            let reason = byte & 0x80 == 0 ? nil : try BinaryEventBody.field(&reader, path, "reason") { try $0.readString() }
            decoded.append(KeyChangesResponse.Result(name: name, status: statuses[Int(byte & 0x7F)], reason: reason))
        }
        try results.readEnd(reader, bodySize: bytes.count)
        return KeyChangesResponse(results: decoded, from: from, through: through)
    }

    // MARK: Entries

    /// Encodes `response`.
    public static func encode(_ response: KeyEntriesResponse) -> [UInt8] {
        var writer = ByteWriter(capacity: 24 + response.entries.reduce(0) { $0 + 4 + $1.name.utf8.count + $1.value.count })
        entries.writeStart(into: &writer)
        writer.write(int: response.last)
        writer.write(varint: UInt64(response.entries.count))
        for entry in response.entries {
            writer.write(string: entry.name)
            writer.write(bytes: entry.value)
        }
        return writer.bytes
    }

    /// Decodes the answer to a read of the key store as the client reads it.
    ///
    /// - Throws: ``WireFormatError`` naming the entry and field, or the body, that is malformed:
    ///   a body cut short, a count larger than the body could hold, an invalid name, a value
    ///   larger than `KeyEntryName.maximumValueBytes`, bytes after the last entry.
    public static func decodeEntries(_ bytes: [UInt8]) throws -> KeyEntriesResponse {
        var reader = ByteReader(bytes)
        try entries.readStart(&reader)
        let last = try entries.header(&reader, "no 'last' position") { try $0.readInt() }
        let count = try entries.readCount(&reader, bodySize: bytes.count)
        var decoded: [KeyEntry] = []
        decoded.reserveCapacity(count)
        for index in 0..<count {
            let path = "entries[\(index)]"
            let name = try readName(&reader, path)
            decoded.append(KeyEntry(name: name, value: try readValue(&reader, path)))
        }
        try entries.readEnd(reader, bodySize: bytes.count)
        return KeyEntriesResponse(entries: decoded, last: last)
    }

    // MARK: Fields

    /// Reads an entry's name, which must be a valid one (`KeyEntryName`).
    private static func readName(_ reader: inout ByteReader, _ path: String) throws -> String {
        let name = try BinaryEventBody.field(&reader, path, "name") { try $0.readString() }
        if let problem = KeyEntryName.problem(with: name) { throw WireFormatError(field: "\(path).name", message: problem) }
        return name
    }

    /// Reads an entry's value, at most `KeyEntryName.maximumValueBytes`.
    private static func readValue(_ reader: inout ByteReader, _ path: String) throws -> [UInt8] {
        let value = try BinaryEventBody.field(&reader, path, "value") { try $0.readBytes() }
        guard value.count <= KeyEntryName.maximumValueBytes else {
            throw WireFormatError(field: "\(path).value", message: "must be at most \(KeyEntryName.maximumValueBytes) bytes")
        }
        return value
    }
}
