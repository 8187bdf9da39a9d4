import Foundation
import LedgerCore

/// `POST /v1/libraries/{library}/snapshots`: a device's claim that the folded state of the
/// library at server position `position` is the blob `hash` (uploaded before with
/// `PUT …/blobs/{hash}`).
///
/// The server checks what it can without reading the blob (its bytes may be end-to-end
/// encrypted): the token may write, the position is one it holds, `chainHash` is its chain value
/// at that position, the blob is stored. It never checks the fold itself: a new device does that
/// by refolding the history (see the sync module's snapshot documentation).
public struct SnapshotOffer: WireMessage, Hashable {
    /// The server position the snapshot folds the log up to (inclusive).
    public var position: Int64
    /// The server's chain value after the event at `position`.
    public var chainHash: [UInt8]
    /// The SHA-256 of the snapshot's bytes: the blob's name.
    public var hash: [UInt8]

    /// Creates an offer.
    public init(position: Int64, chainHash: [UInt8], hash: [UInt8]) {
        self.position = position
        self.chainHash = chainHash
        self.hash = hash
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("position"); writer.integer(position)
        writer.key("chainHash"); writer.hex(chainHash)
        writer.key("hash"); writer.hex(hash)
        writer.endObject()
    }

    /// Reads the offer; a position below 1 or a hash that is not 32 bytes is malformed.
    public static func read(from reader: inout JSONReader) throws -> SnapshotOffer {
        var position: Int64?, chain: [UInt8]?, hash: [UInt8]?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "position": position = try reading(key) { try reader.readInt64() }
            case "chainHash": chain = try hash32(key, &reader)
            case "hash": hash = try hash32(key, &reader)
            default: return false
            }
            return true
        }
        let offer = SnapshotOffer(
            position: try required(position, "position"), chainHash: try required(chain, "chainHash"), hash: try required(hash, "hash"))
        guard offer.position >= 1 else { throw WireFormatError(field: "position", message: "must be at least 1") }
        return offer
    }
}

/// A snapshot the server holds: what a device claimed (``SnapshotOffer``), by whom and when.
/// `GET /v1/libraries/{library}/snapshots/latest` answers the newest (highest position) one, or
/// 404 when the library has none.
public struct SnapshotRecord: WireMessage, Hashable {
    /// The server position the snapshot folds the log up to.
    public var position: Int64
    /// The server's chain value at `position`.
    public var chainHash: [UInt8]
    /// The blob holding the snapshot's bytes.
    public var hash: [UInt8]
    /// The blob's size in bytes.
    public var size: Int64
    /// The device that offered it.
    public var device: String
    /// When the server recorded it (Unix milliseconds).
    public var recordedAt: UInt64

    /// Creates a record.
    public init(position: Int64, chainHash: [UInt8], hash: [UInt8], size: Int64, device: String, recordedAt: UInt64) {
        self.position = position
        self.chainHash = chainHash
        self.hash = hash
        self.size = size
        self.device = device
        self.recordedAt = recordedAt
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("position"); writer.integer(position)
        writer.key("chainHash"); writer.hex(chainHash)
        writer.key("hash"); writer.hex(hash)
        writer.key("size"); writer.integer(size)
        writer.key("device"); writer.string(device)
        writer.key("recordedAt"); writer.integer(Int64(clamping: recordedAt))
        writer.endObject()
    }

    /// Reads the record; a position below 1, a negative size or a hash that is not 32 bytes is
    /// malformed.
    public static func read(from reader: inout JSONReader) throws -> SnapshotRecord {
        var position: Int64?, chain: [UInt8]?, hash: [UInt8]?, size: Int64?, device: String?, recorded: Int64?
        try readObject(&reader, path: "") { key, reader in
            switch key {
            case "position": position = try reading(key) { try reader.readInt64() }
            case "chainHash": chain = try hash32(key, &reader)
            case "hash": hash = try hash32(key, &reader)
            case "size": size = try reading(key) { try reader.readInt64() }
            case "device": device = try reading(key) { try reader.readString() }
            case "recordedAt": recorded = try reading(key) { try reader.readInt64() }
            default: return false
            }
            return true
        }
        let record = SnapshotRecord(
            position: try required(position, "position"), chainHash: try required(chain, "chainHash"), hash: try required(hash, "hash"),
            size: try required(size, "size"), device: try required(device, "device"),
            recordedAt: UInt64(clamping: try required(recorded, "recordedAt")))
        guard record.position >= 1 else { throw WireFormatError(field: "position", message: "must be at least 1") }
        guard record.size >= 0 else { throw WireFormatError(field: "size", message: "must not be negative") }
        return record
    }
}

extension SyncRoutes {
    /// `POST /v1/libraries/{library}/snapshots`: offer a snapshot (``SnapshotOffer``).
    public static func snapshots(library: String) -> String { "/v1/libraries/\(library)/snapshots" }

    /// `GET /v1/libraries/{library}/snapshots/latest`: the newest ``SnapshotRecord``.
    public static func latestSnapshot(library: String) -> String { "/v1/libraries/\(library)/snapshots/latest" }
}

/// A 32-byte value written as 64 hexadecimal digits.
private func hash32(_ key: String, _ reader: inout JSONReader) throws -> [UInt8] {
    guard let value = try reading(key, { try reader.withStringBytes { parseHex($0, count: 32) } }) else {
        throw WireFormatError(field: key, message: "must be 64 hexadecimal digits")
    }
    return value
}

/// The header at the start of a snapshot's bytes, in the clear even when the content is
/// end-to-end encrypted: the magic `PLSNAP01`, the shared library's identifier, the server
/// position the snapshot folds the log up to (zigzag varint) and the server's chain value there.
///
/// The server reads it before recording an offer, so the blob a device names is a snapshot of
/// this library at the offered position and chain value — not a photo's blob, which the server
/// would otherwise delete when the snapshot is retired.
public struct SnapshotHeader: Sendable, Hashable {
    /// The first bytes of every snapshot.
    public static let magic = Array("PLSNAP01".utf8)
    /// The most bytes a header takes (magic, identifier, a 10-byte varint, chain value).
    public static let maximumLength = 8 + 16 + 10 + 32

    /// The shared library the snapshot belongs to.
    public var library: UUID
    /// The server position the snapshot folds the log up to.
    public var position: Int64
    /// The server's chain value at ``position``.
    public var chainHash: [UInt8]

    /// Creates a header.
    public init(library: UUID, position: Int64, chainHash: [UInt8]) {
        self.library = library
        self.position = position
        self.chainHash = chainHash
    }

    /// Reads the header at the start of `bytes` (the snapshot's first ``maximumLength`` bytes
    /// suffice), or nil when they do not start with one.
    public static func parse(_ bytes: [UInt8]) -> SnapshotHeader? {
        var reader = ByteReader(bytes)
        guard (try? reader.readRaw(count: magic.count)) == magic, let library = try? reader.readUUID(),
            let position = try? reader.readInt(), let chainHash = try? reader.readRaw(count: 32)
        else { return nil }
        return SnapshotHeader(library: library, position: position, chainHash: chainHash)
    }
}
