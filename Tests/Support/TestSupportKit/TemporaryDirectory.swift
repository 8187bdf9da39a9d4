import Foundation

/// A fresh directory under the system's temporary directory for one test, removed when the
/// value is released (or earlier, with ``remove()``).
public final class TemporaryDirectory: @unchecked Sendable {
    // Safe to share: `url` is immutable after init.
    /// The directory.
    public let url: URL

    /// Creates the directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("photoledger-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { remove() }

    /// A URL inside the directory.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// A path inside the directory.
    public func path(_ name: String) -> String { file(name).path }

    /// Writes `bytes` to a file named `name` and returns its URL.
    @discardableResult
    public func write(_ bytes: [UInt8], to name: String) throws -> URL {
        let target = file(name)
        try Data(bytes).write(to: target)
        return target
    }

    /// The names of the files now in the directory, hidden ones included, sorted.
    public func contents() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: url.path).sorted() }

    /// Removes the directory and everything in it.
    public func remove() { try? FileManager.default.removeItem(at: url) }
}
