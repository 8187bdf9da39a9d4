import Foundation
import Testing

@testable import PhotoLedger

@Suite("Fetching")
struct FetchTests {
    @Test("typed filters, sort descriptors, fetch limit and hidden assets")
    func filtersAndSorting() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let dates = (0..<4).map { Date(timeIntervalSince1970: 1_700_000_000 + Double($0) * 86_400) }
        let photos = try library.createAssets(4, dates: dates)
        let videos = try library.createAssets(2, mediaType: .video, dates: [dates[0], dates[3]])
        let hidden = try library.createAssets(1, hidden: true, dates: [dates[2]])
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: photos[1]).setFavorite(true)
            try changes.assetChangeRequest(for: videos[1]).setFavorite(true)
        }
        #expect(try library.fetchAssets().count == 6)
        #expect(try library.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).count == 7)
        let favorites = try library.fetchAssets(options: FetchOptions(predicate: .isFavorite(true)))
        #expect(Set(favorites.map(\.localIdentifier)) == [photos[1], videos[1]])
        let newestVideoFirst = try library.fetchAssets(
            options: FetchOptions(predicate: .mediaType(.video), sortDescriptors: [SortDescriptor(.creationDate, ascending: false)]))
        #expect(newestVideoFirst.map(\.localIdentifier) == [videos[1], videos[0]])
        let firstTwo = try library.fetchAssets(options: FetchOptions(sortDescriptors: [SortDescriptor(.creationDate)], fetchLimit: 2))
        #expect(firstTwo.count == 2 && firstTwo.allSatisfy { $0.creationDate == dates[0] })
        let recentPhotos = try library.fetchAssets(
            options: FetchOptions(predicate: .and([.mediaType(.image), .createdOnOrAfter(dates[2])])))
        #expect(recentPhotos.map(\.localIdentifier) == [photos[2], photos[3]])
        #expect(try library.fetchAssets(options: FetchOptions(predicate: .isHidden(true))).map(\.localIdentifier) == hidden)
        #expect(try library.fetchAssets(withLocalIdentifiers: hidden).count == 1, "fetch by identifier includes hidden assets")
        #expect(try library.fetchAssets(options: FetchOptions(predicate: .not(.mediaType(.image)))).count == 2)
    }

    @Test("smart albums: All Photos, Favorites, Recently Added, Videos, Recently Deleted")
    func smartAlbums() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let library = try makeLibrary(directory, clock: clock)
        let old = try library.createAssets(1)
        clock.advance(milliseconds: 40 * 86_400_000)
        let photos = try library.createAssets(2, favorite: true)
        let videos = try library.createAssets(1, mediaType: .video)
        try library.performChangesAndWait { try $0.deleteAssets([photos[1]]) }
        let smart = try library.fetchAssetCollections(with: .smartAlbum)
        #expect(
            smart.map(\.title) == [
                "All Photos", "Favorites", "Recently Added", "Videos", "Recently Deleted", "Hidden", "Live Photos", "Animated", "Panoramas",
                "Bursts", "Selfies", "Screenshots",
            ])
        func members(_ subtype: CollectionSubtype) throws -> Set<String> {
            let album = try library.fetchAssetCollections(with: .smartAlbum, subtype: subtype)[0]
            return Set(try library.fetchAssets(in: album).map(\.localIdentifier))
        }
        #expect(try members(.smartAlbumUserLibrary) == Set(old + [photos[0]] + videos))
        #expect(try members(.smartAlbumFavorites) == [photos[0]])
        #expect(try members(.smartAlbumRecentlyAdded) == Set([photos[0]] + videos))
        #expect(try members(.smartAlbumVideos) == Set(videos))
        #expect(try members(.smartAlbumRecentlyDeleted) == [photos[1]])
        #expect(smart[4].estimatedAssetCount == 1)
        let byID = try library.fetchAssetCollections(withLocalIdentifiers: [smart[1].localIdentifier])
        #expect(byID.map(\.title) == ["Favorites"])
    }

    @Test("albums by type, subtype, title and sort")
    func albums() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let trip = try library.createAlbum("Trip")
        let pets = try library.createAlbum("Pets")
        #expect(try library.fetchAssetCollections(with: .album, subtype: .albumRegular).map(\.localIdentifier) == [trip, pets])
        #expect(
            try library.fetchAssetCollections(with: .album, options: FetchOptions(predicate: .title("Pets"))).map(\.localIdentifier) == [
                pets
            ])
        #expect(
            try library.fetchAssetCollections(with: .album, options: FetchOptions(predicate: .titleContains("ri"))).map(\.localIdentifier)
                == [trip])
        let sorted = try library.fetchAssetCollections(with: .album, options: FetchOptions(sortDescriptors: [SortDescriptor(.title)]))
        #expect(sorted.map(\.title) == ["Pets", "Trip"])
        #expect(try library.fetchAssetCollections(with: .smartAlbum, subtype: .albumRegular).isEmpty)
        let error = try #require(throws: PhotoLibraryError.self) {
            try library.fetchAssetCollections(with: .album, options: FetchOptions(predicate: .isFavorite(true)))
        }
        #expect(error.message.contains("filtered by title only"))
        #expect(throws: PhotoLibraryError.self) { try library.fetchAssets(options: FetchOptions(predicate: .title("x"))) }
    }

    @Test("a fetch result is a frozen snapshot")
    func frozenSnapshot() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        try library.createAssets(2)
        let result = try library.fetchAssets()
        try library.createAssets(3)
        #expect(result.count == 2)
        #expect(result.firstObject == result.object(at: 0))
        #expect(Array(result).count == 2)
        #expect(try library.fetchAssets().count == 5)
    }

    @Test("identifiers that are malformed or unknown are skipped by fetches")
    func unknownIdentifiers() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let ids = try library.createAssets(2)
        let result = try library.fetchAssets(withLocalIdentifiers: [
            ids[1], "garbage", LocalIdentifier(uuid: UUID(), kind: .asset).description, ids[0],
        ])
        #expect(result.map(\.localIdentifier) == [ids[1], ids[0]])
    }
}
