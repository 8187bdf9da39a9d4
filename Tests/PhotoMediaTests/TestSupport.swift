import Foundation
import LedgerCore
import PhotoMedia

/// A temporary directory for one test, removed when the value is released.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("photomedia-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A URL inside the directory.
    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Writes `bytes` to a file named `name` and returns its URL.
    @discardableResult
    func write(_ bytes: [UInt8], to name: String) throws -> URL {
        let url = file(name)
        try Data(bytes).write(to: url)
        return url
    }
}

/// Small generated files of every format, with the size each should report.
enum Samples {
    static let creationDate = Date(timeIntervalSince1970: 1_764_483_790)
    static let location = Location(latitude: -33.856784, longitude: 151.215297, altitude: 42.5)

    /// One small file of every supported format.
    static func all() -> [(format: MediaFormat, bytes: [UInt8], width: Int, height: Int)] {
        MediaFormat.allCases.map { format in (format, SyntheticMedia.sample(format, width: 37, height: 21, seed: 9), 37, 21) }
    }

    /// The error `body` throws, when it is a `MediaError`.
    static func mediaError(_ body: () throws -> Void) -> MediaError? {
        do {
            try body()
            return nil
        } catch let error as MediaError {
            return error
        } catch {
            return MediaError(.fileSystem, resource: "unexpected", reason: "\(error)")
        }
    }
}
