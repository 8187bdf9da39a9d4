import Foundation

/// How much of the randomized and exhaustive testing to run: a few dozen cases by default, so the
/// local suite stays short, and the full amounts in CI (`CI=true`) or when asked
/// (`PHOTOLEDGER_FULL_TESTS=1`). Every count is seeded, so a failing case reproduces with the
/// same count.
public enum TestIntensity {
    /// Whether the full amounts are asked for.
    public static var isFull: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["CI"] == "true" || environment["PHOTOLEDGER_FULL_TESTS"] == "1"
    }

    /// `full` in a full run, `local` otherwise; an integer in the environment variable `variable`
    /// (when given and set) wins over both.
    public static func count(local: Int, full: Int, variable: String? = nil) -> Int {
        if let variable, let value = ProcessInfo.processInfo.environment[variable].flatMap(Int.init) { return value }
        return isFull ? full : local
    }
}
