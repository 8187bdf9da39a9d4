import Foundation
import LedgerCore
import LedgerStore
import Synchronization

/// A condition on the objects a fetch returns. Conditions on asset properties apply to asset
/// fetches, conditions on titles to album fetches.
public indirect enum FetchPredicate: Sendable, Hashable {
    /// Assets of this media type.
    case mediaType(AssetMediaType)
    /// Favorites (true) or non-favorites (false).
    case isFavorite(Bool)
    /// Hidden (true) or visible (false) assets; implies ``FetchOptions/includeHiddenAssets``.
    case isHidden(Bool)
    /// Assets taken at or after the date.
    case createdOnOrAfter(Date)
    /// Assets taken before the date.
    case createdBefore(Date)
    /// Assets with (true) or without (false) a location.
    case hasLocation(Bool)
    /// Assets taken in the interval (from its start, before its end).
    case createdDuring(DateInterval)
    /// Assets taken inside the region (assets without a location are not).
    case locatedIn(LocationRegion)
    /// Assets at least this many pixels wide.
    case minimumPixelWidth(Int)
    /// Photos of the burst with this identifier (``Asset/burstIdentifier``).
    case burstIdentifier(String)
    /// Assets with every one of these media subtypes.
    case mediaSubtypes(MediaSubtypes)
    /// Albums with exactly this title.
    case title(String)
    /// Albums whose title contains the text (case-insensitive).
    case titleContains(String)
    /// Every condition holds.
    case and([FetchPredicate])
    /// At least one condition holds.
    case or([FetchPredicate])
    /// The condition does not hold.
    case not(FetchPredicate)
}

/// A rectangle of latitudes and longitudes, in degrees, for ``FetchPredicate/locatedIn(_:)``.
/// A region whose `minimumLongitude` is greater than its `maximumLongitude` crosses the 180th
/// meridian.
public struct LocationRegion: Sendable, Hashable {
    /// The southern edge.
    public var minimumLatitude: Double
    /// The northern edge.
    public var maximumLatitude: Double
    /// The western edge.
    public var minimumLongitude: Double
    /// The eastern edge.
    public var maximumLongitude: Double

    /// A rectangle between two latitudes and two longitudes (edges included).
    public init(minimumLatitude: Double, maximumLatitude: Double, minimumLongitude: Double, maximumLongitude: Double) {
        self.minimumLatitude = minimumLatitude
        self.maximumLatitude = maximumLatitude
        self.minimumLongitude = minimumLongitude
        self.maximumLongitude = maximumLongitude
    }

    /// The rectangle that holds the circle of `radius` meters around `center` (on a sphere of
    /// the Earth's mean radius): every asset within the distance, and some near the corners.
    public init(center: Location, radius meters: Double) {
        let degrees = max(0, meters) / 6_371_008.8 * 180 / .pi
        let latitudes = (max(-90, center.latitude - degrees), min(90, center.latitude + degrees))
        let stretch = cos(max(abs(latitudes.0), abs(latitudes.1)) * .pi / 180)
        let spread = stretch > 1e-9 ? degrees / stretch : 360
        if spread >= 180 {
            self.init(minimumLatitude: latitudes.0, maximumLatitude: latitudes.1, minimumLongitude: -180, maximumLongitude: 180)
        } else {
            func wrap(_ longitude: Double) -> Double { longitude > 180 ? longitude - 360 : longitude < -180 ? longitude + 360 : longitude }
            self.init(
                minimumLatitude: latitudes.0, maximumLatitude: latitudes.1, minimumLongitude: wrap(center.longitude - spread),
                maximumLongitude: wrap(center.longitude + spread))
        }
    }

    /// Whether a location is inside.
    public func contains(_ location: Location) -> Bool {
        guard (minimumLatitude...maximumLatitude).contains(location.latitude) else { return false }
        if minimumLongitude <= maximumLongitude { return (minimumLongitude...maximumLongitude).contains(location.longitude) }
        return location.longitude >= minimumLongitude || location.longitude <= maximumLongitude
    }
}

/// A sort key of a fetch.
public enum SortKey: String, Sendable, Hashable {
    case creationDate, modificationDate, addedDate, mediaType, isFavorite, pixelWidth, pixelHeight, duration, title
    /// The distance from ``SortDescriptor/origin`` (assets without a location last); see
    /// ``SortDescriptor/init(distanceFrom:ascending:)``.
    case distance
}

/// A sort order: a key and a direction.
public struct SortDescriptor: Sendable, Hashable {
    /// What to sort by.
    public var key: SortKey
    /// Ascending (oldest, smallest, nearest, false before true first) or descending.
    public var ascending: Bool
    /// The point distances are measured from, for ``SortKey/distance``.
    public var origin: Location?

    /// Creates a sort descriptor.
    public init(_ key: SortKey, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    /// Sorts assets by their distance from `origin` (nearest first when ascending); assets
    /// without a location come last either way.
    public init(distanceFrom origin: Location, ascending: Bool = true) {
        self.key = .distance
        self.ascending = ascending
        self.origin = origin
    }
}

/// Options of a fetch, as PhotoKit's `PHFetchOptions`.
public struct FetchOptions: Sendable, Hashable {
    /// A condition the objects must meet.
    public var predicate: FetchPredicate?
    /// The order; album fetches of assets default to album order, others to creation date.
    public var sortDescriptors: [SortDescriptor] = []
    /// At most this many objects (0 = no limit).
    public var fetchLimit = 0
    /// Whether hidden assets are returned (default false, as in PhotoKit).
    public var includeHiddenAssets = false
    /// Whether every photo of a burst is returned (PhotoKit's `includeAllBurstAssets`); by
    /// default a burst is returned as its representative alone (``Asset/representsBurst``).
    /// Fetches by identifier and by burst identifier return every photo they name regardless.
    public var includeAllBurstAssets = false

    /// Default options.
    public init(
        predicate: FetchPredicate? = nil, sortDescriptors: [SortDescriptor] = [], fetchLimit: Int = 0, includeHiddenAssets: Bool = false,
        includeAllBurstAssets: Bool = false
    ) {
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.includeHiddenAssets = includeHiddenAssets
        self.includeAllBurstAssets = includeAllBurstAssets
    }
}

/// The ordered result of a fetch, as PhotoKit's `PHFetchResult`.
///
/// Which objects it holds, and in which order, is frozen at the fetch: observe the library to
/// get updated results. Like PhotoKit's, a large result reads its objects lazily: the fetch reads
/// the identifiers (and each object's version, for change details) and the first
/// ``FetchResult/batchSize`` objects; the others are read from the library in batches when first
/// accessed, and stay the same afterwards. An object read after it was changed shows the change
/// (the change details of that commit report it).
public struct FetchResult<Element: PhotoObject>: RandomAccessCollection, Sendable {
    /// The identifiers of the objects, in order.
    let identifiers: [UUID]
    /// Each object's modification clock value at the fetch; nil when the result compares whole
    /// objects instead (albums, results built from objects).
    let versions: [Int64]?
    let query: FetchQuery
    /// The commit the result reflects (``PhotoLibrary/changeGeneration(in:)``): change details
    /// of later commits apply to it.
    let generation: Int64
    private let storage: FetchResultStorage<Element>

    /// How many objects a fetch reads with the identifiers, and a lazy read reads at once.
    public static var batchSize: Int { FetchResultStorage<Element>.batchSize }

    /// A result whose objects are all read.
    init(_ objects: [Element], versions: [Int64]? = nil, query: FetchQuery, generation: Int64 = 0, registration: QueryRegistration? = nil) {
        self.identifiers = objects.map(\.id)
        self.versions = versions
        self.query = query
        self.generation = generation
        self.storage = FetchResultStorage(objects: objects.map { $0 }, loader: nil, registration: registration)
    }

    /// A result of `identifiers` whose first objects are `loaded`; `loader` reads the others.
    init(
        identifiers: [UUID], versions: [Int64], loaded: [Element], query: FetchQuery, loader: FetchResultStorage<Element>.Loader?,
        generation: Int64, registration: QueryRegistration?
    ) {
        var objects = [Element?](repeating: nil, count: identifiers.count)
        for (index, object) in loaded.prefix(identifiers.count).enumerated() { objects[index] = object }
        self.init(
            identifiers: identifiers, versions: versions, objects: objects, query: query, loader: loader, generation: generation,
            registration: registration)
    }

    /// A result of `identifiers` of which the `objects` not nil are read; `loader` reads the others.
    init(
        identifiers: [UUID], versions: [Int64], objects: [Element?], query: FetchQuery, loader: FetchResultStorage<Element>.Loader?,
        generation: Int64, registration: QueryRegistration?
    ) {
        self.identifiers = identifiers
        self.versions = versions
        self.query = query
        self.generation = generation
        self.storage = FetchResultStorage(objects: objects, loader: loader, registration: registration)
    }

    /// The objects read so far, by index (nil: not read yet).
    var loadedObjects: [Element?] { storage.loaded }

    public var startIndex: Int { 0 }
    public var endIndex: Int { identifiers.count }
    public subscript(position: Int) -> Element { storage.object(at: position, identifiers: identifiers) }

    /// The object at `index` (PhotoKit's `object(at:)`).
    public func object(at index: Int) -> Element { self[index] }
    /// The objects at `indexes`, in index order, read from the library where not read yet.
    ///
    /// - Throws: ``PhotoLibraryError`` when the library cannot be read; subscripts and iteration
    ///   stop the process in that case instead, so call this first where a read failure must be
    ///   handled.
    public func objects(at indexes: IndexSet) throws -> [Element] {
        try storage.load(Array(indexes), identifiers: identifiers)
        return indexes.map { self[$0] }
    }
    /// The first object, or nil when empty.
    public var firstObject: Element? { isEmpty ? nil : self[0] }
    /// The last object, or nil when empty.
    public var lastObject: Element? { isEmpty ? nil : self[count - 1] }
    /// All objects, in order.
    public var allObjects: [Element] {
        do {
            return try objects(at: IndexSet(integersIn: 0..<count))
        } catch {
            fatalError("\(error)")
        }
    }
}

/// The objects of a fetch result, read in batches on first access.
final class FetchResultStorage<Element: PhotoObject>: Sendable {
    typealias Loader = @Sendable ([UUID]) throws -> [Element]

    static var batchSize: Int { 100 }

    private let objects: Mutex<[Element?]>
    private let loader: Loader?
    /// Keeps the result's query tracked while the result exists (for change details).
    private let registration: QueryRegistration?

    init(objects: [Element?], loader: Loader?, registration: QueryRegistration? = nil) {
        self.objects = Mutex(objects)
        self.loader = loader
        self.registration = registration
    }

    /// The objects read so far.
    var loaded: [Element?] { objects.withLock { $0 } }

    func object(at index: Int, identifiers: [UUID]) -> Element {
        precondition(
            index >= 0 && index < identifiers.count, "index \(index) is out of range: the fetch result has \(identifiers.count) objects")
        if let object = objects.withLock({ $0[index] }) { return object }
        do {
            let start = index - index % Self.batchSize
            try load(Array(start..<min(identifiers.count, start + Self.batchSize)), identifiers: identifiers)
        } catch {
            fatalError("\(error)")
        }
        return objects.withLock { $0[index]! }
    }

    /// Reads the objects at `indexes` that are not read yet, a batch at a time.
    func load(_ indexes: [Int], identifiers: [UUID]) throws {
        let missing = objects.withLock { objects in indexes.filter { objects[$0] == nil } }
        guard !missing.isEmpty else { return }
        guard let loader else { preconditionFailure("a fetch result built from objects has them all") }
        for start in stride(from: 0, to: missing.count, by: Self.batchSize) {
            let batch = Array(missing[start..<min(missing.count, start + Self.batchSize)])
            let found = Dictionary(try loader(batch.map { identifiers[$0] }).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let absent = objects.withLock { objects in
                var absent: UUID?
                for index in batch where objects[index] == nil {
                    if let object = found[identifiers[index]] { objects[index] = object } else { absent = identifiers[index] }
                }
                return absent
            }
            if let absent {
                throw PhotoLibraryError(
                    .internalError,
                    "object \(absent) of a fetch result is no longer in the library's projections; rebuild the views with `photoledger rebuild`"
                )
            }
        }
    }
}

/// How to run a fetch again (for change details).
enum FetchQuery: Sendable, Hashable {
    case assets(FetchOptions)
    case assetsWithIdentifiers([UUID], FetchOptions)
    case assetsInAlbum(UUID, FetchOptions)
    case assetsInSmartAlbum(CollectionSubtype, FetchOptions)
    case collections(CollectionType?, CollectionSubtype, FetchOptions)
    case collectionsWithIdentifiers([UUID], FetchOptions)
    case collectionsContaining(UUID, CollectionType, FetchOptions)
    case keyAssets(UUID, FetchOptions)
    /// The albums and folders in a folder (nil: the top level).
    case collectionsInList(UUID?, FetchOptions)
    /// Folders: these (in this order), or every one.
    case collectionLists([UUID]?, FetchOptions)
    case collectionListsContaining(UUID, FetchOptions)
}

/// SQL for fetches.
enum Fetching {
    static let assetColumns = """
        a.asset_id, a.media_type, a.media_subtypes, a.pixel_width, a.pixel_height, a.duration, a.creation_date, a.modification_hlc,
        a.created_hlc, a.latitude, a.longitude, a.altitude, a.favorite, a.hidden, a.trash_cl, a.trashed_hlc, a.source_device,
        a.content_sha256 IS NOT NULL, a.burst_identifier, a.burst_auto_pick, a.burst_user_pick,
        CASE WHEN a.burst_identifier IS NULL THEN 0 ELSE a.asset_id = \(burstRepresentative) END
        """
    // The last column is a CASE, not an AND: SQLite computes both sides of an AND in a result
    // column, and the representative's subquery would run for every asset of a fetch.

    /// The identifier of the representative of the burst of the asset row `a`: of the burst's
    /// photos not purged nor in Recently Deleted, the first by user pick, camera pick, creation
    /// date (the time it was added when it has none) and identifier.
    static let burstRepresentative = """
        (SELECT b.asset_id FROM assets b WHERE b.burst_identifier = a.burst_identifier AND b.created = 1 AND b.purged = 0
            AND \(CausalLength.present("b.trash_cl"))
        ORDER BY b.burst_user_pick DESC, b.burst_auto_pick DESC, coalesce(b.creation_date, (b.created_hlc >> 16) / 1000.0), b.asset_id
        LIMIT 1)
        """

    /// Whether any asset row is a burst photo (one probe of the burst index).
    static func hasBursts(_ db: Database) throws -> Bool {
        try db.firstRow("SELECT 1 FROM assets WHERE burst_identifier IS NOT NULL LIMIT 1") { _ in true } ?? false
    }

    /// The condition on the asset row `a` that leaves out the photos of a burst other than its
    /// representative.
    static let burstRepresentativesOnly = "(a.burst_identifier IS NULL OR a.asset_id = \(burstRepresentative))"

    /// The column of ``assetColumns`` holding the asset's version (its modification clock value).
    static let versionColumn: Int32 = 7

    static func asset(_ row: Statement) -> Asset {
        let deleted = !CausalLength.isPresent(row.int64(14))
        return Asset(
            id: row.withBlob(0) { UUID(bytes: $0) }!,
            mediaType: AssetMediaType(rawValue: Int(row.int64(1))) ?? .unknown,
            mediaSubtypes: MediaSubtypes(rawValue: Int(row.int64(2))),
            pixelWidth: Int(row.int64(3)), pixelHeight: Int(row.int64(4)), duration: row.double(5),
            creationDate: row.isNull(6) ? nil : Date(timeIntervalSince1970: row.double(6)),
            modificationDate: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(7))).dateValue,
            addedDate: HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(8))).dateValue,
            location: row.isNull(9)
                ? nil : Location(latitude: row.double(9), longitude: row.double(10), altitude: row.isNull(11) ? nil : row.double(11)),
            isFavorite: row.int64(12) == 1, isHidden: row.int64(13) == 1, isDeleted: deleted,
            deletionDate: deleted ? HLCTimestamp(rawValue: UInt64(bitPattern: row.int64(15))).dateValue : nil,
            sourceDevice: DeviceID(row.text(16)), hasAdjustments: row.int64(17) == 1,
            burstIdentifier: row.isNull(18) ? nil : row.text(18),
            burstSelectionTypes: BurstSelectionTypes(rawValue: (row.int64(19) == 1 ? 1 : 0) | (row.int64(20) == 1 ? 2 : 0)),
            representsBurst: row.int64(21) == 1, version: row.int64(7))
    }

    /// An SQL condition and its bound values.
    struct Condition {
        var sql: String
        var values: [any SQLBindable]
    }

    static func condition(_ predicate: FetchPredicate) -> Condition {
        switch predicate {
        case .mediaType(let type): return Condition(sql: "a.media_type = ?", values: [type.rawValue])
        case .isFavorite(let value): return Condition(sql: "a.favorite = ?", values: [value])
        case .isHidden(let value): return Condition(sql: "a.hidden = ?", values: [value])
        case .createdOnOrAfter(let date): return Condition(sql: "a.creation_date >= ?", values: [date.timeIntervalSince1970])
        case .createdBefore(let date): return Condition(sql: "a.creation_date < ?", values: [date.timeIntervalSince1970])
        case .hasLocation(let value): return Condition(sql: value ? "a.latitude IS NOT NULL" : "a.latitude IS NULL", values: [])
        case .minimumPixelWidth(let width): return Condition(sql: "a.pixel_width >= ?", values: [width])
        case .burstIdentifier(let burst): return Condition(sql: "a.burst_identifier = ?", values: [burst])
        case .mediaSubtypes(let subtypes):
            return Condition(sql: "a.media_subtypes & ? = ?", values: [Int64(subtypes.rawValue), Int64(subtypes.rawValue)])
        case .createdDuring(let interval):
            return Condition(
                sql: "(a.creation_date >= ? AND a.creation_date < ?)",
                values: [interval.start.timeIntervalSince1970, interval.end.timeIntervalSince1970])
        case .locatedIn(let region):
            let longitude = region.minimumLongitude <= region.maximumLongitude ? "AND" : "OR"
            return Condition(
                sql: "(a.latitude BETWEEN ? AND ? AND (a.longitude >= ? \(longitude) a.longitude <= ?))",
                values: [region.minimumLatitude, region.maximumLatitude, region.minimumLongitude, region.maximumLongitude])
        case .title(let title): return Condition(sql: "c.title = ?", values: [title])
        case .titleContains(let text):
            let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(
                of: "_", with: "\\_")
            return Condition(sql: "c.title LIKE ? ESCAPE '\\'", values: ["%" + escaped + "%"])
        case .and(let parts), .or(let parts):
            guard !parts.isEmpty else { return Condition(sql: "1", values: []) }
            let conditions = parts.map(condition)
            let joiner: String
            if case .and = predicate { joiner = " AND " } else { joiner = " OR " }
            return Condition(sql: "(" + conditions.map(\.sql).joined(separator: joiner) + ")", values: conditions.flatMap(\.values))
        case .not(let inner):
            let condition = condition(inner)
            return Condition(sql: "NOT (\(condition.sql))", values: condition.values)
        }
    }

    static func mentionsHidden(_ predicate: FetchPredicate?) -> Bool {
        switch predicate {
        case .isHidden: return true
        case .and(let parts), .or(let parts): return parts.contains { mentionsHidden($0) }
        case .not(let inner): return mentionsHidden(inner)
        default: return false
        }
    }

    static func mentionsTitle(_ predicate: FetchPredicate?) -> Bool {
        switch predicate {
        case .title, .titleContains: return true
        case .and(let parts), .or(let parts): return parts.contains { mentionsTitle($0) }
        case .not(let inner): return mentionsTitle(inner)
        default: return false
        }
    }

    static func mentionsAssetKey(_ predicate: FetchPredicate?) -> Bool {
        switch predicate {
        case nil, .title, .titleContains: return false
        case .and(let parts), .or(let parts): return parts.contains { mentionsAssetKey($0) }
        case .not(let inner): return mentionsAssetKey(inner)
        default: return true
        }
    }

    static func order(_ descriptors: [SortDescriptor], defaultOrder: String, forAssets: Bool) throws -> String {
        guard !descriptors.isEmpty else { return defaultOrder }
        let columns = try descriptors.map { descriptor -> String in
            let column: String
            switch (descriptor.key, forAssets) {
            case (.creationDate, true): column = "a.creation_date"
            case (.modificationDate, true): column = "a.modification_hlc"
            case (.addedDate, true): column = "a.created_hlc"
            case (.mediaType, true): column = "a.media_type"
            case (.isFavorite, true): column = "a.favorite"
            case (.pixelWidth, true): column = "a.pixel_width"
            case (.pixelHeight, true): column = "a.pixel_height"
            case (.duration, true): column = "a.duration"
            case (.distance, true):
                guard let origin = descriptor.origin, origin.isValid else {
                    throw PhotoLibraryError(.changeNotSupported, "a distance sort needs a valid origin: use SortDescriptor(distanceFrom:)")
                }
                // Assets without a location last, then the haversine of the great-circle distance
                // (which grows with the distance), with SQLite's math functions.
                let (latitude, longitude) = (origin.latitude * .pi / 180, origin.longitude * .pi / 180)
                let distance =
                    "(sin((radians(a.latitude) - (\(latitude))) / 2) * sin((radians(a.latitude) - (\(latitude))) / 2) + "
                    + "\(cos(latitude)) * cos(radians(a.latitude)) * "
                    + "sin((radians(a.longitude) - (\(longitude))) / 2) * sin((radians(a.longitude) - (\(longitude))) / 2))"
                return "a.latitude IS NULL, " + distance + (descriptor.ascending ? " ASC" : " DESC")
            case (.title, false): column = "c.title"
            case (.creationDate, false): column = "c.created_hlc"
            case (.modificationDate, false): column = "c.modification_hlc"
            default:
                throw PhotoLibraryError(
                    .changeNotSupported,
                    "cannot sort \(forAssets ? "assets" : "albums") by \(descriptor.key.rawValue); choose another sort key")
            }
            return column + (descriptor.ascending ? " ASC" : " DESC")
        }
        return columns.joined(separator: ", ") + (forAssets ? ", a.asset_id" : ", c.album_id")
    }
}
