import Foundation
import LedgerStore
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
        let sources = directory.appendingPathComponent("sources")
        let files = try makeFiles(in: sources)
        let megabytes = Double(fileCount * fileSize) / 1_000_000

        var ingestRates: [Double] = [], copyRates: [Double] = [], durableCopyRates: [Double] = []
        for round in 0..<repetitions {
            let copy = directory.appendingPathComponent("cp-\(round)")
            sync()
            let copyTime = try seconds { try run("/bin/cp", ["-r", sources.path, copy.path]) }
            let syncTime = try seconds { try run("/bin/sync", ["-f", copy.path]) }  // also keeps cp's flush out of the ingest's time
            copyRates.append(megabytes / copyTime)
            durableCopyRates.append(megabytes / (copyTime + syncTime))
            let store = try ResourceStore(directory: directory.appendingPathComponent("store-\(round)"))
            ingestRates.append(
                megabytes
                    / (try seconds {
                        for result in store.ingest(filesAt: files) where !(try result.get()).isNew {
                            throw BenchmarkError("a file was unexpectedly a duplicate")
                        }
                    }))
            sync()
            try FileManager.default.removeItem(at: copy)
            try FileManager.default.removeItem(at: store.directory)
        }

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
                name: "media.ingest", value: median(ingestRates), unit: "MB/s", baseline: median(copyRates), higherIsBetter: true,
                target: 0.5,
                note:
                    "\(fileCount) files of 1 MB into the resource store, 8 at a time (SHA-256, fsync file, rename, fsync directories); baseline: cp -r of the same files on the same disk, no fsync"
            ),
            Figure(
                name: "media.ingest.durable", value: median(ingestRates), unit: "MB/s", baseline: median(durableCopyRates),
                higherIsBetter: true, target: 0.5, note: "the same ingest; baseline: cp -r then sync -f, a copy as durable as the store's"),
            Figure(
                name: "media.inspect", value: median(inspectRates), unit: "files/s", baseline: nil, higherIsBetter: true, target: 1000,
                note: "\(jpegCount) JPEGs 640×480 with EXIF: format, size, date and GPS from the file (libexif)"),
        ]
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
                location: GeoLocation(latitude: 45 + Double(index) / 1000, longitude: 7 - Double(index) / 1000, altitude: 300))
            let url = directory.appendingPathComponent(String(format: "IMG_%04d.jpg", index))
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
