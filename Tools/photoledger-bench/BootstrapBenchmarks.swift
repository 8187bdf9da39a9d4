import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerServer
import PhotoLedgerSync
import SyncProtocol

/// A new device's start from a snapshot against a full replay of the same history: a library of
/// 1,000,000 events (50,000 live assets in 200 albums, the rest favorite and hidden toggles;
/// quick: 100,000 events, 5,000 assets, 20 albums) on the photoledger-server binary on
/// loopback, a snapshot uploaded by device A at the head, then 1,000 more events. Device B
/// starts from the snapshot (usable when its sync returns: the snapshot installed and the tail
/// pulled), device C replays everything; B then fetches the history and verifies the snapshot.
struct BootstrapBenchmarks {
    let quick: Bool

    func run() throws -> [Figure] {
        let (events, assets, albums) = quick ? (50_000, 2_500, 10) : (1_000_000, 50_000, 200)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bench = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let serverTool = bench.deletingLastPathComponent().appendingPathComponent("photoledger-server")
        guard FileManager.default.isExecutableFile(atPath: serverTool.path) else {
            throw BenchmarkError("photoledger-server is not built next to the benchmark; run `swift build -c release` first")
        }
        let db = directory.appendingPathComponent("server.sqlite").path
        var tokens: [String: String] = [:]
        let deviceA = try library(directory, "device-a")
        try {
            // The history is made and stored without HTTP: only the new devices are measured.
            let store = try SQLiteServerStore(path: db)
            try store.createLibrary(named: "bench", uuid: nil, at: WallClock.milliseconds())
            for device in ["device-a", "device-b", "device-c"] {
                let token = try DeviceToken.generate()
                try store.registerToken(
                    hash: DeviceToken.hash(token), library: "bench", device: DeviceID(device), scope: .readWrite,
                    at: WallClock.milliseconds())
                tokens[device] = token
            }
            let credential = try store.authenticate(tokenHash: DeviceToken.hash(tokens["device-a"]!))!
            try deviceA.replica.bind(to: credential.libraryUUID, scope: .readWrite)
            try makeHistory(on: deviceA, events: events, assets: assets, albums: albums)
            try storeHistory(of: deviceA, in: store, credential: credential)
        }()
        let server = try ServerProcess(tool: serverTool, db: db, blobs: directory.appendingPathComponent("blobs").path)
        let libraryURL = "\(server.origin)/v1/libraries/bench"
        func engine(_ library: PhotoLibrary, _ device: String, snapshots: Bool = false) throws -> SyncEngine {
            var options = SyncEngine.Options()
            options.bootstrapFromSnapshot = snapshots
            options.historyPagesPerSync = 0
            return SyncEngine(library: library, remote: try SyncRemote(libraryURL: libraryURL, token: tokens[device]!), options: options)
        }
        let engineA = try engine(deviceA, "device-a")
        nonisolated(unsafe) var upload: SnapshotUpload?
        let snapshotSeconds = try blockingSeconds { upload = try await engineA.uploadSnapshot() }
        // The library moves on after the snapshot.
        let tail = try deviceA.fetchAssets().allObjects.prefix(1000)
        try deviceA.performChangesAndWait { changes in
            for asset in tail { try changes.assetChangeRequest(for: asset).setHidden(true) }
        }
        _ = try blockingSeconds { _ = try await engineA.sync() }

        let deviceB = try library(directory, "device-b")
        let engineB = try engine(deviceB, "device-b", snapshots: true)
        nonisolated(unsafe) var report = SyncReport()
        let usable = try blockingSeconds {
            report = try await engineB.sync()
            deviceB.waitForBackgroundCheckpoints()
        }
        guard report.snapshot?.position == upload?.record.position else {
            throw BenchmarkError("device B did not start from the snapshot: \(String(describing: report.snapshot))")
        }
        let deviceC = try library(directory, "device-c")
        let engineC = try engine(deviceC, "device-c")
        let replay = try blockingSeconds {
            _ = try await engineC.sync()
            deviceC.waitForBackgroundCheckpoints()
        }
        let counts = try [deviceA, deviceB, deviceC].map { try $0.fetchAssets(options: FetchOptions(includeHiddenAssets: true)).count }
        guard Set(counts).count == 1, counts[0] == assets else {
            throw BenchmarkError("the devices disagree after syncing: \(counts) assets, expected \(assets)")
        }
        nonisolated(unsafe) var status: SnapshotBootstrapStatus?
        let verify = try blockingSeconds { status = try await engineB.fetchHistory() }
        guard let status, status.isVerified, status.differences.isEmpty else {
            throw BenchmarkError("the snapshot did not verify: \(String(describing: status))")
        }
        let label = "\(events / 1000)k"
        let size = Double(upload?.record.size ?? 0) / 1_048_576
        return [
            Figure(
                name: "bootstrap.usable.\(label)", value: usable, unit: "s", baseline: replay, higherIsBetter: false, target: 5,
                note:
                    "new device usable from a snapshot (\(String(format: "%.1f", size)) MiB: download, chain check, install) plus a tail of "
                    + "\(report.pulledEvents) events, against a full replay of \(events + 1000) events (baseline), photoledger-server on loopback"
            ),
            Figure(
                name: "bootstrap.usable-seconds.\(label)", value: usable, unit: "s", baseline: nil, higherIsBetter: false, target: 5,
                note: "the same, against the absolute bound of 5 s"),
            Figure(
                name: "bootstrap.verify.\(label)", value: verify, unit: "s", baseline: nil, higherIsBetter: false, target: nil,
                note: "then, in the background: the \(events) events before the snapshot fetched in pages, archived, refolded and compared"),
            Figure(
                name: "bootstrap.upload.\(label)", value: snapshotSeconds, unit: "s", baseline: nil, higherIsBetter: false, target: nil,
                note: "device A takes and uploads the snapshot of \(assets) assets in \(albums) albums"),
        ]
    }

    func library(_ directory: URL, _ device: String) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.randomSeed = UInt64(device.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) })
        return try PhotoLibrary(url: directory.appendingPathComponent("\(device).sqlite"), device: DeviceID(device), options: options)
    }

    /// `assets` creations, `albums` albums each with its share of the assets, then favorite and
    /// hidden toggles of random assets until the log holds `events` events.
    func makeHistory(on library: PhotoLibrary, events: Int, assets: Int, albums: Int) throws {
        var ids: [String] = []
        while ids.count < assets {
            let count = min(1000, assets - ids.count)
            ids += try library.performChangesAndWait { changes in
                try (0..<count).map { _ in
                    try changes.createImageRecord(width: 4032, height: 3024, creationDate: nil).placeholderForCreatedAsset.localIdentifier
                }
            }
        }
        let share = assets / albums
        for album in 0..<albums {
            try library.performChangesAndWait { changes in
                let request = try changes.createAlbum(title: "Album \(album)")
                try request.addAssets(Array(ids[(album * share)..<((album + 1) * share)]))
            }
        }
        var random = SeededRandomNumberGenerator(seed: 2_026)
        var made = try library.replica.outboxCount()
        while made < events {
            let count = min(5000, events - made)
            let picked = (0..<count).map { _ in ids[Int.random(in: 0..<ids.count, using: &random)] }
            let flags = (0..<count).map { _ in Int.random(in: 0..<4, using: &random) }
            try library.performChangesAndWait { changes in
                for (index, id) in picked.enumerated() {
                    let request = try changes.assetChangeRequest(for: id)
                    switch flags[index] {
                    case 0: try request.setFavorite(true)
                    case 1: try request.setFavorite(false)
                    case 2: try request.setHidden(true)
                    default: try request.setHidden(false)
                    }
                }
            }
            made = try library.replica.outboxCount()
        }
    }

    /// Stores the library's events in the server store through the push rules, then hands them
    /// back to it as pulled pages (acknowledged, with the server's chain values and cursor).
    func storeHistory(of library: PhotoLibrary, in store: SQLiteServerStore, credential: Credential) throws {
        let rules = PushRules()
        var sent: Int64 = 0
        while true {
            let pending = try library.replica.outbox(after: sent, limit: 5000)
            guard let last = pending.last else { break }
            let batch = pending.map(\.event)
            let response = try store.push(
                batch.map { rules.candidate(for: .valid(WireEvent($0)), credential: credential) }, for: credential,
                receivedAt: WallClock.milliseconds(), rules: rules)
            var stored: [(deviceSequence: Int64, serverSequence: Int64)] = []
            for (event, result) in zip(batch, response.results) {
                guard case .stored(let sequence) = result.status else { throw BenchmarkError("the server store answered \(result.status)") }
                stored.append((event.deviceSequence, sequence))
            }
            try library.replica.acknowledge(stored: stored, rejected: [])
            sent = last.localSequence
        }
        var cursor: Int64 = 0
        var previous = HashChain.origin
        while true {
            let page = try store.events(library: credential.libraryID, after: cursor, limit: 5000)
            guard let last = page.events.last else { break }
            let events = page.events.map {
                SequencedEvent(event: $0.event, serverSequence: $0.serverSequence, serverChainHash: $0.chainHash)
            }
            _ = try library.replica.apply(library.replica.prepare(events, cursor: last.serverSequence, after: previous))
            cursor = last.serverSequence
            previous = last.chainHash
        }
    }
}

/// The photoledger-server binary serving one SQLite store on loopback, stopped on release.
final class ServerProcess {
    let process = Process()
    let origin: String

    init(tool: URL, db: String, blobs: String) throws {
        process.executableURL = tool
        process.arguments = ["serve", "--db", db, "--blobs", blobs, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        origin = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(
            of: "listening on ", with: "")
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
