import Foundation

/// One measured figure, beside its baseline from the same run.
struct Figure {
    /// A stable name, such as `append.batched`.
    var name: String
    /// The measured value (median of the repetitions).
    var value: Double
    /// The unit of `value` and `baseline`.
    var unit: String
    /// The baseline measured in the same run, when there is one.
    var baseline: Double?
    /// Whether a larger value is better (rates) or a smaller one (latencies).
    var higherIsBetter: Bool
    /// The target, as a ratio `value / baseline` (rates) or `baseline / value` (latencies), or
    /// an absolute bound in `unit` when there is no baseline.
    var target: Double?
    /// What was measured, in a few words.
    var note: String

    /// value ÷ baseline for rates, baseline ÷ value for latencies: ≥ 1 means at least as good.
    var ratio: Double? {
        guard let baseline, baseline > 0, value > 0 else { return nil }
        return higherIsBetter ? value / baseline : baseline / value
    }

    var meetsTarget: Bool? {
        guard let target else { return nil }
        if let ratio { return ratio >= target }
        return higherIsBetter ? value >= target : value <= target
    }

    var json: String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return String(format: "%.6g", value)
        }
        let met = meetsTarget.map { $0 ? "true" : "false" } ?? "null"
        return "{\"name\":\"\(name)\",\"value\":\(number(value)),\"unit\":\"\(unit)\",\"baseline\":\(number(baseline)),"
            + "\"ratio\":\(number(ratio)),\"target\":\(number(target)),\"meetsTarget\":\(met),\"note\":\"\(note)\"}"
    }
}

/// The median of measurements.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The p-th percentile (0…100) of measurements.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
    return sorted[index]
}

/// Seconds taken by `body`.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let elapsed = try clock.measure(body)
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// A fresh temporary directory, removed by the caller.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("photoledger-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Formats a figure value for the table.
func formatted(_ value: Double?, unit: String) -> String {
    guard let value, value.isFinite else { return "—" }
    if value >= 1_000_000 { return String(format: "%.2fM %@", value / 1_000_000, unit) }
    if value >= 10_000 { return String(format: "%.1fk %@", value / 1000, unit) }
    if value >= 100 { return String(format: "%.0f %@", value, unit) }
    return String(format: "%.3g %@", value, unit)
}

/// Prints figures as an aligned table.
func printTable(_ figures: [Figure]) {
    let header = ["figure", "PhotoLedger", "baseline", "ratio", "target", "ok"]
    var rows = [header]
    for figure in figures {
        let target = figure.target.map { figure.baseline == nil ? formatted($0, unit: figure.unit) : String(format: "≥ %.2f", $0) } ?? "—"
        rows.append([
            figure.name, formatted(figure.value, unit: figure.unit), formatted(figure.baseline, unit: figure.unit),
            figure.ratio.map { String(format: "%.2f", $0) } ?? "—", target,
            figure.meetsTarget.map { $0 ? "yes" : "NO" } ?? "—",
        ])
    }
    let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    for (index, row) in rows.enumerated() {
        print(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
    for figure in figures { print("  \(figure.name): \(figure.note)") }
}

/// Peak resident set size (VmHWM) of a process, in KiB.
func peakResidentKiB(pid: Int32) -> Int { memoryKiB(pid: pid, field: "VmHWM") }

/// Resident set size now (VmRSS) of a process, in KiB.
func residentKiB(pid: Int32) -> Int { memoryKiB(pid: pid, field: "VmRSS") }

/// A memory field of `/proc/<pid>/status`, in KiB.
private func memoryKiB(pid: Int32, field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
    else { return 0 }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
}

/// Runs a built tool and returns its trimmed standard output.
@discardableResult
func runTool(_ tool: URL, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = tool
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchmarkError("\(tool.lastPathComponent) \(arguments.first ?? "") failed") }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
