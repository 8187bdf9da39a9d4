import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("Content-addressed resource store")
struct ResourceStoreTests {
    let directory: TemporaryDirectory
    let store: ResourceStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try ResourceStore(directory: directory.file("resources"))
    }

    private func temporaryFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.directory.appendingPathComponent("tmp").path)
    }

    @Test("bytes of every format come back exactly, from data and from a file", arguments: MediaFormat.allCases)
    func roundTrip(format: MediaFormat) throws {
        let bytes = SyntheticMedia.sample(format, width: 40, height: 30, seed: 11)
        let fromData = try store.importMedia(bytes, name: "a.\(format.preferredFilenameExtension)")
        #expect(fromData.info.format == format)
        #expect(fromData.resource.hash == Hex.encode(SHA256.hash(bytes)))
        #expect(fromData.resource.size == Int64(bytes.count))
        #expect(try store.read(fromData.resource.hash) == Data(bytes))

        let other = SyntheticMedia.sample(format, width: 41, height: 30, seed: 12)
        let url = try directory.write(other, to: "b.\(format.preferredFilenameExtension)")
        let fromFile = try store.importMedia(fileAt: url)
        #expect(fromFile.info.pixelWidth == 41)
        #expect(try store.read(fromFile.resource.hash) == Data(other))
        #expect(FileManager.default.fileExists(atPath: url.path), "a copy leaves the source")
        #expect(try temporaryFiles().isEmpty)
    }

    @Test("files are named by their SHA-256 in fan-out directories")
    func layout() throws {
        let stored = try store.ingest(Array("hello".utf8))
        #expect(stored.hash == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        let url = try #require(store.url(for: stored.hash))
        #expect(url.path == store.directory.path + "/2c/" + stored.hash)
        #expect(store.contains(stored.hash))
        #expect(try store.size(of: stored.hash) == 5)
    }

    @Test("identical bytes are stored once, and the second ingest says so")
    func deduplication() throws {
        let bytes = SyntheticMedia.sample(.jpeg, width: 30, height: 30, seed: 1)
        let first = try store.ingest(bytes)
        let second = try store.ingest(fileAt: try directory.write(bytes, to: "copy.jpg"))
        #expect(first.isNew)
        #expect(!second.isNew)
        #expect(first.hash == second.hash)
        let fanOut = store.directory.appendingPathComponent(String(first.hash.prefix(2))).path
        #expect(try FileManager.default.contentsOfDirectory(atPath: fanOut) == [first.hash])
        #expect(try temporaryFiles().isEmpty)
    }

    @Test("a file written into tmp/ by a caller that hashed it is named by that digest without being read again")
    func adoptHashedFile() throws {
        let bytes = SyntheticMedia.sample(.jpeg, width: 30, height: 30, seed: 5)
        let digest = SHA256.hash(bytes)
        for isFlushed in [true, false] {
            let file = store.temporaryDirectory.appendingPathComponent("download-\(isFlushed)")
            try Data(bytes).write(to: file)
            let stored = try store.adopt(fileAt: file, sha256: digest, isFlushed: isFlushed)
            #expect(stored == StoredResource(hash: Hex.encode(digest), size: Int64(bytes.count), isNew: isFlushed))
            #expect(try store.read(stored.hash) == Data(bytes))
            #expect(try temporaryFiles().isEmpty, "the file is gone from tmp/, stored or dropped as a copy")
        }

        // The store names a file by the caller's digest: it is the caller's to vouch for it.
        let other = try directory.write([1, 2, 3], to: "elsewhere.jpg")
        let outside = try #require(throws: MediaError.self) { try store.adopt(fileAt: other, sha256: digest, isFlushed: true) }
        #expect(outside.kind == .invalidResource)
        #expect(FileManager.default.fileExists(atPath: other.path), "a file outside tmp/ is left alone")
        let short = store.temporaryDirectory.appendingPathComponent("download-short")
        try Data([1, 2, 3]).write(to: short)
        #expect(throws: MediaError.self) { try store.adopt(fileAt: short, sha256: [1, 2, 3], isFlushed: true) }
        let missing = try #require(throws: MediaError.self) {
            try store.adopt(fileAt: store.temporaryDirectory.appendingPathComponent("gone"), sha256: digest, isFlushed: false)
        }
        #expect(missing.kind == .missingResource)
    }

    @Test("the fan-out directories of resources to come are made ahead, once each; malformed names are skipped")
    func directoriesAhead() throws {
        let bytes = SyntheticMedia.sample(.jpeg, width: 30, height: 30, seed: 6)
        let hash = Hex.encode(SHA256.hash(bytes))
        let entries = { try FileManager.default.contentsOfDirectory(atPath: store.directory.path).sorted() }
        let other = hash.hasPrefix("ab") ? "cd" : "ab"
        try store.makeDirectories(for: [hash, other + String(repeating: "0", count: 62), "../not-a-name", hash])
        #expect(try entries() == [other, String(hash.prefix(2)), "tmp"].sorted())
        try store.makeDirectories(for: [hash])  // already there: nothing to do
        let file = store.temporaryDirectory.appendingPathComponent("download")
        try Data(bytes).write(to: file)
        #expect(try store.adopt(fileAt: file, sha256: SHA256.hash(bytes), isFlushed: true).isNew)
        #expect(try store.read(hash) == Data(bytes))
        _ = try store.collectGarbage(referenced: [hash], gracePeriod: 0)
        #expect(try store.read(hash) == Data(bytes))
    }

    @Test("a moved file is stored without touching the source, which the caller deletes after its commit")
    func moveTransfer() throws {
        let bytes = SyntheticMedia.sample(.mp4, width: 64, height: 48, seed: 3)
        let source = try directory.write(bytes, to: "capture.mp4")
        let imported = try store.importMedia(fileAt: source, transfer: .move)
        #expect(FileManager.default.fileExists(atPath: source.path), "the source stays until the change commits")
        let stored = try #require(store.url(for: imported.resource.hash))
        let links = try FileManager.default.attributesOfItem(atPath: stored.path)[.referenceCount] as? Int
        #expect(links == 2, "on one file system the move is a hard link, not a copy")
        try FileManager.default.removeItem(at: source)  // what the library does after its commit
        #expect(try store.read(imported.resource.hash) == Data(bytes))
    }

    @Test("a moved symbolic link is copied, never linked, so the store does not depend on its target")
    func moveOfSymbolicLink() throws {
        let bytes = SyntheticMedia.sample(.png, width: 16, height: 16, seed: 6)
        let target = try directory.write(bytes, to: "real.png")
        let link = directory.file("link.png")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let imported = try store.importMedia(fileAt: link, transfer: .move)
        try FileManager.default.removeItem(at: target)
        #expect(try store.read(imported.resource.hash) == Data(bytes))
    }

    @Test("invalid media is rejected and leaves nothing in the store")
    func invalidLeavesNothing() throws {
        let bytes = Array(SyntheticMedia.sample(.png, width: 30, height: 30, seed: 1).dropLast(200))
        let url = try directory.write(bytes, to: "IMG_9.png")
        let error = Samples.mediaError { _ = try store.importMedia(fileAt: url) }
        #expect(error?.kind == .invalidResource)
        #expect(error?.resource == "IMG_9.png")
        #expect(Samples.mediaError { _ = try store.importMedia(bytes, name: "IMG_9.png") }?.kind == .invalidResource)
        #expect(try temporaryFiles().isEmpty)
        #expect(!store.contains(Hex.encode(SHA256.hash(bytes))))
    }

    @Test("a batch is stored in order, and one bad file fails alone")
    func batches() throws {
        let samples = Samples.all()
        var urls = try samples.map { try directory.write($0.bytes, to: "batch.\($0.format.preferredFilenameExtension)") }
        urls.insert(directory.file("missing.jpg"), at: 2)
        let invalid = try directory.write(Array("not a picture".utf8), to: "notes.jpg")
        urls.append(invalid)

        let imported = store.importMedia(filesAt: urls, concurrency: 3)
        #expect(imported.count == urls.count)
        for (index, result) in imported.enumerated() {
            switch (urls[index].lastPathComponent, result) {
            case ("missing.jpg", .failure(let error)): #expect(error.kind == .missingResource)
            case ("notes.jpg", .failure(let error)): #expect(error.kind == .invalidResource && error.resource == "notes.jpg")
            case (let name, .success(let value)):
                #expect(value.info.format.preferredFilenameExtension == (name as NSString).pathExtension)
                #expect(try store.read(value.resource.hash) == Data(contentsOf: urls[index]))
            case (let name, .failure(let error)): Issue.record("\(name): \(error)")
            }
        }
        let again = store.ingest(filesAt: Array(urls.dropLast()))  // all but the invalid file, stored above
        #expect(again.compactMap { try? $0.get() }.allSatisfy { !$0.isNew })
        #expect(try temporaryFiles().isEmpty)
    }

    @Test("a batch stores identical bytes once: the first such file is the new one, and stored bytes are not written again")
    func batchDeduplication() throws {
        let bytes = SyntheticMedia.sample(.jpeg, width: 24, height: 24, seed: 21)
        let copies = try (0..<6).map { try directory.write(bytes, to: "same-\($0).jpg") }
        let other = try directory.write(SyntheticMedia.sample(.png, width: 24, height: 24, seed: 22), to: "other.png")
        let results = store.importMedia(filesAt: [other] + copies, concurrency: 4).map { try? $0.get().resource }
        #expect(results.allSatisfy { $0 != nil })
        #expect(results.map { $0?.isNew } == [true, true, false, false, false, false, false])
        #expect(Set(results.map { $0?.hash }).count == 2)
        let hash = try #require(results[1]?.hash)
        let fanOut = store.directory.appendingPathComponent(String(hash.prefix(2))).path
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: fanOut).filter { $0.hasPrefix(hash.prefix(2)) && $0.count == 64 } == [hash])

        let stored = try #require(store.url(for: hash))
        let before = try FileManager.default.attributesOfItem(atPath: stored.path)[.systemFileNumber] as? Int
        let again = store.ingest(filesAt: copies)
        #expect(again.allSatisfy { (try? $0.get())?.isNew == false })
        #expect(
            try FileManager.default.attributesOfItem(atPath: stored.path)[.systemFileNumber] as? Int == before,
            "the stored file is kept, not replaced")
        #expect(try temporaryFiles().isEmpty)
    }

    @Test("a moved batch links the sources instead of copying them, and leaves them in place")
    func batchMove() throws {
        let sources = try (0..<3).map {
            try directory.write(SyntheticMedia.sample(.gif, width: 10, height: 10, seed: UInt64(30 + $0)), to: "move-\($0).gif")
        }
        let results = store.importMedia(filesAt: sources, transfer: .move)
        for (source, result) in zip(sources, results) {
            let imported = try result.get()
            #expect(FileManager.default.fileExists(atPath: source.path))
            let stored = try #require(store.url(for: imported.resource.hash))
            #expect(try FileManager.default.attributesOfItem(atPath: stored.path)[.referenceCount] as? Int == 2)
            #expect(try store.read(imported.resource.hash) == Data(contentsOf: source))
        }
        #expect(try temporaryFiles().isEmpty)
    }

    @Test("a batch file larger than the copy buffer is validated from its temporary file, and a damaged one leaves nothing")
    func batchLargeFiles() throws {
        let movie = try SyntheticMedia.movie(
            width: 320, height: 240, duration: 60, filters: ["noise=alls=30:allf=t"], arguments: ["-preset", "ultrafast", "-b:v", "3400k"])
        #expect(movie.count > 16 << 20, "larger than the copy buffer (4 MiB) and than one writeback step (16 MiB)")
        let good = try directory.write(movie, to: "long.mp4")
        let damaged = try directory.write([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0x42, count: 6 << 20), to: "damaged.jpg")
        let results = store.importMedia(filesAt: [good, damaged])
        let imported = try results[0].get()
        #expect(imported.info.format == .mp4 && imported.info.pixelWidth == 320)
        #expect(imported.resource.size == Int64(movie.count))
        #expect(try store.read(imported.resource.hash) == Data(movie))
        #expect(Samples.mediaError { _ = try results[1].get() }?.resource == "damaged.jpg")
        #expect(try temporaryFiles().isEmpty)
    }

    @Test("ingesting a missing file is a missingResource")
    func missingSource() throws {
        let error = Samples.mediaError { _ = try store.importMedia(fileAt: directory.file("nothing.heic")) }
        #expect(error?.kind == .missingResource)
        #expect(error?.resource == "nothing.heic")
    }

    @Test("reading an unknown or malformed hash fails clearly")
    func unknownHashes() {
        let absent = String(repeating: "ab", count: 32)
        #expect(Samples.mediaError { _ = try store.read(absent) }?.kind == .missingResource)
        #expect(Samples.mediaError { _ = try store.read("../../etc/passwd") }?.kind == .invalidResource)
        #expect(store.url(for: "../x") == nil)
        #expect(!store.contains(absent))
    }

    @Test("a corrupted resource is detected on read, never returned")
    func corruptionOnRead() throws {
        let stored = try store.ingest(SyntheticMedia.sample(.gif, width: 20, height: 20, seed: 4))
        let url = try #require(store.url(for: stored.hash))
        var bytes = try [UInt8](Data(contentsOf: url))
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: url)
        let error = Samples.mediaError { _ = try store.read(stored.hash) }
        #expect(error?.kind == .corruptedResource)
        #expect(error?.resource == stored.hash)
    }

    @Test("writing a resource to a file streams it with progress, and a corrupted one leaves no partial file")
    func writeToFile() throws {
        var random = SeededRandomNumberGenerator(seed: 5)
        let bytes = (0..<(ResourceStore.chunkSize * 2 + 12_345)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let stored = try store.ingest(bytes)
        var reports: [(Int64, Int64)] = []
        let destination = directory.file("export.bin")
        try store.write(stored.hash, to: destination) { reports.append(($0, $1)) }
        #expect(try Data(contentsOf: destination) == Data(bytes))
        #expect(reports.map(\.0) == [Int64(ResourceStore.chunkSize), Int64(ResourceStore.chunkSize * 2), Int64(bytes.count)])
        #expect(reports.allSatisfy { $0.1 == Int64(bytes.count) })

        let existing = Samples.mediaError { try store.write(stored.hash, to: destination) }
        #expect(existing?.kind == .fileSystem, "an existing destination is never overwritten")
        #expect(try Data(contentsOf: destination) == Data(bytes))

        let url = try #require(store.url(for: stored.hash))
        let handle = try FileHandle(forWritingTo: url)
        try handle.seek(toOffset: UInt64(bytes.count - 1))
        try handle.write(contentsOf: [bytes[bytes.count - 1] ^ 0xFF])
        try handle.close()
        let damaged = directory.file("damaged.bin")
        let error = Samples.mediaError { try store.write(stored.hash, to: damaged) }
        #expect(error?.kind == .corruptedResource)
        #expect(!FileManager.default.fileExists(atPath: damaged.path), "the partial destination is removed")
    }

    @Test("garbage collection removes orphans and temporary files, never a referenced resource")
    func garbageCollection() throws {
        let kept = try store.ingest(Array("referenced".utf8))
        let orphan = try store.ingest(Array("orphan".utf8))
        let temporary = store.directory.appendingPathComponent("tmp/ingest-left-by-a-crash")
        try Data("partial".utf8).write(to: temporary)

        let early = try store.collectGarbage(referenced: [kept.hash])
        #expect(early == GarbageCollectionReport(), "within the grace period nothing is taken")

        let report = try store.collectGarbage(referenced: [kept.hash], gracePeriod: 0, now: Date().addingTimeInterval(1))
        #expect(report.removedResources == [orphan.hash])
        #expect(report.removedTemporaryFiles == ["ingest-left-by-a-crash"])
        #expect(report.reclaimedBytes == Int64("orphan".utf8.count + "partial".utf8.count))
        #expect(store.contains(kept.hash))
        #expect(!store.contains(orphan.hash))
        #expect(try store.read(kept.hash) == Data("referenced".utf8))
        #expect(try store.collectGarbage(referenced: [kept.hash], gracePeriod: 0) == GarbageCollectionReport())
    }

    @Test("re-ingesting an orphan refreshes it, so a collection with a grace period spares it")
    func reingestRefreshes() throws {
        let orphan = try store.ingest(Array("photo".utf8))
        let url = try #require(store.url(for: orphan.hash))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: url.path)
        _ = try store.ingest(Array("photo".utf8))
        #expect(try store.collectGarbage(referenced: []).removedResources.isEmpty)
    }
}
