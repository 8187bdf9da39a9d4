import Foundation
import PhotoLedger
import PhotoLedgerSync

/// Resource transfer figures (`sync.transfer.*`): a camera's folder (the media suite's) imported on
/// device A, uploaded by A's sync through the photoledger-server binary on loopback, downloaded by
/// a new device B's sync; beside `cp -r` + `sync -f` of the same folder, in the same run. Both
/// sides store every file durably (the server's blob directory and B's resource store flush each
/// file), as the copy's `sync -f` does. The events of the 1,000-odd assets are part of the timed
/// syncs; next to the bytes they are a rounding error.
struct TransferBenchmarks {
    let media: MediaBenchmarks

    init(quick: Bool) { media = MediaBenchmarks(quick: quick) }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("camera")
        let files = try media.makeCameraFolder(in: folder)
        let bytes = try files.reduce(0) { $0 + (try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int ?? 0) }
        let megabytes = Double(bytes) / 1_000_000

        let deviceA = try media.library(at: directory.appendingPathComponent("a.sqlite"))
        try deviceA.performChangesAndWait { changes in
            _ = try changes.importAssets(fromFilesAt: files, options: AssetImportOptions(makesThumbnails: false))
        }
        let copy = try media.timeCopy(of: folder, to: directory.appendingPathComponent("cp-camera"), megabytes: megabytes)

        let bench = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let serverTool = bench.deletingLastPathComponent().appendingPathComponent("photoledger-server")
        let db = directory.appendingPathComponent("server.sqlite").path
        _ = try runTool(serverTool, ["admin", "create-library", "bench", "--db", db])
        let tokens = try ["bench-device", "device-b"].map {
            try runTool(serverTool, ["admin", "issue-token", "--db", db, "--library", "bench", "--device", $0, "--scope", "readWrite"])
        }
        let server = Process()
        server.executableURL = serverTool
        server.arguments = ["serve", "--db", db, "--blobs", directory.appendingPathComponent("blobs").path, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        let libraryURL =
            line.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "listening on ", with: "") + "/v1/libraries/bench"

        sync()
        let engineA = SyncEngine(library: deviceA, remote: try SyncRemote(libraryURL: libraryURL, token: tokens[0]))
        let upload = try blockingSeconds { try await engineA.sync() }
        sync()
        let deviceB = try media.library(at: directory.appendingPathComponent("b.sqlite"))
        let engineB = SyncEngine(library: deviceB, remote: try SyncRemote(libraryURL: libraryURL, token: tokens[1]))
        let download = try blockingSeconds {
            let report = try await engineB.sync()
            guard report.downloadedResources == files.count else {
                throw BenchmarkError("device B downloaded \(report.downloadedResources) resources, expected \(files.count)")
            }
        }
        let content = "\(files.count) camera files, \(Int(megabytes)) MB"
        return [
            Figure(
                name: "sync.transfer.upload", value: megabytes / upload, unit: "MB/s", baseline: copy.durable, higherIsBetter: true,
                target: 0.5,
                note:
                    "\(content): device A's sync uploads them to photoledger-server on loopback (4 at a time); baseline: cp -r then sync -f"
            ),
            Figure(
                name: "sync.transfer.download", value: megabytes / download, unit: "MB/s", baseline: copy.durable, higherIsBetter: true,
                target: 0.5,
                note: "the same files downloaded by a new device B's sync (4 at a time), each stored durably; baseline: cp -r then sync -f"),
        ]
    }
}
