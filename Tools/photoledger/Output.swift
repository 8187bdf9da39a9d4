import Foundation
@preconcurrency import Glibc
import PhotoLedger
import PhotoLedgerJSON

/// The text renderings of assets and albums (their JSON shapes are PhotoLedgerJSON's, shared with
/// the C API).
extension Listing {
    /// One line of the text listing of assets.
    static func line(_ asset: Asset, sha256: String?) -> String {
        var flags: [String] = []
        if asset.isFavorite { flags.append("favorite") }
        if asset.isHidden { flags.append("hidden") }
        if asset.isDeleted { flags.append("deleted") }
        return [
            asset.localIdentifier, asset.mediaType.description.padding(5), "\(asset.pixelWidth)x\(asset.pixelHeight)".padding(9),
            (asset.creationDate.map(isoDate) ?? "-").padding(20), String((sha256 ?? "-").prefix(12)).padding(12),
            flags.joined(separator: ","),
        ].joined(separator: "  ").trimmingTrailingSpaces()
    }

    /// An album's members, one line each, numbered as the album commands count them: the assets
    /// that are not hidden from 0 in album order; a hidden one marked, with '-' for an index.
    static func indexedMembers(_ assets: [Asset]) -> [String] {
        let width = String(max(assets.count - 1, 0)).count
        var next = 0
        return assets.map { asset in
            var label = "-"
            if !asset.isHidden {
                label = String(next)
                next += 1
            }
            let padding = String(repeating: " ", count: width - label.count)
            return padding + label + "  " + asset.localIdentifier + (asset.isHidden ? "  hidden" : "")
        }
    }

    /// A short form of an identifier for tables: the first 8 characters of the UUID.
    static func short(_ identifier: String) -> String { String(identifier.prefix(8)) }
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }

    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

/// "1 photo", "3 photos".
func count(_ value: Int, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }

/// A byte count for people: 512 B, 1.5 MB.
func formatBytes(_ bytes: Int64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1000, unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}

/// A duration for people: 42s, 3m05s.
func formatDuration(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "--" }
    let total = Int(seconds.rounded())
    return total < 60 ? "\(total)s" : String(format: "%dm%02ds", total / 60, total % 60)
}

/// A one-line progress bar redrawn in place on a terminal: count, bytes, rate and time left; or,
/// for a phase counted in things rather than bytes (`noun`), count, rate and time left.
struct ProgressBar {
    let totalCount: Int
    let totalBytes: Int64
    /// What a count-only bar counts ("thumbnails"); nil for files and bytes.
    let noun: String?
    let start = Date()
    private var lastDraw = Date.distantPast

    /// A bar of files and bytes.
    init(totalCount: Int, totalBytes: Int64) {
        self.totalCount = totalCount
        self.totalBytes = totalBytes
        noun = nil
    }

    /// A bar of `totalCount` things named `noun`.
    init(totalCount: Int, noun: String) {
        self.totalCount = totalCount
        totalBytes = 0
        self.noun = noun
    }

    /// Whether standard output is a terminal.
    static var isTerminal: Bool { isatty(1) == 1 }

    /// Redraws the bar (at most ten times a second unless `force`).
    mutating func update(count: Int, bytes: Int64 = 0, force: Bool = false) {
        let now = Date()
        guard force || now.timeIntervalSince(lastDraw) >= 0.1 else { return }
        lastDraw = now
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let width = 24
        let line: String
        if let noun {
            let rate = Double(count) / elapsed
            let remaining = rate > 0 ? Double(totalCount - count) / rate : .infinity
            let fraction = Double(count) / Double(max(totalCount, 1))
            line =
                "\(Self.bar(fraction, width: width)) \(count)/\(totalCount) \(noun)  \(String(format: "%.1f", rate))/s  ETA \(formatDuration(remaining))"
        } else {
            let rate = Double(bytes) / elapsed
            let remaining = rate > 0 ? Double(totalBytes - bytes) / rate : .infinity
            let fraction = totalBytes > 0 ? Double(bytes) / Double(totalBytes) : Double(count) / Double(max(totalCount, 1))
            line =
                "\(Self.bar(fraction, width: width)) \(count)/\(totalCount) files  \(formatBytes(bytes))/\(formatBytes(totalBytes))  \(formatBytes(Int64(rate)))/s  ETA \(formatDuration(remaining))"
        }
        FileHandle.standardOutput.write(Data(("\r" + line + "\u{1B}[K").utf8))
    }

    private static func bar(_ fraction: Double, width: Int) -> String {
        let filled = max(0, min(width, Int(fraction * Double(width))))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
    }

    /// Ends the bar's line.
    func finish() {
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
