import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import PhotoLedgerTestSupport
import PhotoLedgerWeb
import SyncTransport
import Synchronization
import TestSupportKit

/// A library with photos and an album, served by a web view on a free loopback port.
final class WebFixture: @unchecked Sendable {
    // Safe to share: every property is set once in init.
    let directory: TemporaryDirectory
    let library: PhotoLibrary
    let server: WebServer
    /// The photos, in import order.
    let photos: [String]
    /// The album "Trip" and its photos in album order (not import order).
    let album: String
    let albumOrder: [String]
    let transport = CurlTransport()

    /// `photoCount` photos of different sizes and dates (the first one with a place); the album
    /// holds the first four in the order 2, 0, 3, 1.
    init(photoCount: Int = 5, configuration: WebServer.Configuration = WebServer.Configuration()) throws {
        directory = try TemporaryDirectory()
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        options.randomSeed = 7
        library = try PhotoLibrary(url: directory.file("library.sqlite"), device: "anna-laptop", options: options)
        let files = (0..<photoCount).map(Self.photoFile)
        let created = try library.performChangesAndWait { changes in
            try files.map { try changes.createAsset(from: $0).placeholderForCreatedAsset.localIdentifier }
        }
        photos = created.map { String($0.prefix(36)) }
        let order = [2, 0, 3, 1].filter { $0 < photoCount }.map { created[$0] }
        let albumIdentifier = try library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Trip")
            try album.addAssets(order)
            return album.localIdentifier
        }
        album = String(albumIdentifier.prefix(36))
        albumOrder = order.map { String($0.prefix(36)) }
        server = try WebServer(library: library, configuration: configuration)
    }

    deinit {
        server.stop()
        directory.remove()
    }

    /// The JPEG file of the photo at `index`, made once a process: every fixture imports the same
    /// files, and making them is long work that would hold a thread of the cooperative pool.
    static func photoFile(_ index: Int) -> Data {
        if let file = photoFiles.withLock({ $0[index] }) { return file }
        let image = RGBImage.scene(width: 640 + 32 * index, height: 480, seed: UInt64(index + 1))
        let date = Date(timeIntervalSince1970: 1_700_000_000).addingTimeInterval(Double(index) * 86_400)
        let place: Location? = index == 0 ? Location(latitude: 38.7139, longitude: -9.1394) : nil
        let file = Data(JPEGEncoder().encode(image, creationDate: date, location: place))
        photoFiles.withLock { $0[index] = file }
        return file
    }

    private static let photoFiles = Mutex<[Int: Data]>([:])

    /// `host:port` of the server (`127.0.0.1:PORT`, or `[::1]:PORT` when it listens on IPv6).
    var host: String { String(server.url.absoluteString.dropFirst("http://".count).dropLast()) }

    /// Imports a 2-second movie (H.264 in MP4) and returns its asset identifier.
    func addVideo() throws -> String {
        let file = directory.file("clip.mp4")
        try Data(try SyntheticMedia.movie(width: 320, height: 240, duration: 2, seed: 9)).write(to: file)
        let created = try library.performChangesAndWait { changes in
            try changes.createAsset(fromVideoAt: file).placeholderForCreatedAsset.localIdentifier
        }
        return String(created.prefix(36))
    }

    /// A request to `path` with the given header fields (the Host header is curl's unless given).
    func send(_ method: HTTPMethod = .get, _ path: String, headers: [(String, String)] = [], json: String? = nil) async throws
        -> HTTPResponse
    {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        if json != nil { fields.add(name: "Content-Type", value: "application/json") }
        let request = HTTPRequest(
            method: method, url: URL(string: "http://\(host)\(path)")!, headers: fields,
            body: json.map { .bytes(Array($0.utf8)) } ?? .empty,
            timeout: TestPatience.limit)
        return try await transport.send(request)
    }

    /// A session: its cookie header and CSRF token, opened with the launch URL.
    func logIn() async throws -> Session {
        let launch = try await send(.get, "/login?" + (server.launchURL.query ?? ""))
        guard launch.status == 303, let cookie = launch.headers["Set-Cookie"]?.split(separator: ";").first.map(String.init) else {
            throw FixtureError("the launch URL did not open a session: \(launch)")
        }
        let page = try await send(.get, "/", headers: [("Cookie", cookie)])
        let text = String(decoding: page.body.bytes, as: UTF8.self)
        guard let range = text.range(of: "name=\"csrf-token\" content=\"") else {
            throw FixtureError("the page has no CSRF token: \(text)")
        }
        let token = String(text[range.upperBound...].prefix { $0 != "\"" })
        return Session(cookie: cookie, csrfToken: token)
    }

    /// A change sent as the page sends it.
    func change(_ path: String, _ json: String, session: Session) async throws -> HTTPResponse {
        try await send(
            .post, path, headers: [("Cookie", session.cookie), ("X-CSRF-Token", session.csrfToken), ("Origin", "http://\(host)")],
            json: json)
    }

    /// The JSON object of a response body.
    static func object(_ response: HTTPResponse) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(response.body.bytes)) as? [String: Any] else {
            throw FixtureError("the body is not a JSON object: \(response)")
        }
        return object
    }

    /// The `error.code` and `error.message` of an error response.
    static func error(_ response: HTTPResponse) throws -> (code: String, message: String) {
        let error = try object(response)["error"] as? [String: Any]
        return (error?["code"] as? String ?? "", error?["message"] as? String ?? "")
    }

    /// The asset identifiers of the album, in album order, read through the library.
    func albumContents() throws -> [String] {
        let album = try library.fetchAssetCollections(withLocalIdentifiers: [
            LocalIdentifier(uuid: UUID(uuidString: self.album)!, kind: .album).description
        ])
        return try library.fetchAssets(in: album[0]).map { $0.id.uuidString }
    }

    /// The asset `id` as the library has it.
    func asset(_ id: String) throws -> Asset {
        let options = FetchOptions(includeHiddenAssets: true)
        if let asset = try library.fetchAssets(withLocalIdentifiers: ["\(id)/L0/001"], options: options).firstObject { return asset }
        let deleted = try library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted)[0]
        guard let asset = try library.fetchAssets(in: deleted, options: options).first(where: { $0.id.uuidString == id }) else {
            throw FixtureError("the library has no asset \(id)")
        }
        return asset
    }

    struct Session {
        let cookie: String
        let csrfToken: String
    }
}

/// A test fixture that could not be set up.
struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
