import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import TestSupportKit
import Testing

@testable import PhotoLedger

@Suite("Batch import")
struct AssetImportTests {
    /// Writes `bytes` to `name` in `directory` and returns the file.
    @discardableResult
    func write(_ bytes: [UInt8], _ name: String, in directory: TemporaryDirectory) throws -> URL {
        let url = directory.file(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url
    }

    /// The names of the files in the library's resource store (fan-out directories skipped).
    func storedFiles(_ library: PhotoLibrary) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: library.resources.directory.path).filter { $0.count > 60 }.sorted()
    }

    func temporaryFiles(_ library: PhotoLibrary) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: library.resources.directory.appendingPathComponent("tmp").path)
    }

    func identifiers(_ results: [AssetImportResult]) -> [String?] {
        results.map { $0.placeholderForCreatedAsset?.localIdentifier }
    }

    @Test("every format becomes an asset of the right kind, in file order, in one change block")
    func success() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let files = try MediaFormat.allCases.enumerated().map { index, format in
            try write(
                SyntheticMedia.sample(format, width: 48 + index, height: 32, seed: UInt64(index)),
                "IMG_\(index).\(format.preferredFilenameExtension)", in: directory)
        }
        let results = try library.performChangesAndWait {
            try $0.importAssets(fromFilesAt: files, options: AssetImportOptions(concurrency: 3))
        }
        let ids = identifiers(results).compactMap { $0 }
        #expect(ids.count == files.count)
        for (index, (file, id)) in zip(files, ids).enumerated() {
            let asset = try #require(try library.fetchAssets(withLocalIdentifiers: [id]).first)
            let format = MediaFormat.allCases[index]
            #expect(asset.mediaType == (format.mediaType == .video ? .video : .image))
            #expect(asset.pixelWidth == 48 + index && asset.pixelHeight == 32)
            #expect(try library.requestImageData(for: asset) == Data(contentsOf: file))
            let resources = try library.resources(for: asset)
            #expect(resources.map(\.type) == [format.mediaType == .video ? .video : .photo])
            #expect(
                resources[0].originalFilename == file.lastPathComponent
                    && resources[0].uniformTypeIdentifier == format.uniformTypeIdentifier)
            #expect(FileManager.default.fileExists(atPath: file.path), "a copy leaves the source")
        }
        #expect(try library.fetchAssets(options: FetchOptions(sortDescriptors: [])).count == files.count)
        let events = try library.allEvents()
        #expect(events.count == files.count && Set(events.map(\.changeBlock)).count == 1, "one event per asset, one change block")
        #expect(events.map(\.object) == ids.map { LocalIdentifier($0)!.uuid }, "assets are created in file order")
        #expect(try storedFiles(library).count == files.count)
        #expect(try temporaryFiles(library).isEmpty)
        #expect(try library.performChangesAndWait { try $0.importAssets(fromFilesAt: []) }.isEmpty)
    }

    @Test("a bad, missing, non-media or non-regular path in the middle ends alone, with its name and reason, and nothing of it is stored")
    func badFilesFailAlone() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let first = try write(SyntheticMedia.sample(.jpeg, width: 20, height: 20, seed: 1), "first.jpg", in: directory)
        let cut = try write(Array(SyntheticMedia.sample(.png, width: 20, height: 20, seed: 2).prefix(30)), "cut.png", in: directory)
        let empty = try write([], "empty.jpg", in: directory)
        let notes = try write(Array("not a photo".utf8), "notes.jpg", in: directory)
        let missing = directory.file("missing.jpg")
        let folder = directory.file("folder.jpg")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let last = try write(SyntheticMedia.sample(.mp4, width: 16, height: 16, seed: 3), "last.mp4", in: directory)
        let files = [first, cut, empty, notes, missing, folder, last]
        let results = try library.performChangesAndWait { try $0.importAssets(fromFilesAt: files) }
        #expect(results.count == files.count)
        for (file, result) in zip(files, results) {
            switch (file, result) {
            case (first, .created), (last, .created): break
            case (missing, .failed(let error)): #expect(error.code == .missingResource && error.message.contains("missing.jpg"))
            case (notes, .notMedia(let reason)): #expect(reason.hasPrefix("notes.jpg: not a photo or video"), "\(reason)")
            case (folder, .skipped(let reason)): #expect(reason == "folder.jpg: not a regular file (a folder)")
            case (_, .failed(let error)):
                #expect(error.code == .invalidResource && error.message.contains(file.lastPathComponent), "\(error)")
            default: Issue.record("\(file.lastPathComponent): \(result)")
            }
        }
        guard case .failed(let cutError) = results[1], case .failed(let emptyError) = results[2] else {
            Issue.record("expected failures")
            return
        }
        #expect(cutError.message.contains("truncated PNG") || cutError.message.contains("damaged PNG"), "\(cutError)")
        #expect(emptyError.message.contains("empty file"))
        #expect(try library.fetchAssets().count == 2)
        let expected = try [first, last].map { Hex.sha256(try Data(contentsOf: $0)) }.sorted()
        #expect(try storedFiles(library).map { String($0.dropFirst(3)) } == expected, "only the good files are stored")
        #expect(try temporaryFiles(library).isEmpty)
    }

    @Test("a block that throws on a failed file records nothing; what was stored is an orphan for GC")
    func allOrNothing() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock.wallClock()
        let library = try makeLibrary(directory, clock: clock)
        let good = try write(SyntheticMedia.sample(.jpeg, width: 20, height: 20, seed: 1), "good.jpg", in: directory)
        let bad = try write(Array("garbage".utf8), "bad.jpg", in: directory)
        struct Incomplete: Error {}
        #expect(throws: Incomplete.self) {
            try library.performChangesAndWait { changes in
                let results = try changes.importAssets(fromFilesAt: [good, bad], options: AssetImportOptions(shouldMoveFile: true))
                if results.contains(where: { $0.placeholderForCreatedAsset == nil }) { throw Incomplete() }
            }
        }
        #expect(try library.allEvents().isEmpty)
        #expect(FileManager.default.fileExists(atPath: good.path), "a failed block removes no moved source")
        clock.passWallClock()
        #expect(try library.collectGarbage(gracePeriod: 0).count == 1)
        #expect(try storedFiles(library).isEmpty)
    }

    @Test("identical files make separate assets stored once; skipsDuplicates reports them instead")
    func duplicatesWithinTheBatch() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let bytes = SyntheticMedia.sample(.jpeg, width: 30, height: 30, seed: 5)
        let files = try (0..<4).map { try write(bytes, "copy-\($0).jpg", in: directory) }
        let other = try write(SyntheticMedia.sample(.png, width: 30, height: 30, seed: 6), "other.png", in: directory)

        let plain = try library.performChangesAndWait { try $0.importAssets(fromFilesAt: files + [other]) }
        #expect(Set(identifiers(plain).compactMap { $0 }).count == 5, "as in PhotoKit, each file is an asset")
        #expect(try storedFiles(library).count == 2, "the identical bytes are stored once")

        let second = try TemporaryDirectory()
        let deduplicating = try makeLibrary(second)
        let results = try deduplicating.performChangesAndWait {
            try $0.importAssets(fromFilesAt: [files[0], other, files[1], files[2]], options: AssetImportOptions(skipsDuplicates: true))
        }
        let firstID = try #require(results[0].placeholderForCreatedAsset?.localIdentifier)
        #expect(results[1].placeholderForCreatedAsset != nil)
        for result in results[2...] {
            guard case .duplicate(let original) = result else {
                Issue.record("expected a duplicate, got \(result)")
                continue
            }
            #expect(original == firstID, "a duplicate names the first file's asset")
        }
        #expect(try deduplicating.fetchAssets().count == 2)
        #expect(try storedFiles(deduplicating).count == 2)
        #expect(try temporaryFiles(deduplicating).isEmpty)
    }

    @Test("files already in the library: stored once; skipsDuplicates names the existing asset, even in Recently Deleted")
    func duplicatesOfExistingAssets() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let bytes = SyntheticMedia.sample(.heic, width: 40, height: 30, seed: 7)
        let existing = try library.performChangesAndWait {
            try $0.createAsset(from: Data(bytes)).placeholderForCreatedAsset.localIdentifier
        }
        let again = try write(bytes, "again.heic", in: directory)

        let plain = try library.performChangesAndWait { try $0.importAssets(fromFilesAt: [again]) }
        let copyID = try #require(plain[0].placeholderForCreatedAsset?.localIdentifier)
        #expect(copyID != existing)
        #expect(try storedFiles(library).count == 1)

        try library.performChangesAndWait { try $0.deleteAssets([existing]) }
        let skipped = try library.performChangesAndWait {
            try $0.importAssets(fromFilesAt: [again], options: AssetImportOptions(skipsDuplicates: true))
        }
        guard case .duplicate(let original) = skipped[0] else {
            Issue.record("expected a duplicate, got \(skipped[0])")
            return
        }
        #expect(original == existing, "the oldest asset with those bytes, though it is in Recently Deleted")
        #expect(try library.fetchAssets().count == 1)
        #expect(try temporaryFiles(library).isEmpty)
    }

    @Test("shouldMoveFile removes the sources of created assets after the commit; failures and duplicates keep theirs")
    func moveVersusCopy() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let copied = try write(SyntheticMedia.sample(.gif, width: 12, height: 12, seed: 1), "copied.gif", in: directory)
        _ = try library.performChangesAndWait { try $0.importAssets(fromFilesAt: [copied]) }
        #expect(FileManager.default.fileExists(atPath: copied.path))

        let moved = try write(SyntheticMedia.sample(.webp, width: 12, height: 12, seed: 2), "moved.webp", in: directory)
        let video = try write(SyntheticMedia.sample(.quickTime, width: 16, height: 16, seed: 3), "moved.mov", in: directory)
        let duplicate = try write(SyntheticMedia.sample(.gif, width: 12, height: 12, seed: 1), "duplicate.gif", in: directory)
        let broken = try write(Array("broken".utf8), "broken.jpg", in: directory)
        let results = try library.performChangesAndWait { changes in
            let results = try changes.importAssets(
                fromFilesAt: [moved, video, duplicate, broken], options: AssetImportOptions(shouldMoveFile: true, skipsDuplicates: true))
            #expect(FileManager.default.fileExists(atPath: moved.path), "still there inside the block")
            return results.map { $0.placeholderForCreatedAsset?.localIdentifier }
        }
        #expect(results[0] != nil && results[1] != nil && results[2] == nil && results[3] == nil)
        #expect(!FileManager.default.fileExists(atPath: moved.path) && !FileManager.default.fileExists(atPath: video.path))
        #expect(FileManager.default.fileExists(atPath: duplicate.path) && FileManager.default.fileExists(atPath: broken.path))
        let movedID = try #require(results[0])
        #expect(try library.requestImageData(for: movedID) == Data(SyntheticMedia.sample(.webp, width: 12, height: 12, seed: 2)))
    }

    @Test("add-only access imports and skips duplicates within the batch only")
    func addOnlyAccess() async throws {
        let directory = try TemporaryDirectory()
        let setup = try makeLibrary(directory, name: "library.sqlite")
        let bytes = SyntheticMedia.sample(.jpeg, width: 16, height: 16, seed: 9)
        _ = try setup.performChangesAndWait { try $0.createAsset(from: Data(bytes)) }
        try setup.setAuthorizationStatus(.notDetermined, for: .readWrite)
        var options = PhotoLibrary.Options()
        options.promptHandler = { _ in .authorized }
        let library = try PhotoLibrary(url: directory.file("library.sqlite"), device: "anna-phone", options: options)
        #expect(await library.requestAuthorization(for: .addOnly) == .authorized)
        let files = try (0..<2).map { try write(bytes, "same-\($0).jpg", in: directory) }
        let results = try library.performChangesAndWait {
            try $0.importAssets(fromFilesAt: files, options: AssetImportOptions(skipsDuplicates: true)).map {
                $0.placeholderForCreatedAsset?.localIdentifier
            }
        }
        #expect(results[0] != nil, "the asset it cannot see does not count")
        #expect(results[1] == nil, "the file before it in the batch does")
    }

    @Test("a crash after a batch is stored, before its commit, leaves only orphans; GC removes them")
    func crashBeforeCommit() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("library.sqlite")
        let process = ChildProcess()
        process.executableURL = try builtExecutable("library-crash-importer")
        process.arguments = [path.path, "--batch", "12"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = output.fileHandleForReading.readData(ofLength: 7)
        #expect(String(decoding: line, as: UTF8.self).hasPrefix("stored"))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()

        let clock = TestClock.wallClock()
        let library = try makeLibrary(directory, clock: clock, name: "library.sqlite")
        #expect(try library.allEvents().isEmpty, "no change block committed")
        #expect(try storedFiles(library).count == 12, "every file was complete under its name")
        for name in try storedFiles(library) {
            let hash = String(name.dropFirst(3))
            #expect(try Hex.sha256(library.resources.read(hash)) == hash)
        }
        #expect(try temporaryFiles(library).isEmpty)
        clock.passWallClock()
        #expect(try library.collectGarbage(gracePeriod: 0).count == 12)
        #expect(try storedFiles(library).isEmpty)
    }
}
