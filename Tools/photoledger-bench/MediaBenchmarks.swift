import Dispatch
import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoMedia
import Synchronization

/// Media figures: ingest of 1 MB files into the content-addressed store (read, SHA-256, write,
/// fsync, rename, directory fsync) beside `cp -r` of the same files on the same disk, and beside
/// `cp -r` followed by `sync` (a copy that is as durable as the store's); import of a camera's
/// folder (12-megapixel JPEGs made by libvips, a few HEICs and MP4s), each file checked (a JPEG's
/// structure, the others decoded), beside the same copies, and the same with JPEGs decoded at 1/8
/// and their 256-pixel renditions made (`makesThumbnails`),
/// and its thumbnails made in the background afterwards; 256-pixel thumbnails by the image
/// manager beside `vipsthumbnail` on the same files; inspection (decode and metadata) per format.
///
/// `cp -r` alone ends when the bytes are in the page cache; with gigabytes of RAM that measures
/// memory bandwidth, while the store waits for the disk. The durable figure compares like with like.
struct MediaBenchmarks {
    let fileCount: Int
    let fileSize = 1 << 20
    /// JPEGs of 4000×3000 at quality 90 in the imported folder, half of them with orientation 6.
    let photoCount: Int
    let heicCount: Int
    let movieCount: Int
    let repetitions: Int

    init(quick: Bool) {
        fileCount = quick ? 200 : 1000
        photoCount = quick ? 100 : 1000
        heicCount = quick ? 2 : 5
        movieCount = quick ? 1 : 3
        repetitions = quick ? 1 : 3
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        return try storeIngest(in: directory) + libraryImport(in: directory)
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

    /// The library: a camera's folder (see `makeCameraFolder`) imported into a `PhotoLibrary` in
    /// one change block (every file decoded to validate it, stored durably, one asset each,
    /// events committed), beside `cp -r` of the same folder in the same round, with and without
    /// `sync -f`.
    private func libraryImport(in directory: URL) throws -> [Figure] {
        let folder = directory.appendingPathComponent("camera")
        let files = try makeCameraFolder(in: folder)
        let bytes = try files.reduce(0) { $0 + (try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int ?? 0) }
        let megabytes = Double(bytes) / 1_000_000

        var batchRates: [Double] = [], copyRates: [Double] = [], durableCopyRates: [Double] = [], diskRates: [Double] = []
        var validationOnlyRates: [Double] = [], backgroundRates: [Double] = [], cores: [Double] = []
        var processorPerFile: [Double] = [], validationOnlyProcessorPerFile: [Double] = [], backgroundProcessorPerFile: [Double] = []
        var thumbnails: [Figure] = []
        for round in 0..<repetitions {
            let copy = try timeCopy(of: folder, to: directory.appendingPathComponent("cp-camera-\(round)"), megabytes: megabytes)
            copyRates.append(copy.plain)
            durableCopyRates.append(copy.durable)
            diskRates.append(try timeDiskWrite(to: directory.appendingPathComponent("disk-\(round)"), megabytes: megabytes))

            // The import before the JPEG structure check: each JPEG decoded at 1/8 to validate it,
            // its 256-pixel renditions made from that decode.
            let reduced = try library(at: directory.appendingPathComponent("reduced-\(round).sqlite"))
            var start = processorSeconds()
            validationOnlyRates.append(
                megabytes / (try timeImport(files, into: reduced, options: AssetImportOptions(makesThumbnails: true))))
            validationOnlyProcessorPerFile.append((processorSeconds() - start) * 1000 / Double(files.count))
            sync()
            try removeLibrary(reduced)

            let batch = try library(at: directory.appendingPathComponent("batch-\(round).sqlite"))
            start = processorSeconds()
            let elapsed = try timeImport(files, into: batch, options: AssetImportOptions())
            let used = processorSeconds() - start
            cores.append(used / elapsed)
            processorPerFile.append(used * 1000 / Double(files.count))
            batchRates.append(megabytes / elapsed)
            start = processorSeconds()
            backgroundRates.append(Double(files.count) / (try timeBackgroundThumbnails(of: batch)))
            backgroundProcessorPerFile.append((processorSeconds() - start) * 1000 / Double(files.count))
            sync()
            try removeLibrary(batch)

            if round == repetitions - 1 {
                // A library without renditions for the image manager's figure (not timed).
                let plain = try library(at: directory.appendingPathComponent("plain.sqlite"))
                _ = try timeImport(files, into: plain, options: AssetImportOptions())
                thumbnails = try thumbnailFigures(plain, folder: folder, in: directory)
                try removeLibrary(plain)
            }
        }
        let inspected = try inspection(of: files)
        try FileManager.default.removeItem(at: folder)
        let content =
            "\(photoCount) JPEGs 4000×3000 q90 with EXIF (half orientation 6), \(heicCount) HEICs, \(movieCount) MP4s, \(Int(megabytes)) MB"
        return [
            Figure(
                name: "media.import", value: median(batchRates), unit: "MB/s", baseline: median(copyRates), higherIsBetter: true,
                target: nil,
                note:
                    "\(content): importAssets(fromFilesAt:) in one change block (check each file — a JPEG's structure, the others decoded —, store durably, one asset each, commit); baseline: cp -r of the folder, no fsync"
            ),
            Figure(
                name: "media.import.durable", value: median(batchRates), unit: "MB/s", baseline: median(durableCopyRates),
                higherIsBetter: true, target: 0.5, note: "the same import; baseline: cp -r then sync -f, a copy as durable as the store's"),
            Figure(
                name: "media.import.disk", value: median(batchRates), unit: "MB/s", baseline: median(diskRates), higherIsBetter: true,
                target: nil,
                note: "the same import; baseline: the disk's own rate, dd of as many bytes with conv=fsync (a ceiling for any durable copy)"
            ),
            Figure(
                name: "media.import.reduced-decode", value: median(validationOnlyRates), unit: "MB/s", baseline: median(durableCopyRates),
                higherIsBetter: true, target: nil,
                note:
                    "the same import with each JPEG decoded at 1/8 to validate it and its 256-pixel renditions made from that decode (makesThumbnails: true); baseline: cp -r then sync -f"
            ),
            Figure(
                name: "media.import.cores", value: median(cores), unit: "cores", baseline: nil, higherIsBetter: true, target: nil,
                note: "processor time of the process over the import's wall time (2 = both cores busy throughout)"),
            Figure(
                name: "media.import.cpu", value: median(processorPerFile), unit: "ms/file",
                baseline: median(validationOnlyProcessorPerFile),
                higherIsBetter: false, target: nil,
                note:
                    "processor time per file of the import (user + system, every thread); baseline: the same with makesThumbnails (JPEGs decoded at 1/8, 256-pixel renditions made)"
            ),
            Figure(
                name: "media.import.thumbnails.cpu", value: median(backgroundProcessorPerFile), unit: "ms/file", baseline: nil,
                higherIsBetter: false, target: nil, note: "processor time per file of the thumbnails made after the import"),
            Figure(
                name: "media.import.thumbnails", value: median(backgroundRates), unit: "files/s", baseline: nil, higherIsBetter: true,
                target: nil,
                note:
                    "after the import: startCachingImages of 256 fit, 256 fill and 1024 fit for every asset, waited for (one decode per asset for the three); not counted in the import"
            ),
        ] + thumbnails + inspected
    }

    /// Inspection (decode to validate, size, orientation, metadata) per format, in files/s: the
    /// camera folder's files, and small sets of PNG, GIF, WebP and AVIF made by libvips.
    private func inspection(of cameraFiles: [URL]) throws -> [Figure] {
        let directory = cameraFiles[0].deletingLastPathComponent().appendingPathComponent("formats")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var sets: [(MediaFormat, String, [URL])] = []
        let jpegs = cameraFiles.filter { $0.pathExtension == "JPG" }.prefix(100)
        sets.append(
            (.jpeg, "4000×3000 q90 with EXIF, structure checked (header, tables, first rows, entropy-coded data walked)", Array(jpegs)))
        sets.append((.heic, "4032×3024", cameraFiles.filter { $0.pathExtension == "HEIC" }))
        sets.append((.mp4, "1920×1080 H.264, 10 s; first frame decoded", cameraFiles.filter { $0.pathExtension == "MP4" }))
        let scene = RGBImage.scene(width: 1920, height: 1080, seed: 11)
        for (format, name) in [(MediaFormat.png, "png"), (.gif, "gif"), (.webp, "webp"), (.avif, "avif")] {
            let bytes = try StillEncoder.encode([scene], as: name)
            let urls = try (0..<(format == .avif ? 4 : 20)).map { index in
                let url = directory.appendingPathComponent("\(index).\(name)")
                try Data(bytes).write(to: url)
                return url
            }
            sets.append((format, "1920×1080", urls))
        }
        return try sets.map { format, description, urls in
            var rates: [Double] = []
            for _ in 0..<repetitions {
                let elapsed = try seconds {
                    for url in urls {
                        let info = try MediaInspector.inspect(fileAt: url)
                        guard info.format == format else { throw BenchmarkError("\(url.lastPathComponent) inspected as \(info.format)") }
                    }
                }
                rates.append(Double(urls.count) / elapsed)
            }
            return Figure(
                name: "media.inspect.\(format.rawValue)", value: median(rates), unit: "files/s", baseline: nil, higherIsBetter: true,
                target: nil, note: "\(urls.count) files, \(description): MediaInspector.inspect(fileAt:), one thread")
        }
    }

    /// Seconds `importAssets(fromFilesAt:options:)` of `files` into `library` takes, in one change
    /// block, checked to have made one asset per file.
    private func timeImport(_ files: [URL], into library: PhotoLibrary, options: AssetImportOptions) throws -> Double {
        let elapsed = try seconds {
            let results = try library.performChangesAndWait { changes in try changes.importAssets(fromFilesAt: files, options: options) }
            for (file, result) in zip(files, results) where result.placeholderForCreatedAsset == nil {
                throw BenchmarkError("\(file.lastPathComponent) was not imported: \(result)")
            }
        }
        guard try library.fetchAssets().count == files.count else { throw BenchmarkError("the batch import lost assets") }
        return elapsed
    }

    /// Seconds the image manager takes to cache the common renditions of every asset of
    /// `library` (what `photoledger import` makes in the background).
    private func timeBackgroundThumbnails(of library: PhotoLibrary) throws -> Double {
        let assets = try library.fetchAssets().allObjects
        let manager = library.imageManager
        return try seconds {
            for (side, mode) in [(256.0, ImageContentMode.aspectFit), (256, .aspectFill), (1024, .aspectFit)] {
                manager.startCachingImages(for: assets, targetSize: CGSize(width: side, height: side), contentMode: mode)
            }
            manager.waitForCaching()
            let progress = manager.cachingProgress
            guard progress.failed == 0 else { throw BenchmarkError("\(progress.failed) renditions could not be made") }
        }
    }

    /// 256-pixel thumbnails of the camera folder's JPEGs: the image manager's (every request at
    /// once, answered on every core; none cached before) beside `vipsthumbnail` on the same files
    /// (one process, as it is usually run, and two at once), each writing JPEGs of quality 85
    /// without metadata; then a cached request's latency.
    private func thumbnailFigures(_ library: PhotoLibrary, folder: URL, in directory: URL) throws -> [Figure] {
        let assets = try library.fetchAssets().allObjects
        let sources = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "JPG" }.sorted { $0.path < $1.path }
        let photos = try assets.filter { asset in try library.resources(for: asset).first?.uniformTypeIdentifier == "public.jpeg" }
        guard photos.count == sources.count else { throw BenchmarkError("\(photos.count) JPEG assets for \(sources.count) JPEG files") }
        let output = directory.appendingPathComponent("vipsthumbnail")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }
        let template = output.path + "/%s.jpg[Q=\(Thumbnailer.quality),strip]"
        let vipsOne = try seconds { try run("/usr/bin/vipsthumbnail", ["-s", "256", "-o", template] + sources.map(\.path)) }
        let halves = [Array(sources.prefix(sources.count / 2)), Array(sources.dropFirst(sources.count / 2))]
        let vipsTwo = try seconds { try runConcurrently(halves.map { ["-s", "256", "-o", template] + $0.map(\.path) }) }
        let manager = library.imageManager
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        let ours = try seconds {
            for asset in photos {
                done.enter()
                manager.requestImage(
                    for: asset, targetSize: CGSize(width: 256, height: 256), contentMode: .aspectFit,
                    options: ImageRequestOptions(deliveryMode: .highQualityFormat)
                ) { result in
                    if case .failure(let error) = result { failures.withLock { $0.append("\(error)") } }
                    done.leave()
                }
            }
            done.wait()
            if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
        }
        var latencies: [Double] = []
        for asset in photos.prefix(200) {
            let semaphore = DispatchSemaphore(value: 0)
            let elapsed = seconds {
                manager.requestImage(for: asset, targetSize: CGSize(width: 256, height: 256), contentMode: .aspectFit) { _ in
                    semaphore.signal()
                }
                semaphore.wait()
            }
            latencies.append(elapsed * 1000)
        }
        let count = Double(photos.count)
        return [
            Figure(
                name: "media.thumbnail", value: count / ours, unit: "files/s", baseline: count / vipsOne, higherIsBetter: true, target: 0.8,
                note:
                    "\(photos.count) JPEGs 4000×3000 to 256 px: imageManager.requestImage, all at once (hash checked, shrink-on-load, cached); baseline: vipsthumbnail -s 256 on the same files, one process"
            ),
            Figure(
                name: "media.thumbnail.two-processes", value: count / ours, unit: "files/s", baseline: count / vipsTwo,
                higherIsBetter: true,
                target: nil, note: "the same; baseline: two vipsthumbnail processes at once, half of the files each"),
            Figure(
                name: "media.thumbnail.cached", value: median(latencies), unit: "ms", baseline: nil, higherIsBetter: false, target: nil,
                note: "one request answered from the cache, p50 (read, checked, delivered on the request's queue)"),
        ]
    }

    /// Runs `vipsthumbnail` once per argument list, all at once, and waits for them.
    private func runConcurrently(_ argumentLists: [[String]]) throws {
        let processes = try argumentLists.map { arguments -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/vipsthumbnail")
            process.arguments = arguments
            try process.run()
            return process
        }
        for process in processes {
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchmarkError("vipsthumbnail exited with status \(process.terminationStatus)")
            }
        }
    }

    /// Processor seconds (user and system) this process has used.
    private func processorSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// `cp -r` of `source` to `destination` (MB/s), and the same copy followed by `sync -f` (a copy
    /// as durable as the store's). The page cache is flushed before, and the copy removed after.
    func timeCopy(of source: URL, to destination: URL, megabytes: Double) throws -> (plain: Double, durable: Double) {
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

    func library(at url: URL) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        return try PhotoLibrary(url: url, device: "bench-device", options: options)
    }

    /// Removes a library file, its SQLite companions and its resource directory.
    private func removeLibrary(_ library: PhotoLibrary) throws {
        let base = library.url.deletingPathExtension()
        for suffix in ["sqlite", "sqlite-wal", "sqlite-shm", "resources", "renditions"] {
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

    /// A camera's folder made by the real encoders: `photoCount` distinct JPEGs of 4000×3000 at
    /// quality 90 with EXIF (date, GPS; every other one with orientation 6), each a noisy scene
    /// with a block of its own so that no two are alike; `heicCount` HEICs of 4032×3024;
    /// `movieCount` MP4s of 10 s at 1920×1080 made by ffmpeg. Encoded on every core.
    func makeCameraFolder(in directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = SeededRandomNumberGenerator(seed: 7)
        var base = RGBImage.scene(width: 4000, height: 3000, seed: 100)
        for pixel in base.pixels.indices {
            base.pixels[pixel] = UInt8(clamping: Int(base.pixels[pixel]) + Int.random(in: -12...12, using: &random))
        }
        let picture = base
        let failures = Mutex<[String]>([])
        let urls = (0..<photoCount).map { directory.appendingPathComponent(String(format: "IMG_%04d.JPG", $0)) }
        DispatchQueue.concurrentPerform(iterations: photoCount) { index in
            var image = picture
            for y in 0..<32 {
                for x in 0..<32 { image[(index * 37) % 3968 + x, (index * 53) % 2968 + y] = (UInt8(index % 251), 40, UInt8(index / 251)) }
            }
            let bytes = JPEGEncoder(quality: 90).encode(
                image, creationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 60),
                location: Location(latitude: 45 + Double(index) / 1000, longitude: 7 - Double(index) / 1000, altitude: 300),
                orientation: index % 2 == 1 ? 6 : nil)
            do { try Data(bytes).write(to: urls[index]) } catch { failures.withLock { $0.append("\(error)") } }
        }
        if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
        var files = urls
        for index in 0..<heicCount {
            let scene = RGBImage.scene(width: 4032, height: 3024, seed: UInt64(200 + index))
            let url = directory.appendingPathComponent(String(format: "IMG_%04d.HEIC", 5000 + index))
            try Data(try StillEncoder.encode([scene], as: "heic", options: .init(quality: 80))).write(to: url)
            files.append(url)
        }
        for index in 0..<movieCount {
            let url = directory.appendingPathComponent(String(format: "IMG_%04d.MP4", 6000 + index))
            let movie = try SyntheticMedia.movie(
                width: 1920, height: 1080, duration: 10, seed: UInt64(index), arguments: ["-preset", "veryfast", "-b:v", "8M"])
            try Data(movie).write(to: url)
            files.append(url)
        }
        return files
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
