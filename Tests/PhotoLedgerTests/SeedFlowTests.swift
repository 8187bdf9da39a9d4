import Foundation
import MediaSynthesis
import PhotoMedia
import Testing

@testable import PhotoLedger

/// The five flows of the seed apps (DESIGN §7), written as an app would with this library.
@Suite("Seed flows")
struct SeedFlowTests {
    static let appAlbum = "PhotoLedger Camera"

    /// Seed 1: save an image, get its identifier from the placeholder, find or create the
    /// app-named album, insert the asset at index 0 (the cover).
    @Test("1. save an image and insert it as the cover of the app's album")
    func saveImageIntoAppAlbum() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let earlier = try library.performChangesAndWait { changes in
            try changes.createAsset(from: Data(SyntheticMedia.sample(.png, width: 32, height: 32, seed: 1))).placeholderForCreatedAsset
        }
        _ = try library.createAlbum(Self.appAlbum, assets: [earlier.localIdentifier])
        let image = Data(SyntheticMedia.sample(.jpeg, width: 640, height: 480, seed: 2))
        let identifier = try await library.performChanges { changes in
            let created = try changes.createAsset(from: image)
            let album = try changes.album(titled: Self.appAlbum) ?? changes.createAlbum(title: Self.appAlbum)
            try album.insertAssets([created.placeholderForCreatedAsset], at: [0])
            return created.placeholderForCreatedAsset.localIdentifier
        }
        let album = try #require(
            try library.fetchAssetCollections(with: .album, options: FetchOptions(predicate: .title(Self.appAlbum))).first)
        let members = try library.fetchAssets(in: album)
        #expect(members.map(\.localIdentifier) == [identifier, earlier.localIdentifier])
        #expect(members.firstObject?.pixelWidth == 640 && members.firstObject?.pixelHeight == 480)
    }

    /// Seed 2: a camera capture with no asset yet: save it, re-fetch by the placeholder's
    /// identifier, request its original (unadjusted) bytes — exactly the bytes saved.
    @Test("2. a capture is saved, re-fetched by its placeholder and read back byte for byte")
    func captureRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let capture = Data(
            JPEGEncoder(quality: 92).encode(
                RGBImage.scene(width: 800, height: 600, seed: 7), creationDate: Date(timeIntervalSince1970: 1_764_400_000),
                location: Location(latitude: 46.2044, longitude: 6.1432, altitude: 375)))
        let placeholder = try library.performChangesAndWait { try $0.createAsset(from: capture).placeholderForCreatedAsset }
        let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [placeholder.localIdentifier]).first)
        #expect(asset.creationDate == Date(timeIntervalSince1970: 1_764_400_000))
        #expect(asset.location.map { abs($0.latitude - 46.2044) < 0.0001 && abs($0.longitude - 6.1432) < 0.0001 } == true)
        #expect(try library.requestImageData(for: asset, version: .unadjusted) == capture)
        #expect(try library.requestImageData(for: asset, version: .original) == capture)
    }

    /// Seed 3: save a video, and a GIF from a cached file, into the album.
    @Test("3. a video and a GIF from a cached file are saved into the album")
    func videoAndGIF() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let video = directory.file("clip.mp4"), gif = directory.file("cache/party.gif")
        try FileManager.default.createDirectory(at: gif.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(SyntheticMedia.sample(.mp4, width: 1280, height: 720, seed: 3)).write(to: video)
        try Data(SyntheticMedia.sample(.gif, width: 48, height: 48, seed: 4)).write(to: gif)
        let album = try library.createAlbum(Self.appAlbum)
        try library.performChangesAndWait { changes in
            let movie = try changes.createAsset(fromVideoAt: video)
            let animation = try changes.createAsset(fromImageAt: gif)
            try changes.albumChangeRequest(for: album).addAssets([movie.placeholderForCreatedAsset, animation.placeholderForCreatedAsset])
        }
        let members = try library.fetchAssets(in: library.album(album))
        #expect(members.map(\.mediaType) == [.video, .image])
        #expect(members[0].duration == 3 && members[0].pixelWidth == 1280 && members[0].pixelHeight == 720)
        #expect(members[1].mediaSubtypes.contains(.photoAnimation))
        #expect(try library.requestImageData(for: members[1]) == Data(contentsOf: gif))
        #expect(FileManager.default.fileExists(atPath: gif.path), "a copied cache file is left where it was")
    }

    /// What the seed's save-from-temp-file routine reports to its caller.
    enum SaveOutcome: Equatable {
        case saved(String)
        case failed(String)
    }

    /// Seed 4's routine: save media from a temporary file into an album by name, creating the
    /// album when missing (placeholder → fetch by identifier), remove the temporary file on
    /// success and on failure, and report the error text.
    static func saveTemporaryFile(_ file: URL, isVideo: Bool, toAlbumNamed title: String, in library: PhotoLibrary) -> SaveOutcome {
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            var albumIdentifier = try library.fetchAssetCollections(with: .album, options: FetchOptions(predicate: .title(title))).first?
                .localIdentifier
            if albumIdentifier == nil {
                let placeholder = try library.performChangesAndWait {
                    try $0.createAlbum(title: title).placeholderForCreatedAssetCollection
                }
                albumIdentifier = try library.fetchAssetCollections(withLocalIdentifiers: [placeholder.localIdentifier]).first?
                    .localIdentifier
            }
            guard let albumIdentifier else { return .failed("album placeholder not found") }
            let asset = try library.performChangesAndWait { changes in
                let created = isVideo ? try changes.createAsset(fromVideoAt: file) : try changes.createAsset(fromImageAt: file)
                try changes.albumChangeRequest(for: albumIdentifier).addAssets([created.placeholderForCreatedAsset])
                return created.placeholderForCreatedAsset.localIdentifier
            }
            return .saved(asset)
        } catch let error as PhotoLibraryError {
            return .failed(error.message)
        } catch {
            return .failed("\(error)")
        }
    }

    @Test("4. media from a temporary file goes into an album by name; the temp file is removed on success and failure")
    func temporaryFileIntoNamedAlbum() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let good = directory.file("tmp-1.jpg")
        try Data(SyntheticMedia.sample(.jpeg, width: 100, height: 80, seed: 5)).write(to: good)
        guard case .saved(let identifier) = Self.saveTemporaryFile(good, isVideo: false, toAlbumNamed: "Downloads", in: library) else {
            Issue.record("saving a valid photo failed")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: good.path))
        let albums = try library.fetchAssetCollections(with: .album, options: FetchOptions(predicate: .title("Downloads")))
        #expect(albums.count == 1)
        #expect(try library.fetchAssets(in: albums[0]).map(\.localIdentifier) == [identifier])

        let broken = directory.file("tmp-2.jpg")
        try Data("not a photo at all".utf8).write(to: broken)
        let failure = Self.saveTemporaryFile(broken, isVideo: false, toAlbumNamed: "Downloads", in: library)
        guard case .failed(let message) = failure else {
            Issue.record("saving garbage succeeded")
            return
        }
        #expect(message.contains("tmp-2.jpg"))
        #expect(!FileManager.default.fileExists(atPath: broken.path))
        #expect(try library.fetchAssets(in: albums[0]).count == 1, "nothing was added by the failed save")

        let deniedDirectory = try TemporaryDirectory()
        var options = PhotoLibrary.Options()
        options.promptHandler = { _ in .denied }
        let denied = try PhotoLibrary(url: deniedDirectory.file("library.sqlite"), device: "anna-phone", options: options)
        _ = await denied.requestAuthorization(for: .readWrite)
        let third = deniedDirectory.file("tmp-3.jpg")
        try Data(SyntheticMedia.sample(.jpeg, width: 10, height: 10, seed: 6)).write(to: third)
        let deniedOutcome = Self.saveTemporaryFile(third, isVideo: false, toAlbumNamed: "Downloads", in: denied)
        #expect(deniedOutcome == .failed("the user denied access to the photo library; they can allow it in the settings"))
        #expect(!FileManager.default.fileExists(atPath: third.path))
    }

    /// Seed 5: authorization from not determined to authorized, denied or restricted; under
    /// denied every operation fails with accessUserDenied instead of doing anything.
    @Test(
        "5. authorization: not determined → request → authorized / denied / restricted",
        arguments: [
            AuthorizationStatus.authorized, .denied, .restricted,
        ])
    func authorizationFlow(answer: AuthorizationStatus) async throws {
        let directory = try TemporaryDirectory()
        var options = PhotoLibrary.Options()
        options.promptHandler = { _ in answer }
        let library = try PhotoLibrary(url: directory.file("library.sqlite"), device: "anna-phone", options: options)
        if answer == .restricted { try library.setAuthorizationStatus(.restricted, for: .readWrite) }
        #expect(library.authorizationStatus(for: .readWrite) == (answer == .restricted ? .restricted : .notDetermined))
        #expect(await library.requestAuthorization(for: .readWrite) == answer)
        let photo = Data(SyntheticMedia.sample(.jpeg, width: 8, height: 8, seed: 1))
        switch answer {
        case .authorized:
            try library.performChangesAndWait { _ = try $0.createAsset(from: photo) }
            #expect(try library.fetchAssets().count == 1)
        case .denied:
            expectError(.accessUserDenied) { try library.performChangesAndWait { _ = try $0.createAsset(from: photo) } }
            expectError(.accessUserDenied) { try library.fetchAssets() }
            expectError(.accessUserDenied) { try library.fetchAssetCollections(with: .smartAlbum) }
            #expect(try library.allEvents().isEmpty)
            #expect(try FileManager.default.subpathsOfDirectory(atPath: library.resources.directory.path).filter { $0.count > 60 }.isEmpty)
        default:
            expectError(.accessRestricted) { try library.performChangesAndWait { _ = try $0.createAsset(from: photo) } }
        }
    }
}
