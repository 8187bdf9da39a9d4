import Foundation
import LedgerCore

/// A resource as recorded in an event.
struct ResourceRecord: Sendable, Hashable {
    var type: ResourceType
    var sha256: [UInt8]
    var size: Int64
    var uniformType: String
    var filename: String

    func write(to writer: inout ByteWriter) {
        writer.write(varint: UInt64(type.rawValue))
        writer.write(raw: sha256)
        writer.write(varint: UInt64(size))
        writer.write(string: uniformType)
        writer.write(string: filename)
    }

    static func read(from reader: inout ByteReader) throws -> ResourceRecord {
        ResourceRecord(
            type: ResourceType(rawValue: Int(try reader.readVarint())), sha256: try reader.readRaw(count: 32),
            size: Int64(try reader.readVarint()), uniformType: try reader.readString(), filename: try reader.readString())
    }

    var resource: AssetResource {
        AssetResource(type: type, sha256: Hex.encode(sha256), size: size, uniformTypeIdentifier: uniformType, originalFilename: filename)
    }
}

/// The decoded payload of a library event.
enum ChangeEvent: Sendable, Hashable {
    /// A new asset with its metadata and resources.
    case assetCreated(AssetCreation)
    /// Scalar properties set (each nil field unchanged).
    case assetChanged(AssetChanges)
    /// Moved to Recently Deleted: the trash causal length after the change (even).
    case assetDeleted(causalLength: Int64)
    /// Recovered from Recently Deleted: the trash causal length after the change (odd).
    case assetRecovered(causalLength: Int64)
    /// Removed for good.
    case assetPurged
    /// A content edit, or a revert to the original when `rendered` is nil.
    case assetContentEdited(ContentEdit)
    /// A new album.
    case albumCreated(title: String, subtype: Int)
    /// A new title.
    case albumRenamed(title: String)
    /// The album was deleted.
    case albumDeleted
    /// Membership or order changes, one entry per asset touched.
    case albumMembersChanged(operation: MembershipOperation, entries: [MemberChange])
    /// This album was merged into `winner`.
    case albumMerged(winner: UUID)

    struct AssetCreation: Sendable, Hashable {
        var mediaType: MediaType
        var mediaSubtypes: MediaSubtypes
        var pixelWidth: Int
        var pixelHeight: Int
        var duration: Double
        var creationDate: Date?
        var location: Location?
        var isFavorite: Bool
        var isHidden: Bool
        var resources: [ResourceRecord]
    }

    /// A scalar change: `.some(nil)` clears an optional field.
    struct AssetChanges: Sendable, Hashable {
        var creationDate: Date??
        var location: Location??
        var isFavorite: Bool?
        var isHidden: Bool?

        var isEmpty: Bool { creationDate == nil && location == nil && isFavorite == nil && isHidden == nil }
    }

    struct ContentEdit: Sendable, Hashable {
        var rendered: ResourceRecord?
        var adjustment: ResourceRecord?
        var adjustmentFormat: String?
    }

    enum MembershipOperation: Int, Sendable, Hashable {
        case add = 1, insert, remove, move, replace, merge
        var name: String {
            switch self {
            case .add: return "addAssets"
            case .insert: return "insertAssets"
            case .remove: return "removeAssets"
            case .move: return "moveAssets"
            case .replace: return "replaceAssets"
            case .merge: return "mergeAlbums"
            }
        }
    }

    struct MemberChange: Sendable, Hashable {
        var asset: UUID
        /// The membership causal length after the change (odd = member), or 0 when unchanged.
        var causalLength: Int64
        /// The new position key, or nil when unchanged.
        var position: String?
    }

    var type: EventType {
        switch self {
        case .assetCreated: return .assetCreated
        case .assetChanged: return .assetChanged
        case .assetDeleted: return .assetDeleted
        case .assetRecovered: return .assetRecovered
        case .assetPurged: return .assetPurged
        case .assetContentEdited: return .assetContentEdited
        case .albumCreated: return .albumCreated
        case .albumRenamed: return .albumRenamed
        case .albumDeleted: return .albumDeleted
        case .albumMembersChanged: return .albumMembersChanged
        case .albumMerged: return .albumMerged
        }
    }

    static let schemaVersion = 1

    // MARK: Encoding

    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 96)
        switch self {
        case .assetCreated(let c):
            w.write(varint: UInt64(c.mediaType.rawValue))
            w.write(varint: UInt64(c.mediaSubtypes.rawValue))
            w.write(varint: UInt64(c.pixelWidth))
            w.write(varint: UInt64(c.pixelHeight))
            w.write(double: c.duration)
            Self.write(date: c.creationDate, to: &w)
            Self.write(location: c.location, to: &w)
            w.write(bool: c.isFavorite)
            w.write(bool: c.isHidden)
            w.write(varint: UInt64(c.resources.count))
            for resource in c.resources { resource.write(to: &w) }
        case .assetChanged(let c):
            let mask: UInt8 = (c.creationDate != nil ? 1 : 0) | (c.location != nil ? 2 : 0) | (c.isFavorite != nil ? 4 : 0) | (c.isHidden != nil ? 8 : 0)
            w.write(byte: mask)
            if let date = c.creationDate { Self.write(date: date, to: &w) }
            if let location = c.location { Self.write(location: location, to: &w) }
            if let favorite = c.isFavorite { w.write(bool: favorite) }
            if let hidden = c.isHidden { w.write(bool: hidden) }
        case .assetDeleted(let cl), .assetRecovered(let cl):
            w.write(varint: UInt64(cl))
        case .assetPurged, .albumDeleted:
            break
        case .assetContentEdited(let edit):
            for record in [edit.rendered, edit.adjustment] {
                w.write(bool: record != nil)
                record?.write(to: &w)
            }
            w.write(string: edit.adjustmentFormat ?? "")
        case .albumCreated(let title, let subtype):
            w.write(string: title)
            w.write(varint: UInt64(subtype))
        case .albumRenamed(let title):
            w.write(string: title)
        case .albumMembersChanged(let operation, let entries):
            w.write(varint: UInt64(operation.rawValue))
            w.write(varint: UInt64(entries.count))
            for entry in entries {
                w.write(uuid: entry.asset)
                w.write(varint: UInt64(entry.causalLength))
                w.write(string: entry.position ?? "")
            }
        case .albumMerged(let winner):
            w.write(uuid: winner)
        }
        return w.bytes
    }

    private static func write(date: Date?, to w: inout ByteWriter) {
        w.write(bool: date != nil)
        if let date { w.write(double: date.timeIntervalSince1970) }
    }

    private static func write(location: Location?, to w: inout ByteWriter) {
        w.write(bool: location != nil)
        guard let location else { return }
        w.write(double: location.latitude)
        w.write(double: location.longitude)
        w.write(bool: location.altitude != nil)
        if let altitude = location.altitude { w.write(double: altitude) }
    }

    // MARK: Decoding

    /// Decodes an event's payload, or returns nil for types and versions this build does not know
    /// (kept in the log and forwarded, never dropped; they do not change the projections).
    static func decode(type: String, schemaVersion: Int, payload: [UInt8]) throws -> ChangeEvent? {
        guard let type = EventType(rawValue: type) else { return nil }
        return try decode(type: type, schemaVersion: schemaVersion, payload: payload)
    }

    /// Decodes the payload of an event of a known type (nil for a newer schema version).
    static func decode(type: EventType, schemaVersion: Int, payload: [UInt8]) throws -> ChangeEvent? {
        guard schemaVersion <= Self.schemaVersion else { return nil }
        var r = ByteReader(payload)
        switch type {
        case .assetCreated:
            let mediaType = MediaType(rawValue: Int(try r.readVarint())) ?? .unknown
            let subtypes = MediaSubtypes(rawValue: Int(try r.readVarint()))
            let width = Int(try r.readVarint()), height = Int(try r.readVarint())
            let duration = try r.readDouble()
            let date = try readDate(&r)
            let location = try readLocation(&r)
            let favorite = try r.readBool(), hidden = try r.readBool()
            let count = Int(try r.readVarint())
            guard count <= payload.count else { throw DecodingError("a resource count of \(count)", offset: r.offset) }
            let resources = try (0..<count).map { _ in try ResourceRecord.read(from: &r) }
            return .assetCreated(
                AssetCreation(
                    mediaType: mediaType, mediaSubtypes: subtypes, pixelWidth: width, pixelHeight: height, duration: duration,
                    creationDate: date, location: location, isFavorite: favorite, isHidden: hidden, resources: resources))
        case .assetChanged:
            let mask = try r.readByte()
            var changes = AssetChanges()
            if mask & 1 != 0 { changes.creationDate = .some(try readDate(&r)) }
            if mask & 2 != 0 { changes.location = .some(try readLocation(&r)) }
            if mask & 4 != 0 { changes.isFavorite = try r.readBool() }
            if mask & 8 != 0 { changes.isHidden = try r.readBool() }
            return .assetChanged(changes)
        case .assetDeleted: return .assetDeleted(causalLength: Int64(try r.readVarint()))
        case .assetRecovered: return .assetRecovered(causalLength: Int64(try r.readVarint()))
        case .assetPurged: return .assetPurged
        case .assetContentEdited:
            let rendered = try r.readBool() ? try ResourceRecord.read(from: &r) : nil
            let adjustment = try r.readBool() ? try ResourceRecord.read(from: &r) : nil
            let format = try r.readString()
            return .assetContentEdited(ContentEdit(rendered: rendered, adjustment: adjustment, adjustmentFormat: format.isEmpty ? nil : format))
        case .albumCreated: return .albumCreated(title: try r.readString(), subtype: Int(try r.readVarint()))
        case .albumRenamed: return .albumRenamed(title: try r.readString())
        case .albumDeleted: return .albumDeleted
        case .albumMembersChanged:
            let operation = MembershipOperation(rawValue: Int(try r.readVarint())) ?? .add
            let count = Int(try r.readVarint())
            guard count <= payload.count else { throw DecodingError("an entry count of \(count)", offset: r.offset) }
            let entries = try (0..<count).map { _ in
                let asset = try r.readUUID()
                let cl = Int64(try r.readVarint())
                let position = try r.readString()
                return MemberChange(asset: asset, causalLength: cl, position: position.isEmpty ? nil : position)
            }
            return .albumMembersChanged(operation: operation, entries: entries)
        case .albumMerged: return .albumMerged(winner: try r.readUUID())
        }
    }

    private static func readDate(_ r: inout ByteReader) throws -> Date? {
        try r.readBool() ? Date(timeIntervalSince1970: try r.readDouble()) : nil
    }

    private static func readLocation(_ r: inout ByteReader) throws -> Location? {
        guard try r.readBool() else { return nil }
        let latitude = try r.readDouble(), longitude = try r.readDouble()
        let altitude = try r.readBool() ? try r.readDouble() : nil
        return Location(latitude: latitude, longitude: longitude, altitude: altitude)
    }
}
