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
        let type = try reader.readCount("a resource type", upTo: Int(Int32.max))
        let sha256 = try reader.readRaw(count: 32)
        let size = try reader.readCount("a resource size", upTo: Int(PayloadLimits.maximumResourceSize))
        let uniformType = try reader.readBoundedString("a uniform type", upTo: PayloadLimits.maximumNameLength)
        let filename = try reader.readBoundedString("a file name", upTo: PayloadLimits.maximumNameLength)
        return ResourceRecord(
            type: ResourceType(rawValue: type), sha256: sha256, size: Int64(size), uniformType: uniformType, filename: filename)
    }

    var resource: AssetResource {
        AssetResource(type: type, sha256: Hex.encode(sha256), size: size, uniformTypeIdentifier: uniformType, originalFilename: filename)
    }
}

/// A rendition a device made of one of an asset's resources and recorded for the others
/// (`asset.renditionRecorded`): the resource it was made from, its box size and mode, and its
/// own bytes, a derived resource stored and synced like a resource, never shown as one.
struct RenditionRecord: Sendable, Hashable {
    /// SHA-256 of the resource the rendition was made from.
    var source: [UInt8]
    /// The side of its box in pixels (one of the image manager's box sizes).
    var boxSize: Int
    /// Aspect fill (true) or fit (false).
    var fills: Bool
    /// SHA-256 of the rendition's encoded bytes.
    var sha256: [UInt8]
    /// Its size in bytes.
    var size: Int64
    /// A PNG (true) or a JPEG (false).
    var isPNG: Bool

    func write(to writer: inout ByteWriter) {
        writer.write(raw: source)
        writer.write(varint: UInt64(boxSize))
        writer.write(bool: fills)
        writer.write(raw: sha256)
        writer.write(varint: UInt64(size))
        writer.write(bool: isPNG)
    }

    static func read(from reader: inout ByteReader) throws -> RenditionRecord {
        let source = try reader.readRaw(count: 32)
        let box = try reader.readCount("a rendition box size", upTo: PayloadLimits.maximumPixels)
        guard PayloadLimits.renditionBoxSizes.contains(box) else {
            throw PayloadError("a rendition box size of \(box) (not one of \(PayloadLimits.renditionBoxSizes))")
        }
        let fills = try reader.readBool()
        let sha256 = try reader.readRaw(count: 32)
        let size = try reader.readCount("a rendition size", upTo: PayloadLimits.maximumRenditionSize)
        guard size > 0 else { throw PayloadError("an empty rendition") }
        return RenditionRecord(source: source, boxSize: box, fills: fills, sha256: sha256, size: Int64(size), isPNG: try reader.readBool())
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
    /// A rendition of one of the asset's resources, recorded by the device that made it.
    case renditionRecorded(RenditionRecord)
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
    /// The album's key asset chosen (nil: cleared, the first asset is the cover again).
    case albumKeyAssetSet(asset: UUID?)
    /// The album moved into a folder (nil: the top level).
    case albumMoved(parent: UUID?)
    /// A new folder.
    case listCreated(title: String)
    /// A folder's new title.
    case listRenamed(title: String)
    /// The folder was deleted.
    case listDeleted
    /// The folder moved into another folder (nil: the top level).
    case listMoved(parent: UUID?)
    /// The album's position key among the collections of its folder.
    case albumPositioned(position: String)
    /// The folder's position key among the collections of its folder.
    case listPositioned(position: String)

    struct AssetCreation: Sendable, Hashable {
        var mediaType: AssetMediaType
        var mediaSubtypes: MediaSubtypes
        var pixelWidth: Int
        var pixelHeight: Int
        var duration: Double
        var creationDate: Date?
        var location: Location?
        var isFavorite: Bool
        var isHidden: Bool
        var resources: [ResourceRecord]
        /// The burst the photo belongs to (version 3; nil: none).
        var burstIdentifier: String? = nil
        /// How it was selected in its burst (version 3).
        var burstSelectionTypes: BurstSelectionTypes = []
    }

    /// A scalar change: `.some(nil)` clears an optional field.
    struct AssetChanges: Sendable, Hashable {
        var creationDate: Date??
        var location: Location??
        var isFavorite: Bool?
        var isHidden: Bool?
        /// Whether the user picked the photo in its burst (version 3).
        var burstUserPick: Bool? = nil

        var isEmpty: Bool { creationDate == nil && location == nil && isFavorite == nil && isHidden == nil && burstUserPick == nil }
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
        case .renditionRecorded: return .assetRenditionRecorded
        case .albumCreated: return .albumCreated
        case .albumRenamed: return .albumRenamed
        case .albumDeleted: return .albumDeleted
        case .albumMembersChanged: return .albumMembersChanged
        case .albumMerged: return .albumMerged
        case .albumKeyAssetSet: return .albumKeyAssetSet
        case .albumMoved: return .albumMoved
        case .listCreated: return .collectionListCreated
        case .listRenamed: return .collectionListRenamed
        case .listDeleted: return .collectionListDeleted
        case .listMoved: return .collectionListMoved
        case .albumPositioned: return .albumPositioned
        case .listPositioned: return .collectionListPositioned
        }
    }

    // MARK: Encoding

    /// The lowest schema version that carries the change: 3 for a burst photo's creation or a
    /// burst pick, 2 otherwise, so builds that read version 2 keep folding every other change.
    var schemaVersion: Int {
        switch self {
        case .assetCreated(let c) where c.burstIdentifier != nil || !c.burstSelectionTypes.isEmpty: return 3
        case .assetChanged(let c) where c.burstUserPick != nil: return 3
        default: return 2
        }
    }

    /// The payload in ``schemaVersion`` (version 2 or 3), with the writer's causal claims.
    func encoded(claims: CausalClaims = CausalClaims()) -> [UInt8] {
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
            // Version 3: the burst, after the version 1 fields.
            if schemaVersion >= 3 {
                w.write(string: c.burstIdentifier ?? "")
                w.write(varint: UInt64(c.burstSelectionTypes.rawValue))
            }
        case .assetChanged(let c):
            w.write(byte: c.mask)
            if let date = c.creationDate { Self.write(date: date, to: &w) }
            if let location = c.location { Self.write(location: location, to: &w) }
            if let favorite = c.isFavorite { w.write(bool: favorite) }
            if let hidden = c.isHidden { w.write(bool: hidden) }
            if let pick = c.burstUserPick { w.write(bool: pick) }
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
        case .renditionRecorded(let rendition):
            rendition.write(to: &w)
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
        case .albumKeyAssetSet(let asset), .albumMoved(let asset), .listMoved(let asset):
            w.write(bool: asset != nil)
            if let asset { w.write(uuid: asset) }
        case .listCreated(let title), .listRenamed(let title), .albumPositioned(let title), .listPositioned(let title):
            w.write(string: title)
        case .listDeleted:
            break
        }
        // Version 2: the claims, after the version 1 fields, one per register written.
        for field in registers { CausalClaims.write(claims.overwritten[field] ?? nil, to: &w) }
        return w.bytes
    }

    /// The last-writer-wins registers the change writes, in payload order: the fields a causal
    /// claim is recorded for.
    var registers: [RegisterField] {
        var fields: [RegisterField] = []
        forEachRegister { fields.append($0) }
        return fields
    }

    /// Calls `body` with each register of ``registers``, in order, without making the list.
    func forEachRegister(_ body: (RegisterField) throws -> Void) rethrows {
        switch self {
        case .assetChanged(let c):
            if c.creationDate != nil { try body(.creationDate) }
            if c.location != nil { try body(.location) }
            if c.isFavorite != nil { try body(.isFavorite) }
            if c.isHidden != nil { try body(.isHidden) }
            if c.burstUserPick != nil { try body(.burstUserPick) }
        case .assetContentEdited: try body(.content)
        case .albumRenamed, .listRenamed: try body(.title)
        case .albumKeyAssetSet: try body(.keyAsset)
        case .albumMoved, .listMoved: try body(.parent)
        case .albumPositioned, .listPositioned: try body(.collectionPosition)
        case .albumMembersChanged(_, let entries):
            for entry in entries where entry.position != nil { try body(.position(asset: entry.asset)) }
        default: break
        }
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

    /// Decodes a payload of a known type in schema version 1, 2 or 3, totally: every integer is
    /// range-checked before it is converted, every count and length is bounded by the bytes
    /// left, every enumeration is closed, every value is checked (``PayloadLimits``), and bytes
    /// after the last field are an error. Version 1 payloads carry no claims (nil); burst fields
    /// exist from version 3 (an older payload that claims them is invalid).
    ///
    /// - Throws: ``PayloadError`` naming what is wrong.
    static func decode(type: EventType, version: Int, payload: [UInt8]) throws(PayloadError) -> (ChangeEvent, CausalClaims?) {
        var claims = CausalClaims()
        let change = try decode(type: type, version: version, payload: payload) { field, r in
            claims.overwritten[field] = try CausalClaims.read(&r)
        }
        return (change, version >= 2 ? claims : nil)
    }

    /// Decodes like ``decode(type:version:payload:)``, and checks the writer's claims against
    /// `stamp` as it reads them instead of keeping them (a fold needs the verdict, not the
    /// claims). Returns the change, and whether a claim names a write at or after `stamp`'s
    /// clock value (a contradiction: decoding again, keeping the claims, names it).
    ///
    /// - Throws: ``PayloadError``, exactly as ``decode(type:version:payload:)`` does.
    static func decode(
        type: EventType, version: Int, payload: [UInt8], checkingClaimsAgainst stamp: WriterStamp
    ) throws(PayloadError) -> (change: ChangeEvent, contradicted: Bool) {
        var contradicted = false
        let change = try decode(type: type, version: version, payload: payload) { _, r in
            if let hlc = try CausalClaims.readClock(&r), hlc >= stamp.hlc { contradicted = true }
        }
        return (change, contradicted)
    }

    /// Decodes the fields, then hands `claim` the reader at each register's claim (version 2
    /// on), in payload order.
    private static func decode(
        type: EventType, version: Int, payload: [UInt8], claim: (RegisterField, inout ByteReader) throws -> Void
    ) throws(PayloadError) -> ChangeEvent {
        var r = ByteReader(payload)
        do {
            let change = try decodeFields(type: type, version: version, payload: payload, &r)
            if version >= 2 { try change.forEachRegister { try claim($0, &r) } }
            guard r.isAtEnd else { throw PayloadError("\(payload.count - r.offset) bytes follow the last field") }
            return change
        } catch let error as PayloadError {
            throw error
        } catch let error as DecodingError {
            throw PayloadError(error.description)
        } catch {
            throw PayloadError("\(error)")
        }
    }

    private static func decodeFields(type: EventType, version: Int, payload: [UInt8], _ r: inout ByteReader) throws -> ChangeEvent {
        switch type {
        case .assetCreated:
            let rawType = try r.readCount("a media type", upTo: 3)
            let subtypes = try r.readCount("media subtypes", upTo: Int(Int32.max))
            let width = try r.readCount("a pixel width", upTo: PayloadLimits.maximumPixels)
            let height = try r.readCount("a pixel height", upTo: PayloadLimits.maximumPixels)
            let duration = try r.readDouble()
            guard duration.isFinite, (0...PayloadLimits.maximumDuration).contains(duration) else {
                throw PayloadError("a duration of \(duration) seconds")
            }
            let date = try readDate(&r)
            let location = try readLocation(&r)
            let favorite = try r.readBool(), hidden = try r.readBool()
            let count = try r.readCount("a resource count", upTo: PayloadLimits.maximumResources)
            var resources: [ResourceRecord] = []
            for _ in 0..<count { resources.append(try ResourceRecord.read(from: &r)) }
            var creation = AssetCreation(
                mediaType: AssetMediaType(rawValue: rawType)!, mediaSubtypes: MediaSubtypes(rawValue: subtypes), pixelWidth: width,
                pixelHeight: height, duration: duration, creationDate: date, location: location, isFavorite: favorite, isHidden: hidden,
                resources: resources)
            if version >= 3 {
                let burst = try r.readBoundedString("a burst identifier", upTo: PayloadLimits.maximumBurstIdentifierLength)
                let selection = try r.readCount("burst selection types", upTo: 3)
                guard !burst.isEmpty || selection == 0 else { throw PayloadError("burst selection types without a burst") }
                creation.burstIdentifier = burst.isEmpty ? nil : burst
                creation.burstSelectionTypes = BurstSelectionTypes(rawValue: selection)
            }
            return .assetCreated(creation)
        case .assetChanged:
            let mask = try r.readByte()
            let known: UInt8 = version >= 3 ? 0x1F : 0x0F
            guard mask != 0, mask & ~known == 0 else { throw PayloadError("a change mask of \(mask) in version \(version)") }
            var changes = AssetChanges()
            if mask & 1 != 0 { changes.creationDate = .some(try readDate(&r)) }
            if mask & 2 != 0 { changes.location = .some(try readLocation(&r)) }
            if mask & 4 != 0 { changes.isFavorite = try r.readBool() }
            if mask & 8 != 0 { changes.isHidden = try r.readBool() }
            if mask & 16 != 0 { changes.burstUserPick = try r.readBool() }
            return .assetChanged(changes)
        case .assetDeleted, .assetRecovered:
            let cl = try r.readCount("a causal length", upTo: Int(Int64.max))
            let deleted = type == .assetDeleted
            // Deleting makes the trash causal length even (at least 2), recovering odd (at least 3).
            guard cl >= (deleted ? 2 : 3), CausalLength.isPresent(Int64(cl)) != deleted else {
                throw PayloadError("a causal length of \(cl) for \(deleted ? "a deletion (even, from 2)" : "a recovery (odd, from 3)")")
            }
            return deleted ? .assetDeleted(causalLength: Int64(cl)) : .assetRecovered(causalLength: Int64(cl))
        case .assetPurged: return .assetPurged
        case .assetContentEdited:
            let rendered = try r.readBool() ? try ResourceRecord.read(from: &r) : nil
            let adjustment = try r.readBool() ? try ResourceRecord.read(from: &r) : nil
            let format = try r.readBoundedString("an adjustment format", upTo: PayloadLimits.maximumNameLength)
            return .assetContentEdited(
                ContentEdit(rendered: rendered, adjustment: adjustment, adjustmentFormat: format.isEmpty ? nil : format))
        case .assetRenditionRecorded: return .renditionRecorded(try RenditionRecord.read(from: &r))
        case .albumCreated:
            let title = try r.readBoundedString("a title", upTo: PayloadLimits.maximumTitleLength)
            let subtype = try r.readCount("an album subtype", upTo: Int(Int32.max))
            return .albumCreated(title: title, subtype: subtype)
        case .albumRenamed: return .albumRenamed(title: try r.readBoundedString("a title", upTo: PayloadLimits.maximumTitleLength))
        case .albumDeleted: return .albumDeleted
        case .albumMembersChanged:
            let rawOperation = try r.readCount("a membership operation", upTo: 255)
            guard let operation = MembershipOperation(rawValue: rawOperation) else {
                throw PayloadError("a membership operation of \(rawOperation)")
            }
            // An entry takes at least 18 bytes: the count cannot promise more entries than that.
            let count = try r.readCount("an entry count", upTo: min(PayloadLimits.maximumEntries, payload.count / 18))
            guard count > 0 else { throw PayloadError("a membership change without entries") }
            var entries: [MemberChange] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let asset = try r.readUUID()
                let cl = try r.readCount("a causal length", upTo: Int(Int64.max))
                let position = try r.readBoundedString("a position key", upTo: PayloadLimits.maximumPositionLength)
                guard position.isEmpty || FractionalIndex.isValid(position) else {
                    throw PayloadError("an invalid position key '\(position)'")
                }
                guard cl > 0 || !position.isEmpty else { throw PayloadError("an entry that changes nothing") }
                entries.append(MemberChange(asset: asset, causalLength: Int64(cl), position: position.isEmpty ? nil : position))
            }
            return .albumMembersChanged(operation: operation, entries: entries)
        case .albumMerged: return .albumMerged(winner: try r.readUUID())
        case .albumKeyAssetSet: return .albumKeyAssetSet(asset: try r.readBool() ? try r.readUUID() : nil)
        case .albumMoved: return .albumMoved(parent: try r.readBool() ? try r.readUUID() : nil)
        case .collectionListMoved: return .listMoved(parent: try r.readBool() ? try r.readUUID() : nil)
        case .collectionListCreated: return .listCreated(title: try r.readBoundedString("a title", upTo: PayloadLimits.maximumTitleLength))
        case .collectionListRenamed: return .listRenamed(title: try r.readBoundedString("a title", upTo: PayloadLimits.maximumTitleLength))
        case .collectionListDeleted: return .listDeleted
        case .albumPositioned, .collectionListPositioned:
            let position = try r.readBoundedString("a position key", upTo: PayloadLimits.maximumPositionLength)
            guard FractionalIndex.isValid(position) else { throw PayloadError("an invalid position key '\(position)'") }
            return type == .albumPositioned ? .albumPositioned(position: position) : .listPositioned(position: position)
        }
    }

    private static func readDate(_ r: inout ByteReader) throws -> Date? {
        guard try r.readBool() else { return nil }
        let seconds = try r.readDouble()
        guard seconds.isFinite, abs(seconds) <= PayloadLimits.maximumDateSeconds else { throw PayloadError("a date of \(seconds) seconds") }
        return Date(timeIntervalSince1970: seconds)
    }

    private static func readLocation(_ r: inout ByteReader) throws -> Location? {
        guard try r.readBool() else { return nil }
        let latitude = try r.readDouble(), longitude = try r.readDouble()
        let altitude = try r.readBool() ? try r.readDouble() : nil
        let location = Location(latitude: latitude, longitude: longitude, altitude: altitude)
        guard location.isValid else { throw PayloadError("a location of \(location)") }
        return location
    }
}

/// The bounds a decoded payload's values must keep: anything beyond them is a damaged or hostile
/// event, quarantined rather than folded.
enum PayloadLimits {
    /// Pixels along one side.
    static let maximumPixels = 1 << 20
    /// Seconds of a video.
    static let maximumDuration = 1e9
    /// Seconds from 1970, either way (the years 1 to 9999 and a little more).
    static let maximumDateSeconds = 253_402_300_800.0
    /// Resources of one asset.
    static let maximumResources = 64
    /// Bytes of one resource.
    static let maximumResourceSize: Int64 = 1 << 50
    /// Bytes of one recorded rendition (a 2048-pixel PNG with transparency stays far below).
    static let maximumRenditionSize = 64 << 20
    /// The box sizes a rendition may be recorded at.
    static let renditionBoxSizes = [256, 512, 1024, 2048]
    /// Bytes of a uniform type identifier, a file name or an adjustment format.
    static let maximumNameLength = 4096
    /// Bytes of an album title.
    static let maximumTitleLength = 16_384
    /// Bytes of a position key.
    static let maximumPositionLength = 1024
    /// Entries of one membership change.
    static let maximumEntries = 100_000
    /// Bytes of a burst identifier.
    static let maximumBurstIdentifierLength = 256
}

/// A payload that does not decode, or decodes to values no valid event has.
struct PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// A last-writer-wins register of an object, named for causal claims.
enum RegisterField: Hashable, Sendable {
    case creationDate, location, isFavorite, isHidden, content, title
    /// Whether the user picked a burst photo.
    case burstUserPick
    /// An album's key asset.
    case keyAsset
    /// The folder holding an album or a folder.
    case parent
    /// The place of an album or a folder among the collections of its folder.
    case collectionPosition
    /// The position of `asset` in the album the change is about.
    case position(asset: UUID)
}

/// What the writer of a change had seen: for each register it wrote, the stamp of the write in
/// effect on the writer's device when it wrote (nil: none). Verdicts in an object's history
/// (replaced or overruled) come from these claims, never from the order events arrived in.
struct CausalClaims: Sendable, Hashable {
    var overwritten: [RegisterField: WriterStamp?] = [:]

    static func write(_ stamp: WriterStamp?, to w: inout ByteWriter) {
        w.write(bool: stamp != nil)
        guard let stamp else { return }
        w.write(fixed: UInt64(bitPattern: stamp.hlc))
        w.write(string: stamp.device)
    }

    static func read(_ r: inout ByteReader) throws -> WriterStamp? {
        guard try r.readBool() else { return nil }
        let hlc = Int64(bitPattern: try r.readFixed())
        let device = try r.readString()
        guard DeviceID.problem(with: device) == nil else { throw PayloadError("a claim naming the device '\(device)'") }
        return WriterStamp(hlc: hlc, device: device)
    }

    /// Reads a claim as ``read(_:)`` does (and fails as it does), keeping only its clock value:
    /// the device's name is checked where it lies, without making a string of it.
    static func readClock(_ r: inout ByteReader) throws -> Int64? {
        let start = r
        guard try r.readBool() else { return nil }
        let hlc = Int64(bitPattern: try r.readFixed())
        if try r.withBytes({ DeviceID.isValid(utf8: $0) }) { return hlc }
        // Not a device's name: read again as text, for the error that names it.
        r = start
        return try read(&r)?.hlc
    }

    /// The first claim, in the order `change` writes its registers, that names a write whose
    /// clock value is not below `stamp`'s: a writer's clock is always ahead of every write it
    /// has seen, so such a claim is false.
    func contradiction(of change: ChangeEvent, writtenAt stamp: WriterStamp) -> (RegisterField, WriterStamp)? {
        var found: (RegisterField, WriterStamp)?
        change.forEachRegister { field in
            if found == nil, let claimed = overwritten[field] ?? nil, claimed.hlc >= stamp.hlc { found = (field, claimed) }
        }
        return found
    }
}

extension ChangeEvent.AssetChanges {
    /// The bits of the fields set: 1 creation date, 2 location, 4 favorite, 8 hidden, 16 burst
    /// user pick (version 3).
    var mask: UInt8 {
        (creationDate != nil ? 1 : 0) | (location != nil ? 2 : 0) | (isFavorite != nil ? 4 : 0) | (isHidden != nil ? 8 : 0)
            | (burstUserPick != nil ? 16 : 0)
    }
}

extension ByteReader {
    /// Reads a varint that must not exceed `limit`, as an `Int`.
    mutating func readCount(_ what: @autoclosure () -> String, upTo limit: Int) throws -> Int {
        let offset = self.offset
        let value = try readVarint()
        guard value <= UInt64(limit) else { throw DecodingError("\(what()) of \(value) (at most \(limit))", offset: offset) }
        return Int(value)
    }

    /// Reads a string of at most `limit` bytes.
    mutating func readBoundedString(_ what: @autoclosure () -> String, upTo limit: Int) throws -> String {
        let offset = self.offset
        let value = try readString()
        guard value.utf8.count <= limit else {
            throw DecodingError("\(what()) of \(value.utf8.count) bytes (at most \(limit))", offset: offset)
        }
        return value
    }
}
