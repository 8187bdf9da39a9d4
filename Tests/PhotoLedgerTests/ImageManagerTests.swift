import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Synchronization
import Testing

@testable import PhotoLedger

/// A picture whose quarters are red (top left), green (top right), blue (bottom left) and white
/// (bottom right) as stored, so that a rendition shows which way it was turned.
private func quarters(width: Int, height: Int) -> RGBImage {
    var image = RGBImage(width: width, height: height)
    for y in 0..<height {
        for x in 0..<width {
            switch (x < width / 2, y < height / 2) {
            case (true, true): image[x, y] = (230, 20, 20)
            case (false, true): image[x, y] = (20, 230, 20)
            case (true, false): image[x, y] = (20, 20, 230)
            case (false, false): image[x, y] = (240, 240, 240)
            }
        }
    }
    return image
}

/// The colour near a corner of an image, named: "red", "green", "blue", "white" or "other".
private func corner(_ image: RGBImage, right: Bool, bottom: Bool) -> String {
    let x = right ? image.width - 1 - image.width / 8 : image.width / 8
    let y = bottom ? image.height - 1 - image.height / 8 : image.height / 8
    let (r, g, b) = image[x, y]
    switch (r > 150, g > 150, b > 150) {
    case (true, false, false): return "red"
    case (false, true, false): return "green"
    case (false, false, true): return "blue"
    case (true, true, true): return "white"
    default: return "other"
    }
}

/// A JPEG of one colour, different for each index.
private func solidPhoto(_ index: Int, width: Int = 320, height: Int = 240) throws -> Data {
    let colour = (UInt8(40 + (index * 53) % 200), UInt8(40 + (index * 97) % 200), UInt8(40 + (index * 31) % 200))
    let image = RGBImage(width: width, height: height, red: colour.0, green: colour.1, blue: colour.2)
    return Data(try StillEncoder.encode([image], as: "jpeg", options: .init(quality: 92)))
}

private func createAsset(_ library: PhotoLibrary, _ bytes: Data) throws -> String {
    try library.performChangesAndWait { try $0.createAsset(from: bytes).placeholderForCreatedAsset.localIdentifier }
}

private func createVideo(_ library: PhotoLibrary, _ bytes: [UInt8], in directory: TemporaryDirectory, name: String) throws -> String {
    let file = directory.file(name)
    try Data(bytes).write(to: file)
    return try library.performChangesAndWait { try $0.createAsset(fromVideoAt: file).placeholderForCreatedAsset.localIdentifier }
}

private func decodes(_ library: PhotoLibrary) -> Int { library.renditions.decodes.load(ordering: .relaxed) }

private func square(_ side: Double) -> CGSize { CGSize(width: side, height: side) }

/// Collects garbage with no grace period, the library's clock moved past the wall clock first.
private func collectGarbageNow(_ library: PhotoLibrary, _ clock: TestClock) throws {
    clock.passWallClock()
    try library.collectGarbage(gracePeriod: 0)
}

/// Collects the results a request's handler receives.
private final class Deliveries: Sendable {
    private let results = Mutex<[Result<ImageResult, PhotoLibraryError>]>([])
    private let arrived = TestSignal()

    func handler(_ result: Result<ImageResult, PhotoLibraryError>) {
        results.withLock { $0.append(result) }
        arrived.signal()
    }

    /// Waits for `count` results and returns every result so far.
    func wait(for count: Int) async -> [Result<ImageResult, PhotoLibraryError>] {
        for _ in 0..<count { await arrived.wait() }
        return results.withLock { $0 }
    }

    /// Every result so far, without waiting.
    var received: [Result<ImageResult, PhotoLibraryError>] { results.withLock { $0 } }
}

@Suite("Image manager: renditions of assets, as PhotoKit's PHImageManager gives them")
struct ImageManagerTests {
    @Test("aspect fit and aspect fill pick the smallest box that holds the target, never enlarging the photo")
    func sizesAndModes() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let asset = try createAsset(library, Data(try StillEncoder.encode([quarters(width: 1200, height: 900)], as: "jpeg")))
        let manager = library.imageManager
        let cases: [(CGSize, ImageContentMode, Int, Int)] = [
            (square(256), .aspectFit, 256, 192), (square(256), .aspectFill, 341, 256), (square(100), .aspectFit, 256, 192),
            (CGSize(width: 300, height: 120), .aspectFit, 512, 384), (square(1024), .aspectFill, 1200, 900),
            (ImageManager.maximumSize, .aspectFit, 1200, 900), (square(5000), .aspectFill, 1200, 900),
        ]
        for (size, mode, width, height) in cases {
            let image = try await manager.requestImage(for: asset, targetSize: size, contentMode: mode)
            #expect((image.pixelWidth, image.pixelHeight) == (width, height), "\(size) \(mode)")
            #expect(image.uniformTypeIdentifier == "public.jpeg" && !image.isDegraded)
            #expect(try Data(contentsOf: image.fileURL) == image.data)
            let decoded = try RGBImage.decode(image.data)
            #expect((decoded.width, decoded.height) == (width, height))
            #expect(corner(decoded, right: false, bottom: false) == "red" && corner(decoded, right: true, bottom: true) == "white")
        }
    }

    @Test("a photo stored turned (EXIF orientation 6) comes out upright, with the aspect it is shown with")
    func orientation() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let bytes = try StillEncoder.encode([quarters(width: 800, height: 600)], as: "jpeg", options: .init(orientation: 6))
        let asset = try createAsset(library, Data(bytes))
        let stored = try #require(try library.fetchAssets(withLocalIdentifiers: [asset]).first)
        #expect((stored.pixelWidth, stored.pixelHeight) == (600, 800))
        for (mode, size) in [(ImageContentMode.aspectFit, (192, 256)), (.aspectFill, (256, 341)), (.aspectFit, (600, 800))] {
            let target = size.1 == 800 ? ImageManager.maximumSize : square(256)
            let image = try await library.imageManager.requestImage(for: asset, targetSize: target, contentMode: mode)
            #expect((image.pixelWidth, image.pixelHeight) == size)
            // Turned a quarter clockwise: the stored bottom left (blue) is shown top left.
            let decoded = try RGBImage.decode(image.data)
            #expect(corner(decoded, right: false, bottom: false) == "blue")
            #expect(corner(decoded, right: true, bottom: false) == "red")
            #expect(corner(decoded, right: true, bottom: true) == "green")
        }
    }

    @Test("a picture with an alpha channel comes out as a PNG")
    func alpha() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let opaque = directory.file("opaque.png"), transparent = directory.file("transparent.png")
        try Data(try StillEncoder.encode([quarters(width: 300, height: 200)], as: "png")).write(to: opaque)
        try SyntheticMedia.run(tool: "vips", ["bandjoin_const", opaque.path, transparent.path, "128"])
        let asset = try library.performChangesAndWait {
            try $0.createAsset(fromImageAt: transparent).placeholderForCreatedAsset.localIdentifier
        }
        let image = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        #expect(image.uniformTypeIdentifier == "public.png" && image.fileURL.pathExtension == "png")
        #expect((image.pixelWidth, image.pixelHeight) == (256, 171))
        #expect(image.data.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    @Test("a video's image is its poster frame, from MP4 and QuickTime movies made by ffmpeg, turned by its display matrix")
    func posterFrames() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let mp4 = try createVideo(
            library, try SyntheticMedia.movie(width: 640, height: 480, duration: 1, seed: 3), in: directory, name: "a.mp4")
        let mov = try createVideo(
            library, try SyntheticMedia.movie(width: 320, height: 180, duration: 1, quickTime: true, seed: 4), in: directory, name: "b.mov")
        let rotatedFile = directory.file("c.mov")
        try Data(try SyntheticMedia.movie(width: 320, height: 240, duration: 1, quickTime: true, seed: 5)).write(to: rotatedFile)
        try SyntheticMedia.run(tool: "exiftool", ["-q", "-overwrite_original", "-Rotation=90", rotatedFile.path])
        let rotated = try library.performChangesAndWait {
            try $0.createAsset(fromVideoAt: rotatedFile).placeholderForCreatedAsset.localIdentifier
        }
        let expected = [(mp4, 256, 192), (mov, 256, 144), (rotated, 192, 256)]
        for (asset, width, height) in expected {
            let image = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
            #expect((image.pixelWidth, image.pixelHeight) == (width, height))
            #expect(image.uniformTypeIdentifier == "public.jpeg")
            let decoded = try RGBImage.decode(image.data)
            let average = SyntheticMedia.averageColor(decoded)
            #expect(Int(average.red) + Int(average.green) + Int(average.blue) > 60, "the poster frame is a picture, not black")
        }
        let full = try await library.imageManager.requestImage(for: mp4, targetSize: ImageManager.maximumSize, contentMode: .aspectFit)
        #expect((full.pixelWidth, full.pixelHeight) == (640, 480))
    }

    @Test("a second request is a cache hit: the same file, no second decode")
    func cacheHit() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let asset = try createAsset(library, try solidPhoto(1, width: 900, height: 600))
        let first = try await library.imageManager.requestImage(for: asset, targetSize: square(200), contentMode: .aspectFill)
        #expect(decodes(library) == 1)
        let second = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFill)
        #expect(decodes(library) == 1)
        #expect(second.fileURL == first.fileURL && second.data == first.data)
        _ = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        #expect(decodes(library) == 2, "another mode is another rendition")
        let hash = try library.resources(for: asset)[0].sha256
        #expect(first.fileURL.lastPathComponent == "\(hash)-256-fill.jpg")
        #expect(first.fileURL.deletingLastPathComponent().lastPathComponent == String(hash.prefix(2)))
        #expect(first.fileURL.path.contains(".renditions/"))
    }

    @Test("an edit changes the current image, a revert brings back the original's cached one; versions pick either")
    func editAndRevert() async throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock.wallClock()
        let library = try makeLibrary(directory, clock: clock)
        let asset = try createAsset(library, try solidPhoto(2))
        let manager = library.imageManager
        let original = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        let edit = ContentEditingOutput(
            renderedContent: .data(Data(try StillEncoder.encode([quarters(width: 400, height: 400)], as: "jpeg"))),
            adjustmentFormatIdentifier: "com.example.crop", adjustmentFormatVersion: "1", adjustmentData: Data("square".utf8))
        try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setContentEditingOutput(edit) }
        let edited = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        #expect(edited.fileURL != original.fileURL && (edited.pixelWidth, edited.pixelHeight) == (256, 256))
        #expect(corner(try RGBImage.decode(edited.data), right: false, bottom: false) == "red")
        let unedited = try await manager.requestImage(
            for: asset, targetSize: square(256), contentMode: .aspectFit, options: ImageRequestOptions(version: .original))
        #expect(unedited.fileURL == original.fileURL)
        let before = decodes(library)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).revertAssetContentToOriginal() }
        let reverted = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        #expect(reverted.fileURL == original.fileURL && reverted.data == original.data)
        #expect(decodes(library) == before, "the original's rendition was still cached")
        // The edit's renditions are garbage now: no asset shows those bytes.
        try collectGarbageNow(library, clock)
        #expect(!FileManager.default.fileExists(atPath: edited.fileURL.path))
        #expect(FileManager.default.fileExists(atPath: original.fileURL.path))
    }

    @Test("after a revert no edited rendition is delivered, as the image or as a stand-in; a repeated edit finds its renditions again")
    func revertInvalidatesEditedRenditions() async throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock.wallClock()
        let library = try makeLibrary(directory, clock: clock)
        // The original is one colour; the edit shows the four quarters.
        let asset = try createAsset(library, try solidPhoto(1, width: 1600, height: 1200))
        let manager = library.imageManager
        let original = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        let edit = ContentEditingOutput(
            renderedContent: .data(Data(try StillEncoder.encode([quarters(width: 1600, height: 1200)], as: "jpeg"))),
            adjustmentFormatIdentifier: "com.example.quarters", adjustmentFormatVersion: "1", adjustmentData: Data("quarters".utf8))
        try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setContentEditingOutput(edit) }
        var edited: [URL] = []
        for (side, mode) in [(256.0, ImageContentMode.aspectFit), (512, .aspectFit), (1024, .aspectFit), (1024, .aspectFill)] {
            let image = try await manager.requestImage(for: asset, targetSize: square(side), contentMode: mode)
            #expect(corner(try RGBImage.decode(image.data), right: false, bottom: false) == "red")
            edited.append(image.fileURL)
        }
        try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).revertAssetContentToOriginal() }

        // Opportunistic: the stand-in is the original's cached 256, never the edit's 512.
        let opportunistic = Deliveries()
        manager.requestImage(for: asset, targetSize: square(1024), contentMode: .aspectFit) { opportunistic.handler($0) }
        let results = try await opportunistic.wait(for: 2).map { try $0.get() }
        #expect(results.map(\.isDegraded) == [true, false])
        #expect(results[0].fileURL == original.fileURL)
        #expect(!edited.contains(results[1].fileURL))
        #expect(try corner(RGBImage.decode(results[1].data), right: false, bottom: false) != "red")
        // Fast format: the nearest cached rendition of the original, not the edit's 1024 fill.
        let fast = Deliveries()
        manager.requestImage(
            for: asset, targetSize: square(1024), contentMode: .aspectFill, options: ImageRequestOptions(deliveryMode: .fastFormat)
        ) { fast.handler($0) }
        let fastResults = await fast.wait(for: 1)
        let answer = try #require(try fastResults.first?.get())
        #expect(!edited.contains(answer.fileURL))
        #expect(try corner(RGBImage.decode(answer.data), right: false, bottom: false) != "red")
        // Caching ahead after the revert caches the original's rendition.
        manager.startCachingImages(for: [asset], targetSize: square(512), contentMode: .aspectFit)
        manager.waitForCaching()
        let cached = try await manager.requestImage(for: asset, targetSize: square(512), contentMode: .aspectFit)
        #expect(!edited.contains(cached.fileURL))
        #expect(try corner(RGBImage.decode(cached.data), right: false, bottom: false) != "red")
        // The unadjusted version still is the original; the same edit again finds its renditions.
        let before = decodes(library)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setContentEditingOutput(edit) }
        let again = try await manager.requestImage(for: asset, targetSize: square(512), contentMode: .aspectFit)
        #expect(again.fileURL == edited[1] && decodes(library) == before)
        // Reverted again, the edit's renditions are garbage; the original's stay.
        try library.performChangesAndWait { try $0.assetChangeRequest(for: asset).revertAssetContentToOriginal() }
        try collectGarbageNow(library, clock)
        #expect(edited.allSatisfy { !FileManager.default.fileExists(atPath: $0.path) })
        #expect(
            FileManager.default.fileExists(atPath: original.fileURL.path) && FileManager.default.fileExists(atPath: cached.fileURL.path))
    }

    @Test("garbage collection after a purge and a compaction removes the purged asset's renditions and keeps the others")
    func garbageCollection() async throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock.wallClock()
        let library = try makeLibrary(directory, clock: clock)
        let server = ScriptedServer()
        let kept = try createAsset(library, try solidPhoto(3))
        let purged = try createAsset(library, try solidPhoto(4))
        let deleted = try createAsset(library, try solidPhoto(5))
        var files: [String: URL] = [:]
        for asset in [kept, purged, deleted] {
            files[asset] = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFill)
                .fileURL
        }
        try library.performChangesAndWait { try $0.deleteAssets([purged, deleted]) }
        try library.performChangesAndWait { try $0.purgeAssets([purged]) }
        try server.sync(library)
        #expect(try library.compact(upToServerSequence: Int64(server.log.count)).archivedEvents > 0)
        try collectGarbageNow(library, clock)
        #expect(!FileManager.default.fileExists(atPath: files[purged]!.path))
        #expect(FileManager.default.fileExists(atPath: files[kept]!.path))
        #expect(FileManager.default.fileExists(atPath: files[deleted]!.path), "Recently Deleted still shows it")
    }

    @Test("a rendition is not collected within the grace period, and a damaged cached file is made again")
    func gracePeriodAndDamage() async throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock.wallClock()
        let library = try makeLibrary(directory, clock: clock)
        let asset = try createAsset(library, try solidPhoto(6))
        let image = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        // A file cut short (as a crash before its bytes reached the disk leaves it) is not served.
        try Data(image.data.prefix(image.data.count / 2)).write(to: image.fileURL)
        let again = try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
        #expect(again.data.count == image.data.count && decodes(library) == 2)
        try library.performChangesAndWait { try $0.deleteAssets([asset]) }
        try library.performChangesAndWait { try $0.purgeAssets([asset]) }
        try library.collectGarbage()
        #expect(FileManager.default.fileExists(atPath: image.fileURL.path), "made less than an hour ago")
    }

    @Test("the cache stays within its bound, evicting the least recently used renditions")
    func eviction() async throws {
        let directory = try TemporaryDirectory()
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.renditionCacheLimit = 20_000
        let library = try PhotoLibrary(url: directory.file("small.sqlite"), device: "anna-phone", options: options)
        var files: [URL] = []
        for index in 0..<12 {
            let asset = try createAsset(
                library, Data(try StillEncoder.encode([RGBImage.scene(width: 600, height: 400, seed: UInt64(index))], as: "jpeg")))
            files.append(try await library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit).fileURL)
        }
        let sizes = files.compactMap { try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int }
        #expect(sizes.reduce(0, +) <= 20_000 && sizes.count < files.count)
        #expect(FileManager.default.fileExists(atPath: files.last!.path), "the newest stays")
        #expect(!FileManager.default.fileExists(atPath: files.first!.path), "the oldest went")
    }

    @Test("a cancelled request is answered once, with userCancelled, and an async request throws CancellationError")
    func cancellation() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let asset = try createAsset(library, try solidPhoto(7))
        // The decode is held back until the request is cancelled; the test waits on the events
        // themselves (the decode reached, the request's work over), never on the time.
        let reached = TestSignal(), finished = TestSignal()
        let release = DispatchSemaphore(value: 0)
        library.renditions.beforeDecode.value = {
            reached.signal()
            release.wait()
        }
        library.renditions.afterRequest.value = { _ in finished.signal() }
        let deliveries = Deliveries()
        let id = library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit) { deliveries.handler($0) }
        #expect(await reached.wait())
        library.imageManager.cancelImageRequest(id)
        release.signal()
        // Once the request's work is over (its rendition made and cached), no other answer can come.
        #expect(await finished.wait())
        let results = await deliveries.wait(for: 1)
        #expect(results.count == 1 && deliveries.received.count == 1)
        #expect(throws: PhotoLibraryError.self) { try results[0].get() }
        if case .failure(let error) = results[0] { #expect(error.code == .userCancelled) }

        let task = Task { try await library.imageManager.requestImage(for: asset, targetSize: square(512), contentMode: .aspectFit) }
        #expect(await reached.wait())
        task.cancel()
        release.signal()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await finished.wait())
        library.renditions.beforeDecode.value = nil
        library.renditions.afterRequest.value = nil
    }

    @Test("bytes not on this device: missingResource without sync, networkAccessRequired without permission, fetched with it")
    func missingResource() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let bytes = try solidPhoto(8)
        let asset = try createAsset(library, bytes)
        let hash = try library.resources(for: asset)[0].sha256
        try FileManager.default.removeItem(at: library.resources.url(for: hash)!)  // as on a device that has not downloaded it
        let manager = library.imageManager
        do {
            _ = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
            Issue.record("expected missingResource")
        } catch let error as PhotoLibraryError {
            #expect(error.code == .missingResource && error.message.contains(hash))
        }
        let fetches = Atomic<Int>(0)
        library.resourceFetcher.value = { wanted in
            fetches.add(1, ordering: .relaxed)
            _ = try library.resources.ingest(bytes, name: wanted)
        }
        do {
            _ = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit)
            Issue.record("expected networkAccessRequired")
        } catch let error as PhotoLibraryError {
            #expect(error.code == .networkAccessRequired && error.code.rawValue == 3164)
        }
        let options = ImageRequestOptions(isNetworkAccessAllowed: true)
        let image = try await manager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFit, options: options)
        #expect((image.pixelWidth, image.pixelHeight) == (256, 192) && fetches.load(ordering: .relaxed) == 1)
        await #expect(throws: PhotoLibraryError.self) {
            try await manager.requestImage(
                for: "00000000-0000-0000-0000-000000000000/L0/001", targetSize: square(256), contentMode: .aspectFit)
        }
    }

    @Test("opportunistic delivers a cached smaller rendition first, marked degraded; fast format answers from the cache at once")
    func deliveryModes() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let file = directory.file("photo.jpg")
        try Data(try StillEncoder.encode([quarters(width: 1600, height: 1200)], as: "jpeg")).write(to: file)
        let asset = try #require(
            try library.performChangesAndWait {
                try $0.importAssets(fromFilesAt: [file], options: AssetImportOptions(makesThumbnails: true))
            }.first?.placeholderForCreatedAsset)
        #expect(decodes(library) == 0, "the import's validation made the 256-pixel renditions")
        let manager = library.imageManager

        let opportunistic = Deliveries()
        manager.requestImage(for: asset, targetSize: square(1024), contentMode: .aspectFit) { opportunistic.handler($0) }
        let results = try await opportunistic.wait(for: 2).map { try $0.get() }
        #expect(results.map(\.isDegraded) == [true, false])
        #expect(results.map(\.pixelWidth) == [256, 1024])
        #expect(results[0].requestID == results[1].requestID)

        let fast = Deliveries()
        let options = ImageRequestOptions(deliveryMode: .fastFormat)
        manager.requestImage(for: asset, targetSize: square(2048), contentMode: .aspectFit, options: options) { fast.handler($0) }
        let answer = try await fast.wait(for: 1).map { try $0.get() }
        #expect(answer.count == 1 && answer[0].pixelWidth == 1024 && answer[0].isDegraded)
        #expect(decodes(library) == 1)

        let quality = Deliveries()
        manager.requestImage(
            for: asset, targetSize: square(256), contentMode: .aspectFill, options: ImageRequestOptions(deliveryMode: .highQualityFormat)
        ) {
            quality.handler($0)
        }
        let filled = try await quality.wait(for: 1).map { try $0.get() }
        #expect(filled.count == 1 && (filled[0].pixelWidth, filled[0].pixelHeight) == (341, 256) && !filled[0].isDegraded)
        #expect(decodes(library) == 1, "the 256-pixel aspect fill came from the import too")
    }

    @Test("many requests at once from several threads each get their own asset's image, each rendition made once")
    func concurrency() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try (0..<6).map { try createAsset(library, try solidPhoto($0 + 10, width: 640, height: 480)) }
        let hashes = try assets.map { try library.resources(for: $0)[0].sha256 }
        let expected = try (0..<6).map { SyntheticMedia.averageColor(try RGBImage.decode(try solidPhoto($0 + 10, width: 64, height: 48))) }
        let failures = Mutex<[String]>([])
        let manager = library.imageManager
        DispatchQueue.concurrentPerform(iterations: 48) { index in
            // Every asset at every box and mode (the 48 requests cover the 36 renditions, some twice).
            let (which, round) = (index % assets.count, index / assets.count)
            let size = [128.0, 300, 700][round % 3]
            let done = DispatchSemaphore(value: 0)
            manager.requestImage(
                for: assets[which], targetSize: square(size), contentMode: (round / 3) % 2 == 0 ? .aspectFit : .aspectFill,
                options: ImageRequestOptions(deliveryMode: .highQualityFormat)
            ) { result in
                defer { done.signal() }
                do {
                    let image = try result.get()
                    guard image.fileURL.lastPathComponent.hasPrefix(hashes[which]) else {
                        throw PhotoLibraryError(.internalError, "wrong source")
                    }
                    let colour = SyntheticMedia.averageColor(try RGBImage.decode(image.data))
                    let target = expected[which]
                    guard abs(Int(colour.red) - Int(target.red)) < 12, abs(Int(colour.green) - Int(target.green)) < 12 else {
                        throw PhotoLibraryError(.internalError, "asset \(which) came out \(colour), expected \(target)")
                    }
                } catch {
                    failures.withLock { $0.append("request \(index): \(error)") }
                }
            }
            if done.wait(timeout: TestPatience.dispatchDeadline) == .timedOut {
                failures.withLock { $0.append("request \(index) timed out") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        // 6 assets × 3 boxes × 2 modes, each rendition made once whatever the number of requests.
        #expect(decodes(library) == 36)
        let cached = try FileManager.default.subpathsOfDirectory(atPath: library.renditions.cache.directory.path).filter {
            $0.hasSuffix(".jpg")
        }
        #expect(cached.count == 36)
    }

    @Test("an import makes no renditions by default: the JPEG's check decodes only its first rows, caching makes them")
    func importMakesNoRenditionsByDefault() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let file = directory.file("photo.jpg")
        try Data(try StillEncoder.encode([quarters(width: 1600, height: 1200)], as: "jpeg")).write(to: file)
        let asset = try #require(
            try library.performChangesAndWait { try $0.importAssets(fromFilesAt: [file]) }.first?.placeholderForCreatedAsset)
        let cached = (try? FileManager.default.subpathsOfDirectory(atPath: library.renditions.cache.directory.path)) ?? []
        #expect(!cached.contains { $0.hasSuffix(".jpg") })
        let manager = library.imageManager
        manager.startCachingImages(for: [asset], targetSize: square(256), contentMode: .aspectFit)
        manager.waitForCaching()
        #expect(manager.cachingProgress.completed == 1 && manager.cachingFailures.isEmpty && decodes(library) == 1)
    }

    @Test("caching that cannot make an asset's renditions names the asset and says why; the others' are made")
    func cachingFailuresAreReported() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try (0..<3).map { try createAsset(library, try solidPhoto($0 + 30)) }
        let hash = try library.resources(for: assets[1])[0].sha256
        try FileManager.default.removeItem(at: library.resources.url(for: hash)!)
        let manager = library.imageManager
        manager.startCachingImages(for: assets, targetSize: square(256), contentMode: .aspectFill)
        manager.waitForCaching()
        #expect(manager.cachingProgress.completed == 2 && manager.cachingProgress.failed == 1)
        let failures = manager.cachingFailures
        #expect(failures.map(\.localIdentifier) == [assets[1]])
        #expect(failures.first?.scales == ["256-fill"])
        #expect(failures.first?.error.code == .missingResource && failures.first?.error.message.contains(hash) == true)
    }

    @Test("caching ahead makes every size asked for an asset from one decode, at low priority, with progress")
    func caching() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try (0..<4).map { try createAsset(library, try solidPhoto($0 + 20, width: 1400, height: 1000)) }
        let manager = library.imageManager
        // Every caching thread busy, so that the jobs below wait in the queue and gather sizes.
        let release = DispatchSemaphore(value: 0)
        let threads = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<threads { library.renditions.cachingPool.submit { release.wait() } }
        manager.startCachingImages(for: assets, targetSize: square(256), contentMode: .aspectFit)
        manager.startCachingImages(for: assets, targetSize: square(1024), contentMode: .aspectFit)
        manager.stopCachingImages(for: [assets[3]], targetSize: square(1024), contentMode: .aspectFit)
        #expect(manager.cachingProgress.total == 7 && !manager.cachingProgress.isFinished)
        for _ in 0..<threads { release.signal() }
        var seen: [ImageCachingProgress] = []
        manager.waitForCaching { seen.append($0) }
        let progress = manager.cachingProgress
        #expect(progress.total == 7 && progress.completed == 7 && progress.failed == 0 && seen.last?.isFinished == true)
        #expect(decodes(library) == 4, "one decode per asset for both sizes")
        let options = ImageRequestOptions(deliveryMode: .fastFormat)
        let deliveries = Deliveries()
        manager.requestImage(for: assets[0], targetSize: square(1024), contentMode: .aspectFit, options: options) { deliveries.handler($0) }
        let delivered = await deliveries.wait(for: 1)
        #expect(try delivered.first?.get().pixelWidth == 1024)
    }
}
