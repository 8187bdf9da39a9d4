import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import SyncProtocol
import SyncTransport
import Synchronization
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// A transport that records the blobs each request downloads (GET on a blob route).
private final class DownloadCounter: HTTPTransport {
    let base: any HTTPTransport
    private let downloaded = Mutex<[String]>([])

    init(_ base: any HTTPTransport) { self.base = base }

    func send(_ request: HTTPRequest) async throws -> SyncTransport.HTTPResponse {
        if request.method == .get, request.url.path.contains("/blobs/") {
            downloaded.withLock { $0.append(request.url.lastPathComponent) }
        }
        return try await base.send(request)
    }

    /// The blob names downloaded so far (once per request).
    var blobs: [String] { downloaded.withLock { $0 } }
}

/// A JPEG whose quarters have four colours (`seed` shifts them), `width`×`height`.
private func quartersPhoto(_ seed: Int, width: Int = 640, height: Int = 480) throws -> Data {
    var image = RGBImage(width: width, height: height)
    for y in 0..<height {
        for x in 0..<width {
            let quarter = (x < width / 2 ? 0 : 1) + (y < height / 2 ? 0 : 2)
            let base = UInt8(30 + (seed * 37 + quarter * 50) % 200)
            image[x, y] = (base, UInt8(255 - Int(base)), UInt8((Int(base) * 3) % 256))
        }
    }
    return Data(try StillEncoder.encode([image], as: "jpeg", options: .init(quality: 90)))
}

private func square(_ side: Double) -> CGSize { CGSize(width: side, height: side) }

/// The synced scales as requests ask for them.
private let commonSizes: [(CGSize, ImageContentMode)] = [(square(256), .aspectFit), (square(256), .aspectFill), (square(1024), .aspectFit)]

extension Device {
    init(library: PhotoLibrary, engine: SyncEngine) {
        self.library = library
        self.engine = engine
    }
}

/// The start of every rendition test: a server and Anna's library on a clock at the wall clock's
/// time (garbage collection compares it with the times files were written), and Ben's library on
/// the same server, whose engine downloads originals only on demand.
private struct RenditionWorld {
    let clock = TestClock.wallClock()
    let server: TestServer
    let directory: TemporaryDirectory
    let anna: Device

    init() throws {
        server = try TestServer(clock: clock)
        directory = try TemporaryDirectory()
        anna = try Device("anna-phone", server: server, directory: directory, clock: clock, seed: 1)
    }

    /// Ben's library, whose engine downloads originals only on demand, through `transport`.
    func ben(transport: any HTTPTransport = testTransport()) throws -> Device {
        let (name, clock): (DeviceID, TestClock) = ("ben-laptop", clock)
        var options = PhotoLibrary.Options()
        options.clock = { clock.read() }
        options.randomSeed = 2
        options.preauthorized = true
        let library = try PhotoLibrary(url: directory.file("\(name.rawValue).sqlite"), device: name, options: options)
        var engineOptions = SyncEngine.Options()
        engineOptions.downloadResourcesEagerly = false
        let engine = SyncEngine(library: library, remote: try server.remote(device: name), transport: transport, options: engineOptions)
        return Device(library: library, engine: engine)
    }

    /// Anna's engine syncing live, once it reported its first sync.
    func liveAnna() async throws -> LiveSyncTests.Watcher {
        let watcher = LiveSyncTests.Watcher(anna.engine.live(LiveSyncTests.options()))
        let first = try await watcher.next(where: { _ in true })
        let started = if case .started = first { true } else { false }
        try #require(started, "the first live event is not the first sync: \(watcher.seen)")
        return watcher
    }
}

/// Creates one asset per photo and asks for its images at the common sizes (so they are cached).
private func createPhotos(_ library: PhotoLibrary, _ photos: [Data]) async throws -> [String] {
    let assets = try library.performChangesAndWait { changes in
        try photos.map { try changes.createAsset(from: $0).placeholderForCreatedAsset.localIdentifier }
    }
    for asset in assets {
        for (size, mode) in commonSizes { _ = try await library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode) }
    }
    return assets
}

/// The primary resource hash of each asset.
private func originals(_ library: PhotoLibrary, _ assets: [String]) throws -> [String] {
    try assets.map { try library.resourceHash(for: $0, version: .original).hash }
}

/// The recorded renditions' hashes, by asset and source.
private func recorded(_ library: PhotoLibrary) throws -> Set<String> {
    Set(try library.readDatabase { db in try db.rows("SELECT sha256 FROM asset_renditions") { Hex.encode($0.blob(0)) } })
}

/// The recorded renditions of one asset.
private func recordedRenditions(_ library: PhotoLibrary, of asset: String) throws -> Set<String> {
    let id = LocalIdentifier(asset)!.uuid
    return Set(
        try library.readDatabase { db in
            try db.rows("SELECT sha256 FROM asset_renditions WHERE asset_id = ?", [id.bytes]) { Hex.encode($0.blob(0)) }
        })
}

@Suite("Renditions sync as derived resources")
struct RenditionSyncTests {
    @Test("a new device shows thumbnails at the common sizes without downloading any original; other sizes need the original")
    func newDeviceWithoutOriginals() async throws {
        let world = try RenditionWorld()
        let anna = world.anna
        // A square photo's 256-pixel fit and fill are the same bytes: one blob for two records.
        let assets = try await createPhotos(
            anna.library,
            [try quartersPhoto(1), try quartersPhoto(2, width: 480, height: 640), try quartersPhoto(3, width: 400, height: 400)])
        let sent = try await anna.sync()
        #expect(sent.recordedRenditions == 9)
        #expect(sent.uploadedResources == 3 && sent.uploadedRenditions == 8)
        #expect(try await anna.sync().recordedRenditions == 0, "recorded once")

        let counter = DownloadCounter(testTransport())
        let ben = try world.ben(transport: counter)
        let received = try await ben.sync()
        #expect(received.downloadedRenditions == 8 && received.downloadedResources == 0)
        let originalHashes = try originals(ben.library, assets)
        let annaRenditions = try recorded(anna.library)
        #expect(counter.blobs.count == 8 && Set(counter.blobs) == annaRenditions)
        #expect(Set(counter.blobs).isDisjoint(with: originalHashes))
        for asset in assets {
            for (size, mode) in commonSizes {
                let theirs = try await ben.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
                let mine = try await anna.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
                #expect(theirs.data == mine.data && (theirs.pixelWidth, theirs.pixelHeight) == (mine.pixelWidth, mine.pixelHeight))
            }
        }
        #expect(counter.blobs.count == 8, "no original was downloaded for the thumbnails")
        #expect(originalHashes.allSatisfy { !ben.library.resources.contains($0) })
        // A size no device records needs the original: not allowed to download, it says so.
        do {
            _ = try await ben.library.imageManager.requestImage(for: assets[0], targetSize: square(512), contentMode: .aspectFit)
            Issue.record("a 512-pixel image was made without the original")
        } catch let error as PhotoLibraryError {
            #expect(error.code == .networkAccessRequired && error.message.contains("isNetworkAccessAllowed"))
        }
        let large = try await ben.library.imageManager.requestImage(
            for: assets[0], targetSize: square(512), contentMode: .aspectFit, options: ImageRequestOptions(isNetworkAccessAllowed: true))
        #expect(large.pixelWidth == 512 && counter.blobs.last == originalHashes[0])
        // The records are derived: no asset changed, the resources list only the original.
        let shown = try #require(try ben.asset(assets[0]))
        #expect(try ben.library.resources(for: shown).count == 1)
        let (benViews, annaViews) = (try Device.dump(ben.library), try Device.dump(anna.library))
        #expect(benViews == annaViews)
    }

    @Test("a live device records and uploads the renditions it caches, as a one-shot sync does; another device shows them")
    func liveDeviceRecordsRenditions() async throws {
        let world = try RenditionWorld()
        let anna = world.anna
        let watcher = try await world.liveAnna()
        // An import, then its thumbnails made in the background, as `photoledger import` does.
        let asset = try anna.library.performChangesAndWait { try $0.createAsset(from: try quartersPhoto(4)) }
            .placeholderForCreatedAsset.localIdentifier
        for (size, mode) in commonSizes {
            anna.library.imageManager.startCachingImages(for: [asset], targetSize: size, contentMode: mode)
        }
        anna.library.imageManager.waitForCaching()
        var recordedCount = 0
        while recordedCount < 3 {
            let pushed = try await watcher.next { if case .pushed(let report) = $0 { report.recordedRenditions > 0 } else { false } }
            if case .pushed(let report) = pushed {
                recordedCount += report.recordedRenditions
                #expect(report.pushedEvents >= report.recordedRenditions)
            }
        }
        #expect(recordedCount == 3)
        #expect(try recordedRenditions(anna.library, of: asset).count == 3)

        let counter = DownloadCounter(testTransport())
        let ben = try world.ben(transport: counter)
        let received = try await ben.sync()
        #expect(received.downloadedRenditions == 3 && received.downloadedResources == 0)
        for (size, mode) in commonSizes {
            let theirs = try await ben.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
            let mine = try await anna.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
            #expect(theirs.data == mine.data)
        }
        #expect(!ben.library.resources.contains(try originals(ben.library, [asset])[0]), "the thumbnails came without the original")
    }

    @Test("an edit's renditions reach the other device, a revert brings back the original's, and garbage collection drops the edit's")
    func editAndRevert() async throws {
        let world = try RenditionWorld()
        let anna = world.anna
        let asset = try await createPhotos(anna.library, [try quartersPhoto(3)])[0]
        try await anna.sync()
        let ben = try world.ben()
        try await ben.sync()
        let original = try await ben.library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFill)
        let originalRenditions = try recorded(ben.library)

        let edit = ContentEditingOutput(
            renderedContent: .data(try quartersPhoto(9, width: 600, height: 400)), adjustmentFormatIdentifier: "com.example.crop",
            adjustmentFormatVersion: "1", adjustmentData: Data("square".utf8))
        try anna.library.performChangesAndWait { try $0.assetChangeRequest(for: asset).setContentEditingOutput(edit) }
        for (size, mode) in commonSizes {
            _ = try await anna.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
        }
        #expect(try await anna.sync().recordedRenditions == 3)
        #expect(try await ben.sync().downloadedRenditions == 3)
        let editRenditions = try recorded(ben.library).subtracting(originalRenditions)
        #expect(editRenditions.count == 3)
        let edited = try await ben.library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFill)
        let annaEdited = try await anna.library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFill)
        #expect(edited.data == annaEdited.data && edited.data != original.data && (edited.pixelWidth, edited.pixelHeight) == (384, 256))

        try anna.library.performChangesAndWait { try $0.assetChangeRequest(for: asset).revertAssetContentToOriginal() }
        try await anna.sync()
        #expect(try await ben.sync().downloadedRenditions == 0, "the original's renditions are here already")
        let reverted = try await ben.library.imageManager.requestImage(for: asset, targetSize: square(256), contentMode: .aspectFill)
        #expect(reverted.data == original.data)
        // The edit's renditions are garbage on both devices; the original's stay.
        world.clock.passWallClock()
        for library in [anna.library, ben.library] {
            try library.collectGarbage(gracePeriod: 0)
            #expect(editRenditions.allSatisfy { !library.resources.contains($0) })
            #expect(originalRenditions.allSatisfy { library.resources.contains($0) })
        }
    }

    @Test("in an encrypted library renditions are sealed with the asset's key: the server holds no JPEG, the new device opens them")
    func encrypted() async throws {
        let world = try RenditionWorld()
        let anna = world.anna
        _ = try anna.library.enableEncryption()
        let assets = try await createPhotos(anna.library, [try quartersPhoto(4), try quartersPhoto(5)])
        #expect(try await anna.sync().recordedRenditions == 6)

        let counter = DownloadCounter(testTransport())
        let ben = try world.ben(transport: counter)
        try await ben.sync()  // publishes its key and waits for enrolment
        let requests = try await anna.engine.enrolmentRequests()
        try await anna.engine.approve(try #require(requests.first))
        let received = try await ben.sync()
        #expect(received.downloadedRenditions == 6 && received.downloadedResources == 0)
        #expect(counter.blobs.count == 6)
        let originalHashes = try originals(ben.library, assets)
        for asset in assets {
            for (size, mode) in commonSizes {
                let theirs = try await ben.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
                let mine = try await anna.library.imageManager.requestImage(for: asset, targetSize: size, contentMode: mode)
                #expect(theirs.data == mine.data)
            }
        }
        #expect(originalHashes.allSatisfy { !ben.library.resources.contains($0) } && counter.blobs.count == 6)

        // The server's blobs: two originals and six renditions, none readable as an image, none
        // named by the hash of its bytes.
        var blobs: [(path: String, bytes: [UInt8])] = []
        let enumerator = FileManager.default.enumerator(at: world.server.directory.url, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard url.path.contains("/blobs/"), (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else {
                continue
            }
            blobs.append((url.path, try [UInt8](Data(contentsOf: url))))
        }
        #expect(blobs.count == 8)
        let renditionHashes = try recorded(anna.library)
        for (path, bytes) in blobs {
            #expect(!bytes.starts(with: [0xFF, 0xD8, 0xFF]), "\(path) is a JPEG")
            #expect(bytes.firstRange(of: Array("JFIF\0".utf8)) == nil, "\(path) holds a JFIF marker")
            #expect(!renditionHashes.contains { path.hasSuffix($0) }, "\(path) is named by a rendition's plain hash")
        }

        // A purge shreds the asset's renditions with its key: gone from both devices.
        let doomed = try recordedRenditions(anna.library, of: assets[0])
        let kept = try recordedRenditions(anna.library, of: assets[1])
        #expect(doomed.count == 3 && kept.count == 3)
        try anna.library.performChangesAndWait { try $0.deleteAssets([assets[0]]) }
        try anna.library.performChangesAndWait { try $0.purgeAssets([assets[0]]) }
        try await anna.sync()
        try await ben.sync()
        for library in [anna.library, ben.library] {
            #expect(doomed.allSatisfy { !library.resources.contains($0) })
            #expect(kept.allSatisfy { library.resources.contains($0) })
        }
    }
}
