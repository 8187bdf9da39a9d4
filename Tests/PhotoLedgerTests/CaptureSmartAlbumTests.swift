import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@testable import PhotoLedger

@Suite("Screenshots, Selfies, Panoramas and Bursts from the metadata of imported files, and from creation requests")
struct CaptureSmartAlbumTests {
    /// A file of `format` made by the real encoder and tagged by exiftool with `tags`.
    func tagged(_ directory: TemporaryDirectory, _ name: String, _ format: MediaFormat, seed: UInt64, _ tags: [String]) throws -> URL {
        let url = directory.file(name)
        try Data(SyntheticMedia.sample(format, width: 64, height: 48, seed: seed)).write(to: url)
        if !tags.isEmpty { try SyntheticMedia.run(tool: "exiftool", ["-q", "-q", "-overwrite_original"] + tags + [url.path]) }
        return url
    }

    func smartAlbum(_ library: PhotoLibrary, _ subtype: CollectionSubtype) throws -> [String] {
        let album = try #require(try library.fetchAssetCollections(with: .smartAlbum, subtype: subtype).firstObject)
        return try library.fetchAssets(in: album).map(\.localIdentifier)
    }

    @Test("an import files each photo where its metadata says, and a burst shows as its camera pick")
    func importedMetadata() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let files = [
            try tagged(directory, "IMG_0001.PNG", .png, seed: 1, ["-ExifIFD:UserComment=Screenshot"]),
            try tagged(
                directory, "IMG_0002.JPG", .jpeg, seed: 2, ["-Make=Apple", "-ExifIFD:LensModel=iPhone 12 front camera 2.71mm f/2.2"]),
            try tagged(directory, "PANO_0003.jpg", .jpeg, seed: 3, ["-XMP-GPano:ProjectionType=equirectangular"]),
            try tagged(
                directory, "IMG_0004_BURST.jpg", .jpeg, seed: 4,
                ["-XMP-GCamera:BurstID=burst-4", "-DateTimeOriginal=2025:06:01 10:00:00"]),
            try tagged(
                directory, "IMG_0005_BURST_COVER.jpg", .jpeg, seed: 5,
                ["-XMP-GCamera:BurstID=burst-4", "-XMP-GCamera:BurstPrimary=1", "-DateTimeOriginal=2025:06:01 10:00:01"]),
            try tagged(directory, "IMG_0006.JPG", .jpeg, seed: 6, []),
        ]
        let ids = try library.performChangesAndWait { changes in
            try changes.importAssets(fromFilesAt: files).map { try #require($0.placeholderForCreatedAsset).localIdentifier }
        }
        #expect(try smartAlbum(library, .smartAlbumScreenshots) == [ids[0]])
        #expect(try smartAlbum(library, .smartAlbumSelfPortraits) == [ids[1]])
        #expect(try smartAlbum(library, .smartAlbumPanoramas) == [ids[2]])
        #expect(try smartAlbum(library, .smartAlbumBursts) == [ids[4]])
        let photos = try library.fetchAssets(withLocalIdentifiers: ids)
        #expect(photos[0].mediaSubtypes == .photoScreenshot && photos[1].mediaSubtypes == .photoSelfPortrait)
        #expect(photos[2].mediaSubtypes == .photoPanorama && photos[5].mediaSubtypes == [])
        #expect(photos[3].burstIdentifier == "burst-4" && photos[3].burstSelectionTypes == [] && !photos[3].representsBurst)
        #expect(photos[4].burstSelectionTypes == [.autoPick] && photos[4].representsBurst)
        #expect(try library.fetchAssets().count == 5, "All Photos shows the burst once")
        #expect(try library.fetchAssets(withBurstIdentifier: "burst-4").map(\.localIdentifier) == [ids[3], ids[4]])
    }

    @Test("a creation request sets the subtypes the media cannot say; the smart albums and a subtype predicate find them")
    func creationRequest() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let subtypes: [MediaSubtypes] = [.photoScreenshot, .photoSelfPortrait, .photoPanorama, [.photoPanorama, .photoHDR]]
        let ids = try library.performChangesAndWait { changes in
            try subtypes.enumerated().map { index, subtypes in
                try changes.createAsset(
                    withResources: [ResourceInput(type: .photo, source: .data(samplePhoto(UInt64(index))))],
                    properties: AssetCreationProperties(mediaSubtypes: subtypes)
                ).placeholderForCreatedAsset.localIdentifier
            }
        }
        #expect(try smartAlbum(library, .smartAlbumScreenshots) == [ids[0]])
        #expect(try smartAlbum(library, .smartAlbumSelfPortraits) == [ids[1]])
        #expect(Set(try smartAlbum(library, .smartAlbumPanoramas)) == [ids[2], ids[3]])
        let hdr = try library.fetchAssets(options: FetchOptions(predicate: .mediaSubtypes([.photoPanorama, .photoHDR])))
        #expect(hdr.map(\.localIdentifier) == [ids[3]])
        let titles = try library.fetchAssetCollections(with: .smartAlbum).map(\.title)
        #expect(["Screenshots", "Selfies", "Panoramas", "Bursts"].allSatisfy(titles.contains))
        let containing = try library.fetchAssetCollectionsContaining(ids[1], with: .smartAlbum).map(\.subtype)
        #expect(containing.contains(.smartAlbumSelfPortraits) && !containing.contains(.smartAlbumScreenshots))
    }
}
