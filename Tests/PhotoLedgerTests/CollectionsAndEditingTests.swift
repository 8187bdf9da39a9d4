import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Smart albums, the collections of an asset, content editing")
struct CollectionsAndEditingTests {
    func smartAlbum(_ library: PhotoLibrary, _ subtype: CollectionSubtype) throws -> AssetCollection {
        try #require(try library.fetchAssetCollections(with: .smartAlbum, subtype: subtype).firstObject)
    }

    @Test("Hidden, Live Photos and Animated list what the metadata says; Hidden is the one place hidden assets show unasked")
    func metadataSmartAlbums() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let ids = try library.performChangesAndWait { changes in
            try [MediaSubtypes.photoLive, .photoAnimation, []].map { subtypes in
                var creation = imageCreation()
                creation.mediaSubtypes = subtypes
                return try changes.createAsset(creation).placeholderForCreatedAsset.localIdentifier
            }
        }
        let hidden = try library.createAssets(2, hidden: true)
        try library.performChangesAndWait { try $0.deleteAssets([hidden[1]]) }
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumAllHidden)).map(\.localIdentifier) == [hidden[0]])
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumLivePhotos)).map(\.localIdentifier) == [ids[0]])
        #expect(try library.fetchAssets(in: smartAlbum(library, .smartAlbumAnimated)).map(\.localIdentifier) == [ids[1]])
        #expect(try library.fetchAssets().count == 3, "All Photos leaves hidden assets out")
        let hiddenAlbum = try smartAlbum(library, .smartAlbumAllHidden)
        #expect(hiddenAlbum.title == "Hidden" && hiddenAlbum.estimatedAssetCount == 1)
        #expect(try library.fetchAssetCollections(with: .smartAlbum).map(\.subtype).contains(.smartAlbumLivePhotos))
    }

    @Test("the collections that contain an asset: albums (merged ones as their winner) and smart albums")
    func collectionsContaining() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(2, favorite: true)
        let trip = try library.createAlbum("Trip", assets: assets)
        let pets = try library.createAlbum("Pets", assets: [assets[0]])
        _ = try library.createAlbum("Work")
        let albums = try library.fetchAssetCollectionsContaining(assets[0], with: .album).map(\.localIdentifier)
        #expect(Set(albums) == [trip, pets])
        #expect(try library.fetchAssetCollectionsContaining(assets[1], with: .album).map(\.localIdentifier) == [trip])
        let smart = try library.fetchAssetCollectionsContaining(assets[0], with: .smartAlbum).map(\.subtype)
        #expect(Set(smart) == [.smartAlbumUserLibrary, .smartAlbumFavorites, .smartAlbumRecentlyAdded])
        let merged = try library.performChangesAndWait { try $0.mergeAlbums([trip, pets]).localIdentifier }
        #expect(try library.fetchAssetCollectionsContaining(assets[0], with: .album).map(\.localIdentifier) == [merged])
        try library.performChangesAndWait { try $0.albumChangeRequest(for: merged).removeAssets([assets[0]]) }
        #expect(try library.fetchAssetCollectionsContaining(assets[0], with: .album).isEmpty)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: assets[1]).setHidden(true) }
        let hiddenIn = try library.fetchAssetCollectionsContaining(assets[1], with: .smartAlbum).map(\.subtype)
        #expect(Set(hiddenIn) == [.smartAlbumAllHidden])
        expectError(.identifierNotFound) { try library.fetchAssetCollectionsContaining("not an identifier", with: .album) }
    }

    @Test("content editing: the adjustment data reads back; an app that handles it gets the original, another the rendition")
    func contentEditingInput() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let original = samplePhoto(1), rendered = samplePhoto(2)
        let id = try library.performChangesAndWait { try $0.createAsset(from: original).placeholderForCreatedAsset.localIdentifier }
        let fresh = try library.requestContentEditingInput(for: id, options: .init(canHandleAdjustmentData: { _ in true }))
        #expect(fresh.adjustmentData == nil && fresh.baseVersion == .unadjusted)
        #expect(try Data(contentsOf: fresh.fullSizeImageURL) == original)
        #expect(try library.adjustmentData(for: id) == nil)

        let adjustment = AdjustmentData(formatIdentifier: "com.example.filters", formatVersion: "2.1", data: Data("sepia 0.4".utf8))
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: id).setContentEditingOutput(
                ContentEditingOutput(contentEditingInput: fresh, adjustmentData: adjustment, renderedContent: .data(rendered)))
        }
        #expect(try library.adjustmentData(for: id) == adjustment)
        let handled = try library.requestContentEditingInput(
            for: id,
            options: .init(canHandleAdjustmentData: { $0.formatIdentifier == "com.example.filters" && $0.formatVersion.hasPrefix("2.") }))
        #expect(handled.adjustmentData == adjustment && handled.baseVersion == .unadjusted)
        #expect(try Data(contentsOf: handled.fullSizeImageURL) == original, "an app that handles the edit redoes it from the original")
        let other = try library.requestContentEditingInput(
            for: id, options: .init(canHandleAdjustmentData: { $0.formatIdentifier == "org.other" }))
        #expect(other.adjustmentData == nil && other.baseVersion == .current)
        #expect(try Data(contentsOf: other.fullSizeImageURL) == rendered, "another app edits on top of what the asset shows")
        #expect(other.mediaType == .image && other.uniformTypeIdentifier == "public.jpeg")

        // resources(for:) lists the photo, the edit's rendition and its adjustment data.
        let resources = try library.resources(for: id)
        #expect(resources.map(\.type) == [.photo, .fullSizePhoto, .adjustmentData])
        #expect(resources[1].originalFilename == "FullSizeRender.jpg" && resources[1].size == Int64(rendered.count))
        #expect(try library.requestData(for: resources[2]) == Data(adjustment.encoded))
        try library.performChangesAndWait { try $0.assetChangeRequest(for: id).revertAssetContentToOriginal() }
        #expect(try library.resources(for: id).map(\.type) == [.photo])
        #expect(try library.adjustmentData(for: id) == nil)
        expectError(.identifierNotFound) { try library.requestContentEditingInput(for: "\(UUID().uuidString)/L0/001") }
    }

    @Test("adjustment data that does not read is an edit no app can handle, never a crash")
    func unreadableAdjustmentData() throws {
        #expect(AdjustmentData(decoding: []) == nil)
        #expect(AdjustmentData(decoding: [0xFF, 0xFF, 0xFF]) == nil)
        let good = AdjustmentData(formatIdentifier: "a", formatVersion: "1", data: Data([1, 2]))
        #expect(AdjustmentData(decoding: good.encoded) == good)
        #expect(AdjustmentData(decoding: good.encoded + [0]) == nil, "bytes after the data")
    }
}

@Suite("Location and date predicates, distance sorts")
struct LocationFetchTests {
    @Test("regions (also across the 180th meridian), date intervals, and/or/not, limits, and sorting by distance")
    func locationAndDates() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let places: [(String, Location?)] = [
            ("paris", Location(latitude: 48.8566, longitude: 2.3522, altitude: nil)),
            ("versailles", Location(latitude: 48.8049, longitude: 2.1204, altitude: 130)),
            ("lyon", Location(latitude: 45.764, longitude: 4.8357, altitude: nil)),
            ("fiji", Location(latitude: -17.7134, longitude: 178.065, altitude: nil)),
            ("samoa", Location(latitude: -13.759, longitude: -172.1046, altitude: nil)),
            ("nowhere", nil),
        ]
        let ids = try library.performChangesAndWait { changes in
            try places.enumerated().map { index, place in
                let id = try changes.createAsset(imageCreation(date: Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 86_400)))
                    .placeholderForCreatedAsset
                try changes.assetChangeRequest(for: id).setLocation(place.1)
                return id.localIdentifier
            }
        }
        let name = Dictionary(uniqueKeysWithValues: zip(ids, places.map(\.0)))
        func names(_ options: FetchOptions) throws -> [String] {
            try library.fetchAssets(options: options).map { name[$0.localIdentifier]! }
        }
        let paris = places[0].1!
        #expect(
            try Set(names(FetchOptions(predicate: .locatedIn(LocationRegion(center: paris, radius: 30_000))))) == ["paris", "versailles"])
        #expect(try names(FetchOptions(predicate: .locatedIn(LocationRegion(center: paris, radius: 1_000)))) == ["paris"])
        let pacific = LocationRegion(minimumLatitude: -25, maximumLatitude: -10, minimumLongitude: 170, maximumLongitude: -170)
        #expect(try names(FetchOptions(predicate: .locatedIn(pacific))) == ["fiji", "samoa"])
        #expect(pacific.contains(places[4].1!) && !pacific.contains(paris))
        let days = DateInterval(start: Date(timeIntervalSince1970: 1_700_000_000 + 86_400), duration: 2 * 86_400)
        #expect(try names(FetchOptions(predicate: .createdDuring(days))) == ["versailles", "lyon"])
        #expect(
            try names(
                FetchOptions(predicate: .and([.createdDuring(days), .not(.locatedIn(LocationRegion(center: paris, radius: 50_000)))]))) == [
                    "lyon"
                ])
        #expect(try names(FetchOptions(predicate: .or([.hasLocation(false), .locatedIn(pacific)]))) == ["fiji", "samoa", "nowhere"])
        // Great-circle distances from Paris: Versailles 18 km, Lyon 391 km, Samoa 16,079 km (across the
        // 180th meridian), Fiji 16,531 km.
        #expect(
            try names(FetchOptions(sortDescriptors: [SortDescriptor(distanceFrom: paris)])) == [
                "paris", "versailles", "lyon", "samoa", "fiji", "nowhere",
            ])
        #expect(
            try names(FetchOptions(sortDescriptors: [SortDescriptor(distanceFrom: paris, ascending: false)], fetchLimit: 3)) == [
                "fiji", "samoa", "lyon",
            ])
        // In an album, sorted in SQL and (for a merged album) in memory alike.
        let (trip, other) = try library.performChangesAndWait { changes in
            let trip = try changes.createAlbum(title: "Trip"), other = try changes.createAlbum(title: "Trip")
            try trip.addAssets(Array(ids.prefix(3)))
            try other.addAssets(Array(ids.suffix(3)))
            return (trip.localIdentifier, other.localIdentifier)
        }
        let byDistance = FetchOptions(sortDescriptors: [SortDescriptor(distanceFrom: places[2].1!)])
        // From Lyon: Paris 391 km, Versailles 395 km, Samoa 16,445 km, Fiji 16,834 km.
        #expect(
            try library.fetchAssets(in: library.album(trip), options: byDistance).map { name[$0.localIdentifier]! } == [
                "lyon", "paris", "versailles",
            ])
        let merged = try library.performChangesAndWait { try $0.mergeAlbums([trip, other]).localIdentifier }
        #expect(
            try library.fetchAssets(in: library.album(merged), options: byDistance).map { name[$0.localIdentifier]! }
                == ["lyon", "paris", "versailles", "samoa", "fiji", "nowhere"])
        let invalid = try #require(throws: PhotoLibraryError.self) {
            try library.fetchAssets(options: FetchOptions(sortDescriptors: [SortDescriptor(.distance)]))
        }
        #expect(invalid.message.contains("SortDescriptor(distanceFrom:)"))
        #expect(try library.fetchAssetCollections(with: .album, options: FetchOptions(fetchLimit: 1)).count == 1)
        #expect(try library.fetchTopLevelUserCollections(options: FetchOptions(fetchLimit: 1)).count == 1)
    }
}
