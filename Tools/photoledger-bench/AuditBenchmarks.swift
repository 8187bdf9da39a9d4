import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoMedia

/// Audit figures: the persistent changes after a token over a long log, and the history of one
/// object in a large log (read through the object index, so its cost follows the object's own
/// events, not the log's length).
struct AuditBenchmarks {
    let changesCount: Int
    let historyLogCount: Int
    let repetitions: Int

    init(quick: Bool) {
        changesCount = quick ? 20_000 : 100_000
        historyLogCount = quick ? 100_000 : 1_000_000
        repetitions = quick ? 1 : 3
    }

    /// A library with `count` events: 200 assets from image data, an album of 50 of them, then
    /// favorite changes in blocks of 1000 spread over the assets. The first asset is written once
    /// every 20 blocks. Returns the library, the token of the empty library, and the first asset.
    static func makeLibrary(at url: URL, events count: Int) throws -> (PhotoLibrary, origin: PersistentChangeToken, target: String) {
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.randomSeed = 42
        let library = try PhotoLibrary(url: url, device: "bench-device", options: options)
        let origin = try library.currentChangeToken
        let assets = try library.performChangesAndWait { changes in
            try (0..<200).map { index in
                let data = Data(SyntheticMedia.sample(.png, width: 8, height: 8, seed: UInt64(index)))
                return try changes.createAsset(from: data).placeholderForCreatedAsset.localIdentifier
            }
        }
        try library.performChangesAndWait { changes in
            try changes.createAlbum(title: "Bench").addAssets(Array(assets.prefix(50)))
        }
        var written = 202
        var block = 0
        while written < count {
            let size = min(1000, count - written)
            let touchTarget = block % 20 == 0
            try library.performChangesAndWait { changes in
                for index in 0..<size {
                    let asset = touchTarget && index == 0 ? assets[0] : assets[1 + (block * 7 + index) % (assets.count - 1)]
                    try changes.assetChangeRequest(for: asset).setFavorite((block + index) % 2 == 0)
                }
            }
            written += size
            block += 1
        }
        return (library, origin, assets[0])
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        let (changesLibrary, origin, _) = try Self.makeLibrary(at: directory.appendingPathComponent("changes.sqlite"), events: changesCount)
        var changeTimes: [Double] = []
        var changeCount = 0
        for _ in 0..<repetitions {
            changeTimes.append(try seconds { changeCount = try changesLibrary.fetchPersistentChanges(since: origin).count })
        }
        let changeSeconds = median(changeTimes)

        let (historyLibrary, _, target) = try Self.makeLibrary(
            at: directory.appendingPathComponent("history.sqlite"), events: historyLogCount)
        var historyTimes: [Double] = []
        var entries = 0
        for _ in 0..<(repetitions * 10) {
            historyTimes.append(try seconds { entries = try historyLibrary.history(of: target, limit: 1000).entries.count } * 1000)
        }
        return [
            Figure(
                name: "audit.persistentChanges", value: Double(changesCount) / changeSeconds, unit: "events/s", baseline: nil,
                higherIsBetter: true, target: nil,
                note: String(
                    format: "fetchPersistentChanges over %d events (%d changes) in %.1f ms", changesCount, changeCount, changeSeconds * 1000
                )),
            Figure(
                name: "audit.history", value: median(historyTimes), unit: "ms", baseline: nil, higherIsBetter: false, target: 50,
                note: "history of one asset (\(entries) entries) in a \(historyLogCount)-event log, p50; read through events_by_object"),
        ]
    }

}
