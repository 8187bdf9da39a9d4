import Foundation
import LedgerCore
import LedgerStore
@_exported import PhotoLedgerTestSupport
import Testing

@testable import PhotoLedger

/// Opens a preauthorized library with a seeded random source and an injected clock.
func makeLibrary(
    _ directory: TemporaryDirectory, device: DeviceID = "anna-phone", seed: UInt64 = 1, clock: TestClock = TestClock(),
    preauthorized: Bool = true, name: String? = nil
) throws -> PhotoLibrary {
    var options = PhotoLibrary.Options()
    options.clock = { clock.read() }
    options.randomSeed = seed
    options.preauthorized = preauthorized
    return try PhotoLibrary(url: directory.file(name ?? "\(device.rawValue).sqlite"), device: device, options: options)
}

/// Metadata for an asset created without resource bytes (projection-level tests).
func imageCreation(
    width: Int = 4032, height: Int = 3024, favorite: Bool = false, hidden: Bool = false, date: Date? = nil,
    mediaType: AssetMediaType = .image
) -> ChangeEvent.AssetCreation {
    ChangeEvent.AssetCreation(
        mediaType: mediaType, mediaSubtypes: [], pixelWidth: width, pixelHeight: height, duration: mediaType == .video ? 12.5 : 0,
        creationDate: date, location: nil, isFavorite: favorite, isHidden: hidden, resources: [])
}

extension PhotoLibrary {
    /// Creates `count` assets in one block and returns their identifiers.
    @discardableResult
    func createAssets(
        _ count: Int, favorite: Bool = false, hidden: Bool = false, mediaType: AssetMediaType = .image,
        dates: [Date]? = nil
    ) throws -> [String] {
        try performChangesAndWait { changes in
            try (0..<count).map { index in
                try changes.createAsset(imageCreation(favorite: favorite, hidden: hidden, date: dates?[index], mediaType: mediaType))
                    .placeholderForCreatedAsset.localIdentifier
            }
        }
    }

    /// Creates an album with assets and returns its identifier.
    @discardableResult
    func createAlbum(_ title: String, assets: [String] = []) throws -> String {
        try performChangesAndWait { changes in
            let album = try changes.createAlbum(title: title)
            try album.addAssets(assets)
            return album.placeholderForCreatedAssetCollection.localIdentifier
        }
    }

    func album(_ identifier: String) throws -> AssetCollection {
        try fetchAssetCollections(withLocalIdentifiers: [identifier]).firstObject!
    }

    /// The identifiers of an album's assets in album order.
    func members(_ albumIdentifier: String) throws -> [String] {
        try fetchAssets(in: album(albumIdentifier)).map(\.localIdentifier)
    }

    /// Every row of every projection table, for comparing libraries.
    func projectionDump() throws -> [String: [[SQLValue]]] {
        try readDatabase { db in
            var dump: [String: [[SQLValue]]] = [:]
            for table in Projection.tables {
                dump[table] = try db.rows("SELECT * FROM \(table) ORDER BY 1, 2") { row in (0..<row.columnCount).map { row.value($0) } }
            }
            return dump
        }
    }

    /// Every event in local order.
    func allEvents() throws -> [Event] {
        try readDatabase { db in
            var events: [Event] = []
            try EventLog(db).forEach { events.append($0.event) }
            return events
        }
    }
}

/// Expects `body` to throw a ``PhotoLibraryError`` with `code`.
func expectError<R>(_ code: PhotoLibraryError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
    let error = #expect(throws: PhotoLibraryError.self, sourceLocation: sourceLocation) { _ = try body() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
}

extension PhotoLibrary {
    /// Waits until every notification handed to the observers' queue has run.
    func flushNotifications() { observers.queue.sync {} }
}
