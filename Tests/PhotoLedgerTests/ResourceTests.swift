import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import TestSupportKit
import Testing

@testable import PhotoLedger

@Suite("Resources")
struct ResourceTests {
    @Test("every format round-trips byte for byte, with metadata from the bytes", arguments: MediaFormat.allCases)
    func roundTrip(format: MediaFormat) throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let bytes = Data(SyntheticMedia.sample(format, width: 96, height: 64, seed: 11))
        let file = directory.file("sample.\(format.preferredFilenameExtension)")
        try bytes.write(to: file)
        let id = try library.performChangesAndWait { changes in
            let request =
                format.mediaType == .video ? try changes.createAsset(fromVideoAt: file) : try changes.createAsset(fromImageAt: file)
            return request.placeholderForCreatedAsset.localIdentifier
        }
        let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [id]).first)
        #expect(asset.pixelWidth == 96 && asset.pixelHeight == 64)
        #expect(asset.mediaType == (format.mediaType == .video ? .video : .image))
        #expect(try library.requestImageData(for: asset) == bytes)
        let resources = try library.resources(for: asset)
        #expect(resources.count == 1 && resources[0].uniformTypeIdentifier == format.uniformTypeIdentifier)
        #expect(resources[0].originalFilename == file.lastPathComponent && resources[0].size == Int64(bytes.count))
    }

    @Test("identical bytes are stored once")
    func dedupe() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let bytes = Data(SyntheticMedia.sample(.jpeg, width: 50, height: 50, seed: 1))
        let ids = try library.performChangesAndWait { changes in
            [try changes.createAsset(from: bytes), try changes.createAsset(from: bytes)].map(\.placeholderForCreatedAsset.localIdentifier)
        }
        #expect(Set(ids).count == 2)
        let hashes = try ids.map { try library.resources(for: $0)[0].sha256 }
        #expect(hashes[0] == hashes[1])
        let stored = try FileManager.default.subpathsOfDirectory(atPath: library.resources.directory.path).filter { $0.count > 60 }
        #expect(stored.count == 1)
    }

    @Test("shouldMoveFile removes the source only after the block commits; a failed block keeps it")
    func moveVersusCopy() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let copied = directory.file("copy.png"), moved = directory.file("move.png"), kept = directory.file("kept.png")
        for (index, file) in [copied, moved, kept].enumerated() {
            try Data(SyntheticMedia.sample(.png, width: 20, height: 20, seed: UInt64(index))).write(to: file)
        }
        try library.performChangesAndWait { changes in
            _ = try changes.createAsset(fromImageAt: copied)
            _ = try changes.createAsset(fromImageAt: moved, options: AssetCreationOptions(shouldMoveFile: true))
            #expect(FileManager.default.fileExists(atPath: moved.path), "still there inside the block")
        }
        #expect(FileManager.default.fileExists(atPath: copied.path))
        #expect(!FileManager.default.fileExists(atPath: moved.path))
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try library.performChangesAndWait { changes in
                _ = try changes.createAsset(fromImageAt: kept, options: AssetCreationOptions(shouldMoveFile: true))
                throw Abandon()
            }
        }
        #expect(FileManager.default.fileExists(atPath: kept.path))
        #expect(try library.fetchAssets().count == 2)
    }

    @Test("invalid, empty, truncated, unsupported and missing files are clear errors and write nothing")
    func invalidInput() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let jpeg = SyntheticMedia.sample(.jpeg, width: 40, height: 40, seed: 2)
        let cases: [(String, Data, PhotoLibraryError.Code, String)] = [
            ("empty.jpg", Data(), .invalidResource, "empty.jpg"),
            ("cut.jpg", Data(jpeg.prefix(20)), .invalidResource, "cut.jpg"),
            ("notes.png", Data("hello".utf8), .invalidResource, "notes.png"),
            ("archive.mkv", Data([0x1A, 0x45, 0xDF, 0xA3] + [UInt8](repeating: 0, count: 60)), .invalidResource, "archive.mkv"),
        ]
        for (name, bytes, code, mention) in cases {
            try bytes.write(to: directory.file(name))
            let error = try #require(throws: PhotoLibraryError.self) {
                try library.performChangesAndWait { _ = try $0.createAsset(fromImageAt: directory.file(name)) }
            }
            #expect(error.code == code && error.message.contains(mention), "\(name): \(error)")
        }
        let missing = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { _ = try $0.createAsset(fromImageAt: directory.file("nowhere.jpg")) }
        }
        #expect(missing.code == .missingResource && missing.message.contains("nowhere.jpg"))
        let video = directory.file("clip.mp4")
        try Data(SyntheticMedia.sample(.mp4, width: 16, height: 16, seed: 1)).write(to: video)
        let wrongKind = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { _ = try $0.createAsset(fromImageAt: video) }
        }
        #expect(wrongKind.message.contains("is a video"))
        #expect(try library.allEvents().isEmpty)
        #expect(try FileManager.default.subpathsOfDirectory(atPath: library.resources.directory.path).filter { $0.count > 60 }.isEmpty)
    }

    @Test("a damaged stored resource is detected on read, never returned as wrong bytes")
    func corruptedResource() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let id = try library.performChangesAndWait {
            try $0.createAsset(from: Data(SyntheticMedia.sample(.png, width: 30, height: 30, seed: 3))).placeholderForCreatedAsset
                .localIdentifier
        }
        let hash = try library.resources(for: id)[0].sha256
        let file = try #require(library.resources.url(for: hash))
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0xFF
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        try bytes.write(to: file)
        let error = try #require(throws: PhotoLibraryError.self) { try library.requestImageData(for: id) }
        #expect(error.code == .invalidResource && error.message.contains("no longer match"))
        let destination = directory.file("export.png")
        #expect(throws: PhotoLibraryError.self) { try library.writeImageData(for: id, to: destination) }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test("streaming export reports progress up to the total")
    func streamingExport() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let movie = Data(try SyntheticMedia.movie(width: 320, height: 240, duration: 60, arguments: ["-b:v", "600k"]))
        try movie.write(to: directory.file("long.mov"))
        let id = try library.performChangesAndWait {
            try $0.createAsset(fromVideoAt: directory.file("long.mov")).placeholderForCreatedAsset.localIdentifier
        }
        var reports: [(Int64, Int64)] = []
        try library.writeImageData(for: id, to: directory.file("export.mov")) { reports.append(($0, $1)) }
        #expect(try Data(contentsOf: directory.file("export.mov")) == movie)
        #expect(reports.last.map { $0.0 == $0.1 && $0.1 == Int64(movie.count) } == true)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.0 < $1.0 })
    }

    @Test("edits: current returns the rendition, unadjusted the original, revert restores the original")
    func contentEdits() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let original = Data(SyntheticMedia.sample(.jpeg, width: 60, height: 40, seed: 8))
        let edited = Data(SyntheticMedia.sample(.jpeg, width: 60, height: 40, seed: 9))
        let id = try library.performChangesAndWait { try $0.createAsset(from: original).placeholderForCreatedAsset.localIdentifier }
        try library.performChangesAndWait { changes in
            try changes.assetChangeRequest(for: id).setContentEditingOutput(
                ContentEditingOutput(
                    renderedContent: .data(edited), adjustmentFormatIdentifier: "com.example.filters", adjustmentFormatVersion: "1.0",
                    adjustmentData: Data("{\"exposure\":0.5}".utf8)))
        }
        #expect(try library.fetchAssets(withLocalIdentifiers: [id]).first?.hasAdjustments == true)
        #expect(try library.requestImageData(for: id, version: .current) == edited)
        #expect(try library.requestImageData(for: id, version: .unadjusted) == original)
        try library.performChangesAndWait { try $0.assetChangeRequest(for: id).revertAssetContentToOriginal() }
        #expect(try library.requestImageData(for: id, version: .current) == original)
        #expect(try library.fetchAssets(withLocalIdentifiers: [id]).first?.hasAdjustments == false)
        try library.collectGarbage(gracePeriod: 0)
        #expect(library.resources.contains(Hex.sha256(edited)), "the edit stays in history, so its rendition is kept")
    }

    @Test("a Live Photo keeps its paired video; unknown resource types are kept as opaque data")
    func livePhotoAndUnknownTypes() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let photo = Data(SyntheticMedia.sample(.heic, width: 400, height: 300, seed: 1))
        let motion = Data(SyntheticMedia.sample(.quickTime, width: 400, height: 300, seed: 2))
        let future = Data((0..<100).map { UInt8($0) })
        let id = try library.performChangesAndWait { changes in
            try changes.createAsset(withResources: [
                ResourceInput(type: .photo, source: .data(photo)), ResourceInput(type: .pairedVideo, source: .data(motion)),
                ResourceInput(
                    type: ResourceType(rawValue: 42), source: .data(future), options: AssetCreationOptions(originalFilename: "depth.bin")),
            ]).placeholderForCreatedAsset.localIdentifier
        }
        let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [id]).first)
        #expect(asset.mediaSubtypes.contains(.photoLive))
        let resources = try library.resources(for: id)
        #expect(resources.map(\.type) == [.photo, .pairedVideo, ResourceType(rawValue: 42)])
        #expect(try library.requestData(for: resources[2]) == future)
    }

    @Test("a crash between storing a resource and committing leaves no dangling reference; GC removes the orphan")
    func crashBetweenStoreAndCommit() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("library.sqlite")
        let importer = try builtExecutable("library-crash-importer")
        for _ in 0..<3 {
            let process = ChildProcess()
            process.executableURL = importer
            process.arguments = [path.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let line = output.fileHandleForReading.readData(ofLength: 7)
            #expect(String(decoding: line, as: UTF8.self).hasPrefix("stored"))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        let library = try PhotoLibrary(url: path, device: "checker", options: options)
        #expect(try library.allEvents().isEmpty, "no change block committed")
        #expect(try library.verify().intactCount == 0)
        let orphans = try FileManager.default.subpathsOfDirectory(atPath: library.resources.directory.path).filter { $0.count > 60 }
        #expect(orphans.count == 3)
        let kept = try library.performChangesAndWait {
            try $0.createAsset(from: Data(SyntheticMedia.sample(.png, width: 9, height: 9, seed: 99))).placeholderForCreatedAsset
        }
        let removed = try library.collectGarbage(gracePeriod: 0)
        #expect(removed.count == 3)
        #expect(try library.requestImageData(for: kept).count > 0, "a referenced resource is never collected")
    }
}

extension Hex {
    static func sha256(_ data: Data) -> String { encode(SHA256.hash(Array(data))) }
}
