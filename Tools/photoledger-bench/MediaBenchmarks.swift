import Foundation
import LedgerCore
import PhotoLedger
import MediaSynthesis
import PhotoMedia

/// Media figures: ingest of 1 MB files into the content-addressed store (read, SHA-256, write,
/// fsync, rename, directory fsync) beside `cp -r` of the same files on the same disk, and beside
/// `cp -r` followed by `sync` (a copy that is as durable as the store's); JPEG metadata
/// inspection (format, size, EXIF date and GPS through libexif).
///
/// `cp -r` alone ends when the bytes are in the page cache; with gigabytes of RAM that measures
/// memory bandwidth, while the store waits for the disk. The durable figure compares like with like.
struct MediaBenchmarks {
    let fileCount: Int
    let fileSize = 1 << 20
    let jpegCount: Int
    let repetitions: Int

    init(quick: Bool) {
        fileCount = quick ? 200 : 1000
        jpegCount = quick ? 200 : 1000
        repetitions = quick ? 1 : 3
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        return try storeIngest(in: directory) + libraryImport(in: directory) + inspection(in: directory)
    }

    /// The store alone: `ResourceStore.ingest(filesAt:)` of seeded random bytes.
    private func storeIngest(in directory: URL) throws -> [Figure] {
        let sources = directory.appendingPathComponent("sources")
        let files = try makeFiles(in: sources)
        let megabytes = Double(fileCount * fileSize) / 1_000_000

        var ingestRates: [Double] = [], copyRates: [Double] = [], durableCopyRates: [Double] = []
        for round in 0..<repetitions {
            let copy = try timeCopy(of: sources, to: directory.appendingPathComponent("cp-\(round)"), megabytes: megabytes)
            copyRates.append(copy.plain)
            durableCopyRates.append(copy.durable)
            let store = try ResourceStore(directory: directory.appendingPathComponent("store-\(round)"))
            ingestRates.append(
                megabytes
                    / (try seconds {
                        for result in store.ingest(filesAt: files) where !(try result.get()).isNew {
                            throw BenchmarkError("a file was unexpectedly a duplicate")
                        }
                    }))
            sync()
            try FileManager.default.removeItem(at: store.directory)
        }
        try FileManager.default.removeItem(at: sources)
        return [
            Figure(
                name: "media.ingest", value: median(ingestRates), unit: "MB/s", baseline: median(copyRates), higherIsBetter: true,
                target: 0.5,
                note:
                    "\(fileCount) files of 1 MB into the resource store, 8 at a time (SHA-256, fsync file, rename, fsync directories); baseline: cp -r of the same files on the same disk, no fsync"
            ),
            Figure(
                name: "media.ingest.durable", value: median(ingestRates), unit: "MB/s", baseline: median(durableCopyRates),
                higherIsBetter: true, target: 0.5, note: "the same ingest; baseline: cp -r then sync -f, a copy as durable as the store's"),
        ]
    }

    /// The library: a folder of 1 MB JPEGs imported into a `PhotoLibrary` in one change block
    /// (validated, stored durably, one asset each, events committed), beside `cp -r` of the same
    /// folder in the same round.
    private func libraryImport(in directory: URL) throws -> [Figure] {
        let folder = directory.appendingPathComponent("photos")
        let photos = try makePhotos(in: folder)
        let megabytes = Double(photos.count * fileSize) / 1_000_000

        var batchRates: [Double] = [], perFileRates: [Double] = [], copyRates: [Double] = [], durableCopyRates: [Double] = []
        var diskRates: [Double] = []
        for round in 0..<repetitions {
            let copy = try timeCopy(of: folder, to: directory.appendingPathComponent("cp-photos-\(round)"), megabytes: megabytes)
            copyRates.append(copy.plain)
            durableCopyRates.append(copy.durable)
            diskRates.append(try timeDiskWrite(to: directory.appendingPathComponent("disk-\(round)"), megabytes: megabytes))

            let batch = try library(at: directory.appendingPathComponent("batch-\(round).sqlite"))
            batchRates.append(
                megabytes
                    / (try seconds {
                        let results = try batch.performChangesAndWait { changes in
                            try changes.importAssets(fromFilesAt: photos).map { $0.placeholderForCreatedAsset }
                        }
                        guard results.allSatisfy({ $0 != nil }) else { throw BenchmarkError("a photo was not imported") }
                    }))
            guard try batch.fetchAssets().count == photos.count else { throw BenchmarkError("the batch import lost assets") }
            sync()
            try removeLibrary(batch)

            let perFile = try library(at: directory.appendingPathComponent("per-file-\(round).sqlite"))
            perFileRates.append(
                megabytes
                    / (try seconds {
                        let created = try perFile.performChangesAndWait { changes in
                            try photos.map { try changes.createAsset(fromImageAt: $0).placeholderForCreatedAsset }
                        }
                        guard created.count == photos.count else { throw BenchmarkError("\(created.count) assets of \(photos.count)") }
                    }))
            sync()
            try removeLibrary(perFile)
        }
        try FileManager.default.removeItem(at: folder)
        return [
            Figure(
                name: "media.import", value: median(batchRates), unit: "MB/s", baseline: median(copyRates), higherIsBetter: true,
                target: 0.5,
                note:
                    "\(photos.count) JPEGs of 1 MB (EXIF) from a folder into a PhotoLibrary: importAssets(fromFilesAt:) in one change block (validate, store durably, one asset each, commit); baseline: cp -r of the folder, no fsync"
            ),
            Figure(
                name: "media.import.durable", value: median(batchRates), unit: "MB/s", baseline: median(durableCopyRates),
                higherIsBetter: true, target: 0.5, note: "the same import; baseline: cp -r then sync -f"),
            Figure(
                name: "media.import.disk", value: median(batchRates), unit: "MB/s", baseline: median(diskRates), higherIsBetter: true,
                target: nil,
                note: "the same import; baseline: the disk's own rate, dd of as many bytes with conv=fsync (a ceiling for any durable copy)"),
            Figure(
                name: "media.import.per-file", value: median(perFileRates), unit: "MB/s", baseline: median(copyRates),
                higherIsBetter: true, target: nil,
                note:
                    "\(photos.count) JPEGs of 1 MB in one change block, one createAsset(fromImageAt:) each (validate, store with fsync, event); baseline: cp -r, no fsync"
            ),
            Figure(
                name: "media.import.per-file.durable", value: median(perFileRates), unit: "MB/s", baseline: median(durableCopyRates),
                higherIsBetter: true, target: nil, note: "the same import; baseline: cp -r then sync -f"),
        ]
    }

    /// JPEG metadata inspection.
    private func inspection(in directory: URL) throws -> [Figure] {
        let jpegs = try makeJPEGs(in: directory.appendingPathComponent("jpegs"))
        var inspectRates: [Double] = []
        for _ in 0..<repetitions {
            var located = 0
            let elapsed = try seconds {
                for url in jpegs where try MediaInspector.inspect(fileAt: url).location != nil { located += 1 }
            }
            guard located == jpegs.count else { throw BenchmarkError("\(jpegs.count - located) JPEGs lost their GPS location") }
            inspectRates.append(Double(jpegs.count) / elapsed)
        }
        return [
            Figure(
                name: "media.inspect", value: median(inspectRates), unit: "files/s", baseline: nil, higherIsBetter: true, target: 1000,
                note: "\(jpegCount) JPEGs 640×480 with EXIF: format, size, date and GPS from the file (libexif)")
        ]
    }

    /// `cp -r` of `source` to `destination` (MB/s), and the same copy followed by `sync -f` (a copy
    /// as durable as the store's). The page cache is flushed before, and the copy removed after.
    private func timeCopy(of source: URL, to destination: URL, megabytes: Double) throws -> (plain: Double, durable: Double) {
        sync()
        let copyTime = try seconds { try run("/bin/cp", ["-r", source.path, destination.path]) }
        let syncTime = try seconds { try run("/bin/sync", ["-f", destination.path]) }  // also keeps cp's flush out of the next timing
        try FileManager.default.removeItem(at: destination)
        sync()
        return (megabytes / copyTime, megabytes / (copyTime + syncTime))
    }

    /// MB/s of `dd` writing `megabytes` of zeros to a new file and flushing it: what the disk
    /// itself takes in, the same round. The file is removed after.
    private func timeDiskWrite(to file: URL, megabytes: Double) throws -> Double {
        sync()
        let blocks = Int(megabytes.rounded())  // blocks of 1 MB
        let elapsed = try seconds {
            try run("/bin/dd", ["if=/dev/zero", "of=\(file.path)", "bs=1000000", "count=\(blocks)", "conv=fsync", "status=none"])
        }
        try FileManager.default.removeItem(at: file)
        sync()
        return Double(blocks) / elapsed
    }

    private func library(at url: URL) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        return try PhotoLibrary(url: url, device: "bench-device", options: options)
    }

    /// Removes a library file, its SQLite companions and its resource directory.
    private func removeLibrary(_ library: PhotoLibrary) throws {
        let base = library.url.deletingPathExtension()
        for suffix in ["sqlite", "sqlite-wal", "sqlite-shm", "resources"] {
            try? FileManager.default.removeItem(at: base.appendingPathExtension(suffix))
        }
    }

    /// `fileCount` distinct files of seeded random bytes.
    private func makeFiles(in directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = SeededRandomNumberGenerator(seed: 4)
        var bytes = [UInt8](repeating: 0, count: fileSize)
        return try (0..<fileCount).map { index in
            bytes.withUnsafeMutableBytes { buffer in
                let words = buffer.bindMemory(to: UInt64.self)
                for word in words.indices { words[word] = random.next() }
            }
            let url = directory.appendingPathComponent(String(format: "IMG_%04d.bin", index))
            try Data(bytes).write(to: url)
            return url
        }
    }

    /// `jpegCount` JPEGs with EXIF dates and GPS: a few encoded pictures, each given distinct
    /// metadata so that every file differs.
    private func makeJPEGs(in directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pictures = (0..<4).map { RGBImage.scene(width: 640, height: 480, seed: UInt64($0)) }
        return try (0..<jpegCount).map { index in
            let bytes = JPEGEncoder().encode(
                pictures[index % pictures.count], creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 60),
                location: Location(latitude: 45 + Double(index) / 1000, longitude: 7 - Double(index) / 1000, altitude: 300))
            let url = directory.appendingPathComponent(String(format: "IMG_%04d.jpg", index))
            try Data(bytes).write(to: url)
            return url
        }
    }

    /// `fileCount` distinct JPEGs of exactly 1 MiB, as a camera writes them: EXIF (date, GPS)
    /// first, then the picture. A few noisy scenes are encoded once (about 0.9 MB each); each
    /// file takes one, with a comment segment that names the file and pads it to 1 MiB.
    private func makePhotos(in directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = SeededRandomNumberGenerator(seed: 7)
        let pictures = (0..<4).map { index in
            var image = RGBImage.scene(width: 1280, height: 960, seed: UInt64(100 + index))
            for pixel in image.pixels.indices {
                image.pixels[pixel] = UInt8(clamping: Int(image.pixels[pixel]) + Int.random(in: -24...24, using: &random))
            }
            return JPEGEncoder(quality: 92).encode(
                image, creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 3600),
                location: Location(latitude: 46 + Double(index) / 100, longitude: 7, altitude: 500))
        }
        return try (0..<fileCount).map { index in
            let picture = pictures[index % pictures.count]
            let exifEnd = 4 + (Int(picture[4]) << 8 | Int(picture[5]))  // SOI, then APP1 (EXIF)
            var padding = fileSize - picture.count
            guard padding >= 64 else { throw BenchmarkError("the encoded picture (\(picture.count) bytes) is larger than 1 MiB") }
            var bytes = Array(picture[..<exifEnd])
            bytes.reserveCapacity(fileSize)
            var label = Array("PhotoLedger benchmark photo \(index) ".utf8)
            while padding > 0 {
                var segment = min(padding, 65_537)  // marker, length, at most 65,533 bytes
                if (1..<4).contains(padding - segment) { segment -= 4 }  // leave room for one more whole segment
                let payload = segment - 4
                bytes += [0xFF, 0xFE, UInt8(truncatingIfNeeded: (payload + 2) >> 8), UInt8(truncatingIfNeeded: payload + 2)]
                for offset in 0..<payload { bytes.append(offset < label.count ? label[offset] : UInt8.random(in: 0x20...0x7E, using: &random)) }
                label = []
                padding -= segment
            }
            bytes += picture[exifEnd...]
            guard bytes.count == fileSize else { throw BenchmarkError("photo \(index) has \(bytes.count) bytes") }
            let url = directory.appendingPathComponent(String(format: "IMG_%04d.JPG", index))
            try Data(bytes).write(to: url)
            return url
        }
    }

    private func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchmarkError("\(tool) exited with status \(process.terminationStatus)") }
    }
}
