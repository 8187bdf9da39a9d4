import Foundation
import LedgerCore
import PhotoLedger
import SyncProtocol

/// Where a library syncs: the server's library URL (`http://HOST:PORT/v1/libraries/NAME`) and
/// this device's bearer token for it.
public struct SyncRemote: Sendable, Hashable, CustomStringConvertible {
    /// The server's origin, such as `http://127.0.0.1:8080`.
    public let serverURL: URL
    /// The library's name on the server.
    public let libraryName: String
    /// The device token (never printed in descriptions).
    public let token: String

    /// Parses a library URL such as `http://127.0.0.1:8080/v1/libraries/family`.
    ///
    /// - Throws: ``SyncError/invalidRemote(_:)`` when the URL is not of that form.
    public init(libraryURL: String, token: String) throws {
        guard let components = URLComponents(string: libraryURL), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw SyncError.invalidRemote("'\(libraryURL)' is not an http(s) URL; use http://HOST:PORT/v1/libraries/NAME")
        }
        let parts = components.path.split(separator: "/").map(String.init)
        guard parts.count == 3, parts[0] == "v1", parts[1] == "libraries" else {
            throw SyncError.invalidRemote("'\(libraryURL)' does not name a library; use http://HOST:PORT/v1/libraries/NAME")
        }
        if let problem = LibraryName.problem(with: parts[2]) { throw SyncError.invalidRemote("library name '\(parts[2])': \(problem)") }
        guard !token.isEmpty, !token.contains(where: { $0.isWhitespace }) else {
            throw SyncError.invalidRemote("the device token is empty or contains spaces; paste the token the server's administrator issued")
        }
        var origin = URLComponents()
        origin.scheme = scheme
        origin.host = host
        origin.port = components.port
        self.serverURL = origin.url!
        self.libraryName = parts[2]
        self.token = token
    }

    /// The library URL.
    public var libraryURL: URL { serverURL.appendingPathComponent("v1/libraries/\(libraryName)") }

    public var description: String { libraryURL.absoluteString }

    func url(_ path: String) -> URL { URL(string: serverURL.absoluteString + path)! }

    /// The remote stored in a library, or nil.
    public static func saved(in library: PhotoLibrary) throws -> SyncRemote? {
        guard let (url, token) = try library.replica.state().remote else { return nil }
        return try SyncRemote(libraryURL: url, token: token)
    }

    /// Stores this remote in a library (device-local: never synced). Changing the remote
    /// restarts pulling from the new server's beginning; a library bound to one shared library
    /// cannot sync with another (the first sync says so).
    public func save(in library: PhotoLibrary) throws {
        try library.replica.setRemote(url: libraryURL.absoluteString, token: token)
    }
}
