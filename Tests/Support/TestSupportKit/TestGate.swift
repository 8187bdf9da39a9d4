import Foundation

/// A group of tests that needs programs from outside the package's build (a headless browser,
/// the C, C++, Lua and Python toolchains) and takes long: it runs in CI (`CI=true`), in a full
/// run (`PHOTOLEDGER_FULL_TESTS=1`), or when its own switch is set to 1; otherwise its tests are
/// skipped and say why, so that the default local run stays short.
public struct TestGate: Sendable {
    /// The environment variable that asks for the group alone.
    public let variable: String
    /// What the group tests, as the skip message names it.
    public let subject: String

    /// The web view's tests in a headless Chromium (chromedriver).
    public static let browser = TestGate(variable: "PHOTOLEDGER_BROWSER_TESTS", subject: "the web view's tests in a headless Chromium")

    /// The C and C++ programs, Lua and Python scripts that use libphotoledger.
    public static let hostLanguages = TestGate(
        variable: "PHOTOLEDGER_HOST_LANGUAGE_TESTS", subject: "the C, C++, Lua and Python programs over libphotoledger")

    /// Whether the group runs.
    public var isOpen: Bool { TestIntensity.isFull || ProcessInfo.processInfo.environment[variable] == "1" }

    /// Why the group was skipped, and how to run it.
    public var skipReason: String { "\(subject) run only when CI=true, PHOTOLEDGER_FULL_TESTS=1 or \(variable)=1" }
}
