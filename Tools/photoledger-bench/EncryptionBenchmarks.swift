import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoLedgerServer
import PhotoLedgerSync
import Synchronization

/// End-to-end encryption's cost: the same work on a plain library and on an encrypted one, in
/// one run, interleaved in ABBA order (plain, encrypted, encrypted, plain, …; the median of
/// each), through an in-process server on loopback. The notes give the load average before and
/// after (the machine may be shared). Each figure's value is the encrypted rate, its baseline the
/// plain rate; the target is a ratio of at least 0.85 (at most 15 % slower).
///
/// - `e2e.push`: device A pushes asset creations (each asset with its own key, whose wrapped
///   copy goes to the server's key store).
/// - `e2e.pull`: a fresh device B (enrolled beforehand in the encrypted case) pulls and folds
///   them, taking the asset keys from the key store and opening every payload.
/// - `e2e.import`: photos imported into a library (files copied, hashed, decoded; events sealed).
/// - `e2e.upload`: those photos synced to the server (resources encrypted in chunks, then
///   uploaded, and their events pushed).
struct EncryptionBenchmarks {
    let quick: Bool
    /// Which half of the suite runs.
    let parts: Parts

    /// The halves of the suite, which run apart (`--only e2e.push` runs the first alone).
    enum Parts {
        /// `e2e.push` and `e2e.pull`.
        case sync
        /// `e2e.import` and `e2e.upload`.
        case photos
    }

    func run() throws -> [Figure] {
        let events = quick ? 5_000 : 50_000
        let photos = quick ? 40 : 200
        let repetitions = quick ? 2 : 4
        var push: [Bool: [Double]] = [:], pull: [Bool: [Double]] = [:], imports: [Bool: [Double]] = [:], uploads: [Bool: [Double]] = [:]
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = parts == .photos ? try Self.photoFiles(photos, in: directory.appendingPathComponent("photos")) : []
        let loadBefore = Self.loadAverage()
        for repetition in 0..<repetitions {
            for encrypted in repetition % 2 == 0 ? [false, true] : [true, false] {
                let run = directory.appendingPathComponent("run-\(repetition)-\(encrypted)")
                try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
                switch parts {
                case .sync:
                    let (pushRate, pullRate) = try measureSync(
                        events: events, encrypted: encrypted, in: run.appendingPathComponent("events"))
                    push[encrypted, default: []].append(pushRate)
                    pull[encrypted, default: []].append(pullRate)
                case .photos:
                    let (importRate, uploadRate) = try measurePhotos(files, encrypted: encrypted, in: run.appendingPathComponent("photos"))
                    imports[encrypted, default: []].append(importRate)
                    uploads[encrypted, default: []].append(uploadRate)
                }
                try? FileManager.default.removeItem(at: run)
            }
        }
        let load = "load average \(loadBefore) before, \(Self.loadAverage()) after"
        func figure(_ name: String, _ values: [Bool: [Double]], unit: String, note: String) -> Figure {
            Figure(
                name: name, value: median(values[true] ?? []), unit: unit, baseline: median(values[false] ?? []), higherIsBetter: true,
                target: 0.85,
                note: note
                    + " (encrypted; baseline: the same on a plain library, interleaved ABBA, median of \(repetitions); \(load))")
        }
        switch parts {
        case .sync:
            return [
                figure("e2e.push.\(events / 1000)k", push, unit: "events/s", note: "device A pushes \(events) asset creations"),
                figure("e2e.pull.\(events / 1000)k", pull, unit: "events/s", note: "fresh device B pulls and folds \(events) events"),
            ]
        case .photos:
            return [
                figure("e2e.import.\(photos)", imports, unit: "photos/s", note: "\(photos) JPEGs imported in one change block"),
                figure("e2e.upload.\(photos)", uploads, unit: "photos/s", note: "\(photos) JPEGs uploaded and their events pushed"),
            ]
        }
    }

    /// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them ("?" elsewhere).
    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// `count` distinct JPEGs with EXIF and GPS, about a camera thumbnail's size.
    static func photoFiles(_ count: Int, in directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JPEGEncoder()
        return try (0..<count).map { index in
            let url = directory.appendingPathComponent("photo-\(index).jpg")
            let bytes = encoder.encode(
                RGBImage.scene(width: 640, height: 480, seed: UInt64(index + 1)), creationDate: Date(timeIntervalSince1970: 1_600_000_000),
                location: Location(latitude: 48.85, longitude: 2.35))
            try Data(bytes).write(to: url)
            return url
        }
    }

    /// A server on loopback with library `bench` and readWrite tokens for two devices.
    func server(in directory: URL) throws -> (SyncServer, [String]) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try SQLiteServerStore(path: directory.appendingPathComponent("server.sqlite").path)
        try store.createLibrary(named: "bench", uuid: nil, at: 1)
        var configuration = SyncServer.Configuration(store: store, blobDirectory: directory.appendingPathComponent("blobs").path)
        configuration.logger = DiscardingLogger()
        configuration.threadCount = 4
        let server = try SyncServer(configuration: configuration)
        try server.start()
        let tokens = try ["device-a", "device-b"].map { device in
            let token = try DeviceToken.generate()
            try store.registerToken(hash: DeviceToken.hash(token), library: "bench", device: DeviceID(device), scope: .readWrite, at: 1)
            return token
        }
        return (server, tokens)
    }

    func library(_ name: String, device: DeviceID, in directory: URL) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        return try PhotoLibrary(url: directory.appendingPathComponent("\(name).sqlite"), device: device, options: options)
    }

    func measureSync(events: Int, encrypted: Bool, in directory: URL) throws -> (push: Double, pull: Double) {
        let (server, tokens) = try server(in: directory)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/v1/libraries/bench"
        let deviceA = try library("a", device: "device-a", in: directory)
        if encrypted { _ = try deviceA.enableEncryption() }
        var made = 0
        while made < events {
            let count = min(1000, events - made)
            try deviceA.performChangesAndWait { changes in
                for _ in 0..<count { _ = try changes.createImageRecord(width: 4032, height: 3024, creationDate: nil) }
            }
            made += count
        }
        let engineA = SyncEngine(library: deviceA, remote: try SyncRemote(libraryURL: url, token: tokens[0]))
        let pushSeconds = try blockingSeconds { try await engineA.sync() }
        let deviceB = try library("b", device: "device-b", in: directory)
        let engineB = SyncEngine(library: deviceB, remote: try SyncRemote(libraryURL: url, token: tokens[1]))
        if encrypted {
            // Enrolled before the measured pull: the pull is what every later device pays.
            let publicKey = try deviceB.prepareEnrolment()
            try deviceA.approveEnrolment(of: "device-b", publicKey: publicKey)
            _ = try blockingSeconds { try await engineA.sync() }
        }
        let counted = Mutex(0)
        let pullSeconds = try blockingSeconds {
            let pulled = try await engineB.sync().pulledEvents
            counted.withLock { $0 = pulled }
            deviceB.waitForBackgroundCheckpoints()
        }
        let pulled = counted.withLock { $0 }
        guard pulled == events, try deviceB.statistics().assets == events else {
            throw BenchmarkError("device B pulled \(pulled) events and shows \(try deviceB.statistics().assets) assets, expected \(events)")
        }
        return (Double(events) / pushSeconds, Double(events) / pullSeconds)
    }

    func measurePhotos(_ files: [URL], encrypted: Bool, in directory: URL) throws -> (import: Double, upload: Double) {
        let (server, tokens) = try server(in: directory)
        defer { server.stop() }
        let deviceA = try library("a", device: "device-a", in: directory)
        if encrypted { _ = try deviceA.enableEncryption() }
        let importSeconds = try seconds {
            try deviceA.performChangesAndWait { changes in
                let results = try changes.importAssets(fromFilesAt: files)
                guard results.allSatisfy({ if case .created = $0 { true } else { false } }) else {
                    throw BenchmarkError("an import of the benchmark's photos failed")
                }
            }
        }
        let engine = SyncEngine(
            library: deviceA, remote: try SyncRemote(libraryURL: "http://127.0.0.1:\(server.port)/v1/libraries/bench", token: tokens[0]))
        let counted = Mutex(0)
        let uploadSeconds = try blockingSeconds {
            let uploaded = try await engine.sync().uploadedResources
            counted.withLock { $0 = uploaded }
        }
        let uploaded = counted.withLock { $0 }
        guard uploaded == files.count else { throw BenchmarkError("\(uploaded) photos were uploaded, expected \(files.count)") }
        return (Double(files.count) / importSeconds, Double(files.count) / uploadSeconds)
    }
}
