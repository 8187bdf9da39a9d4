import Dispatch
import Foundation
import LedgerCore
import PhotoLedger
import PhotoLedgerJSON
import PhotoLedgerSync
import SyncProtocol

/// The web view's routes over one library: the page and its script, the JSON the page reads, the
/// images, the live stream, and the changes (each one change block of the library, so it syncs
/// and shows in history like any other). Independent of the HTTP library, so every route answers
/// a ``WebRequest`` with a ``WebResponse``.
final class WebApplication: Sendable {
    let library: PhotoLibrary
    let access: WebAccess
    let feed: LiveChangeFeed
    /// How long a live stream waits before it sends a comment (a closed page is noticed then).
    let keepAlive: DispatchTimeInterval

    init(library: PhotoLibrary, access: WebAccess, feed: LiveChangeFeed, keepAlive: DispatchTimeInterval) {
        self.library = library
        self.access = access
        self.feed = feed
        self.keepAlive = keepAlive
    }

    /// Answers a request; every failure becomes a JSON error (or a login page for a browser).
    func respond(to request: WebRequest) -> WebResponse {
        do {
            return try route(request)
        } catch let error as WebError {
            return error.response
        } catch let error as PhotoLibraryError {
            return Self.webError(error).response
        } catch {
            return WebError(500, "internalError", "the request failed: \(error); see the output of 'photoledger web'").response
        }
    }

    private func route(_ request: WebRequest) throws -> WebResponse {
        try access.checkAddressing(request)
        let segments = request.segments
        switch (request.method, segments) {
        case ("GET", ["login"]): return logInPage(request)
        case ("POST", ["login"]): return logIn(request)
        case ("GET", ["app.js"]):
            return WebResponse(contentType: "text/javascript; charset=utf-8", body: Data(WebPage.script.utf8), headers: Self.staticHeaders)
        case ("GET", ["app.css"]):
            return WebResponse(contentType: "text/css; charset=utf-8", body: Data(WebPage.styles.utf8), headers: Self.staticHeaders)
        default: break
        }
        let session: WebAccess.Session
        switch access.lookUp(request) {
        case .success(let found): session = found
        case .failure(let missing):
            if request.method == "GET", segments.isEmpty { return .redirect(to: missing.absence == .none ? "/login" : "/login?expired=1") }
            throw access.noSessionError(missing.absence)
        }
        if request.method == "POST" {
            try access.checkChange(request, session: session)
            if segments == ["logout"] {
                access.logOut(session)
                return WebResponse(
                    status: 200, contentType: "application/json; charset=utf-8", body: Data(#"{"loggedOut":true}"#.utf8),
                    headers: [("Set-Cookie", access.removingCookie)])
            }
            return try change(request, segments: segments)
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            throw WebError(405, "methodNotAllowed", "\(request.method) is not supported here; the web view takes GET and POST")
        }
        if segments.isEmpty { return .html(WebPage.document(csrfToken: session.csrfToken), headers: Self.pageHeaders) }
        if segments == ["api", "albums"] { return .json(try albums()) }
        if segments == ["api", "status"] { return .json(try status()) }
        if segments == ["api", "quarantine"] { return .json(try quarantine()) }
        if segments == ["api", "events"] {
            return WebResponse(
                status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")],
                body: .eventStream(feed.subscribe()))
        }
        if let id = Self.match(segments, "api", "albums", "*") { return .json(try album(id[0], page: try Self.page(request))) }
        if let id = Self.match(segments, "api", "assets", "*") { return .json(try asset(id[0])) }
        if let id = Self.match(segments, "api", "history", "*") { return .json(try history(id[0])) }
        let size = try request.query["size"].map { text in
            guard let size = Int(text) else { throw WebError.badRequest("size must be a number of pixels from 1 to 4096, not '\(text)'") }
            return size
        }
        if let id = Self.match(segments, "thumb", "*") { return try image(id[0], size: size ?? 256, mode: .aspectFill, request: request) }
        if let id = Self.match(segments, "image", "*") { return try image(id[0], size: size ?? 1024, mode: .aspectFit, request: request) }
        if let id = Self.match(segments, "original", "*") { return try original(id[0], request: request) }
        throw WebError.notFound("the page \(request.path)")
    }

    /// The segments `*` stands for when `segments` match `pattern`, else nil.
    private static func match(_ segments: [String], _ pattern: String...) -> [String]? {
        guard segments.count == pattern.count else { return nil }
        var captures: [String] = []
        for (segment, expected) in zip(segments, pattern) {
            if expected == "*" {
                captures.append(segment)
            } else if segment != expected {
                return nil
            }
        }
        return captures
    }

    // MARK: Logging in

    private func logInPage(_ request: WebRequest) -> WebResponse {
        if request.query["expired"] != nil {
            return .html(
                WebPage.logIn(
                    message: access.hasPassword
                        ? "Your session has ended. Log in again."
                        : "Your session has ended. Open the address 'photoledger web' printed again.",
                    password: access.hasPassword), headers: Self.pageHeaders)
        }
        if let token = request.query["token"] {
            guard let session = access.logIn(launchToken: token) else {
                return .html(
                    WebPage.logIn(
                        message: "This link's token is not the one of this server. Open the address 'photoledger web' printed last.",
                        password: access.hasPassword), status: 403)
            }
            return .redirect(to: "/", headers: [("Set-Cookie", access.cookie(for: session)), ("Referrer-Policy", "no-referrer")])
        }
        return .html(WebPage.logIn(message: nil, password: access.hasPassword), headers: Self.pageHeaders)
    }

    private func logIn(_ request: WebRequest) -> WebResponse {
        let form = Self.formFields(request.body)
        guard access.hasPassword else {
            return .html(
                WebPage.logIn(
                    message: "This server has no password: open the address with the token that 'photoledger web' printed.", password: false
                ), status: 403)
        }
        guard let session = access.logIn(password: form["password"] ?? "") else {
            return .html(WebPage.logIn(message: "Wrong password. Try again.", password: true), status: 403)
        }
        return .redirect(to: "/", headers: [("Set-Cookie", access.cookie(for: session))])
    }

    private static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    // MARK: Reading

    private func albums() throws -> JSON {
        // The library's Hidden smart album is listed as the view's own Hidden page, which shows
        // hidden assets with their controls (unhide); the others as they come.
        let smart = try library.fetchAssetCollections(with: .smartAlbum).allObjects
        var entries: [JSON] = []
        for album in smart {
            entries.append(album.subtype == .smartAlbumAllHidden ? try hiddenSummary() : try albumSummary(album))
        }
        if !smart.contains(where: { $0.subtype == .smartAlbumAllHidden }) { entries.append(try hiddenSummary()) }
        let regular = try library.fetchAssetCollections(with: .album, options: FetchOptions(sortDescriptors: [SortDescriptor(.title)]))
            .allObjects
        return .object([("smartAlbums", .array(entries)), ("albums", .array(try regular.map { try albumSummary($0) }))])
    }

    /// An album's card: its count as the fetch of the albums counted it (what a fetch of its
    /// assets returns), and its first asset, read alone.
    private func albumSummary(_ album: AssetCollection) throws -> JSON {
        let cover = try library.fetchAssets(in: album, options: FetchOptions(fetchLimit: 1)).firstObject
        return .object([
            ("id", .string(album.id.uuidString)), ("title", .string(album.title)), ("kind", .string(Self.kind(of: album))),
            ("count", .int(album.estimatedAssetCount)), ("cover", cover.map { Self.summary($0) } ?? .null),
        ])
    }

    /// Hidden assets, on a page of the view's own (the library's Hidden smart album stands there).
    private func hiddenSummary() throws -> JSON {
        let hidden = try hiddenAssets()
        return .object([
            ("id", .string(Self.hiddenID)), ("title", .string("Hidden")), ("kind", .string("hidden")), ("count", .int(hidden.count)),
            ("cover", hidden.firstObject.map { Self.summary($0) } ?? .null),
        ])
    }

    private func hiddenAssets() throws -> FetchResult<Asset> {
        try library.fetchAssets(
            options: FetchOptions(predicate: .isHidden(true), sortDescriptors: [SortDescriptor(.creationDate)], includeHiddenAssets: true))
    }

    static let hiddenID = "hidden"

    /// The part of an album a request asks for: `offset` (from 0) and `limit` (all when absent).
    struct Page {
        var offset = 0
        var limit: Int?
    }

    private static func page(_ request: WebRequest) throws(WebError) -> Page {
        var page = Page()
        if let text = request.query["offset"] {
            guard let offset = Int(text), offset >= 0 else {
                throw .badRequest("offset must be a whole number from 0 (the album's first item), not '\(text)'")
            }
            page.offset = offset
        }
        if let text = request.query["limit"] {
            guard let limit = Int(text), limit >= 1 else { throw .badRequest("limit must be a whole number from 1, not '\(text)'") }
            page.limit = limit
        }
        return page
    }

    /// An album's description, its number of items, and the items of `page` in album order
    /// (read from the library's lazy fetch result: a page reads only its own assets).
    private func album(_ id: String, page: Page) throws -> JSON {
        let header: JSON
        let assets: FetchResult<Asset>
        if id == Self.hiddenID {
            assets = try hiddenAssets()
            header = .object([("id", .string(id)), ("title", .string("Hidden")), ("kind", .string("hidden")), ("editable", .bool(false))])
        } else {
            let album = try collection(id)
            assets = try library.fetchAssets(in: album)
            header = .object([
                ("id", .string(album.id.uuidString)), ("title", .string(album.title)), ("kind", .string(Self.kind(of: album))),
                ("editable", .bool(album.collectionType == .album)), ("localIdentifier", .string(album.localIdentifier)),
                ("creationDate", .string(album.creationDate.map(Self.isoDate))),
                ("sourceDevice", .string(album.sourceDevice?.rawValue)),
            ])
        }
        let start = min(page.offset, assets.count)
        let end = page.limit.map { min(assets.count, start + $0) } ?? assets.count
        return .object([
            ("album", header), ("count", .int(assets.count)), ("offset", .int(start)),
            ("assets", .array(assets[start..<end].map(Self.summary))),
        ])
    }

    private func asset(_ id: String) throws -> JSON {
        let asset = try fetchAsset(id)
        let resources = try library.resources(for: asset)
        let containing = try library.fetchAssetCollections(with: .album, options: FetchOptions(sortDescriptors: [SortDescriptor(.title)]))
            .allObjects
            .filter { album in
                try library.fetchAssets(in: album, options: FetchOptions(includeHiddenAssets: true)).contains { $0.id == asset.id }
            }
        var fields: [(String, JSON)] = [
            ("asset", Self.summary(asset)), ("localIdentifier", .string(asset.localIdentifier)),
            ("modificationDate", .string(Self.isoDate(asset.modificationDate))), ("addedDate", .string(Self.isoDate(asset.addedDate))),
            ("deletionDate", .string(asset.deletionDate.map(Self.isoDate))), ("sourceDevice", .string(asset.sourceDevice.rawValue)),
            ("hasAdjustments", .bool(asset.hasAdjustments)), ("duration", .double(asset.duration)),
        ]
        if let location = asset.location {
            let (latitude, longitude) = (location.latitude, location.longitude)
            fields.append(
                (
                    "location",
                    .object([
                        ("latitude", .double(latitude)), ("longitude", .double(longitude)),
                        ("altitude", location.altitude.map { .double($0) } ?? .null),
                        (
                            "map",
                            .string("https://www.openstreetmap.org/?mlat=\(latitude)&mlon=\(longitude)#map=15/\(latitude)/\(longitude)")
                        ),
                    ])
                ))
        } else {
            fields.append(("location", .null))
        }
        fields.append(
            (
                "resources",
                .array(
                    resources.map { resource in
                        .object([
                            ("type", .string(resource.type.description)), ("filename", .string(resource.originalFilename)),
                            ("uniformTypeIdentifier", .string(resource.uniformTypeIdentifier)), ("size", .int(resource.size)),
                        ])
                    })
            ))
        fields.append(("albums", .array(containing.map { .object([("id", .string($0.id.uuidString)), ("title", .string($0.title))]) })))
        return .object(fields)
    }

    private func history(_ id: String) throws -> JSON {
        let (identifier, title) = try historyObject(id)
        var entries: [ObjectHistoryEntry] = []
        var cursor: ObjectHistoryCursor?
        repeat {
            let page = try library.history(of: identifier, after: cursor, limit: 1000)
            entries += page.entries
            cursor = page.next
        } while cursor != nil
        let devices = Dictionary(entries.map { ($0.eventID, $0.device.rawValue) }, uniquingKeysWith: { first, _ in first })
        return .object([
            ("object", .object([("id", .string(id)), ("localIdentifier", .string(identifier)), ("title", .string(title))])),
            (
                "entries",
                .array(
                    entries.map { entry in
                        .object([
                            ("eventId", .string(entry.eventID.uuidString)), ("type", .string(entry.type)),
                            ("device", .string(entry.device.rawValue)),
                            ("date", .string(Self.isoDate(entry.date))), ("changeBlock", .string(entry.changeBlock.uuidString)),
                            ("localSequence", .int(entry.localSequence)),
                            ("serverSequence", entry.serverSequence.map { .int($0) } ?? .null),
                            ("changes", .array(entry.changes.map { Self.fieldChange($0, devices: devices) })),
                        ])
                    })
            ),
        ])
    }

    private static func fieldChange(_ change: FieldChange, devices: [UUID: String]) -> JSON {
        let (outcome, by): (String, UUID?)
        switch change.outcome {
        case .inEffect: (outcome, by) = ("inEffect", nil)
        case .replaced(let event): (outcome, by) = ("replaced", event)
        case .overruled(let event): (outcome, by) = ("overruled", event)
        }
        return .object([
            ("field", .string(change.field)), ("oldValue", .string(change.oldValue)), ("newValue", .string(change.newValue)),
            ("outcome", .string(outcome)), ("by", .string(by?.uuidString)), ("byDevice", .string(by.flatMap { devices[$0] })),
        ])
    }

    /// The local identifier and a title of the asset or album `id` names.
    private func historyObject(_ id: String) throws -> (String, String) {
        guard let uuid = UUID(uuidString: id) else {
            throw WebError.badRequest("'\(id)' is not an identifier; open history from an asset or album page")
        }
        let asset = LocalIdentifier(uuid: uuid, kind: .asset).description
        if try library.fetchAssets(withLocalIdentifiers: [asset], options: FetchOptions(includeHiddenAssets: true)).firstObject != nil {
            return (asset, "Asset")
        }
        let album = LocalIdentifier(uuid: uuid, kind: .album).description
        if let found = try library.fetchAssetCollections(withLocalIdentifiers: [album]).firstObject { return (album, found.title) }
        // A purged asset or a deleted album still has its history.
        let history = try library.history(of: asset, limit: 1)
        return history.entries.isEmpty ? (album, "Album") : (asset, "Asset")
    }

    private func status() throws -> JSON {
        let statistics = try library.statistics()
        let remote = try SyncRemote.saved(in: library)
        let lastSync = try remote.map { SyncEngine(library: library, remote: $0) }?.lastSync()
        let position = try library.currentChangeToken.logPosition
        return .object([
            ("library", .string(library.url.path)), ("device", .string(library.device.rawValue)),
            ("assets", .int(statistics.assets - statistics.deleted)), ("hidden", .int(statistics.hidden)),
            ("deleted", .int(statistics.deleted)),
            ("albums", .int(statistics.albums)), ("events", .int(statistics.events)), ("pendingEvents", .int(statistics.pendingEvents)),
            ("rejectedEvents", .int(statistics.rejectedEvents)), ("quarantinedEvents", .int(statistics.quarantined.values.reduce(0, +))),
            ("remote", .string(remote?.description)),
            ("lastSync", .string(lastSync.map { Self.isoDate(Date(timeIntervalSince1970: Double($0) / 1000)) })),
            ("logPosition", .int(position)), ("liveStreams", .int(feed.subscriberCount)),
        ])
    }

    private func quarantine() throws -> JSON {
        let kinds: [QuarantineKind: String] = [.quarantined: "quarantined", .needsNewerVersion: "needsNewerVersion", .sealed: "sealed"]
        return .array(
            try library.quarantine().map { entry in
                .object([
                    ("eventId", .string(entry.eventID.uuidString)), ("device", .string(entry.device.rawValue)),
                    ("date", .string(Self.isoDate(entry.timestamp.date))),
                    ("type", .string(entry.type)), ("object", .string(entry.object.uuidString)),
                    ("kind", .string(kinds[entry.kind] ?? "unknown")),
                    ("reason", .string(entry.reason)),
                ])
            })
    }

    // MARK: Images

    /// A rendition of an asset, sent from the image manager's cache file. Its name is
    /// content-addressed (the source's hash and the scale), so it is the ETag, and the browser
    /// may keep it for good: the page's address of it changes with the asset's version.
    private func image(_ id: String, size: Int, mode: ImageContentMode, request: WebRequest) throws -> WebResponse {
        guard (1...4096).contains(size) else { throw WebError.badRequest("size must be a number of pixels from 1 to 4096, not \(size)") }
        // The image manager takes the identifier: no fetch of the asset first (it finds deleted
        // and hidden assets too, and answers identifierNotFound for unknown ones).
        let asset = try assetIdentifier(id)
        let done = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        let options = ImageRequestOptions(deliveryMode: .highQualityFormat, isNetworkAccessAllowed: false)
        library.imageManager.requestImage(for: asset, targetSize: CGSize(width: size, height: size), contentMode: mode, options: options) {
            result in
            outcome.set(result)
            done.signal()
        }
        done.wait()
        let image = try outcome.get()
        let contentType = image.uniformTypeIdentifier == "public.png" ? "image/png" : "image/jpeg"
        let tag = "\"\(image.fileURL.deletingPathExtension().lastPathComponent)\""
        let headers = [("ETag", tag), ("Cache-Control", "private, max-age=31536000, immutable")]
        if Self.matches(request.header("If-None-Match"), tag) {
            return WebResponse(status: 304, headers: headers, body: .bytes(Data()))
        }
        if let file = try? FileSlice.open(image.fileURL.path) {
            return WebResponse(status: 200, headers: [("Content-Type", contentType)] + headers, body: .file(file))
        }
        // The file went (evicted just now): the bytes read are as good.
        return WebResponse(contentType: contentType, body: image.data, headers: headers)
    }

    /// Whether an `If-None-Match` header names `tag` (or is `*`).
    private static func matches(_ header: String?, _ tag: String) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { candidate in
            let candidate = candidate.trimmingCharacters(in: .whitespaces)
            return candidate == "*" || candidate == tag || candidate == "W/" + tag
        }
    }

    /// An asset's photo or video as imported, in byte ranges when asked (a video element seeks
    /// with them): sent from the resource's file, whose name is its SHA-256 and so its ETag.
    private func original(_ id: String, request: WebRequest) throws -> WebResponse {
        let asset = try fetchAsset(id)
        let resources = try library.resources(for: asset)
        let type: ResourceType = asset.mediaType == .video ? .video : .photo
        guard let resource = resources.first(where: { $0.type == type }) ?? resources.first else {
            throw WebError.notFound("the bytes of asset \(id)")
        }
        let url = try library.fileURL(for: resource)
        let file: FileSlice
        do {
            file = try FileSlice.open(url.path)
        } catch {
            throw WebError(
                404, "missingResource",
                "the bytes of asset \(id) are not on this device (\(error.reason)); sync this device with 'photoledger sync' to get them")
        }
        let tag = "\"\(resource.sha256)\""
        var headers = [
            ("Content-Type", Self.mimeType(resource.uniformTypeIdentifier)), ("ETag", tag), ("Accept-Ranges", "bytes"),
            ("Cache-Control", "private, max-age=31536000, immutable"),
        ]
        if Self.matches(request.header("If-None-Match"), tag) {
            return WebResponse(status: 304, headers: Array(headers.dropFirst()), body: .bytes(Data()))
        }
        // A Range is honoured unless If-Range names another version of the bytes.
        let rangeHeader = request.header("If-Range").map { $0 == tag } ?? true ? request.header("Range") : nil
        let size = file.length
        switch ByteRange.parse(rangeHeader, size: size) {
        case .whole:
            return WebResponse(status: 200, headers: headers, body: .file(file))
        case .part(let range):
            headers.append(("Content-Range", ByteRange.part(range).contentRange(size: size)!))
            return WebResponse(status: 206, headers: headers, body: .file(file.part(range)))
        case .unsatisfiable:
            let error = WebError(
                416, "rangeNotSatisfiable",
                "the range '\(rangeHeader ?? "")' starts past the end of the \(size) bytes of asset \(id); ask for bytes 0 to \(max(0, Int64(size) - 1))"
            )
            var response = error.response
            response.headers += [("Content-Range", ByteRange.unsatisfiable.contentRange(size: size)!), ("Accept-Ranges", "bytes")]
            return response
        }
    }

    private static func mimeType(_ uniformType: String) -> String {
        let types = [
            "public.jpeg": "image/jpeg", "public.png": "image/png", "public.heic": "image/heic", "org.webmproject.webp": "image/webp",
            "com.compuserve.gif": "image/gif", "public.mpeg-4": "video/mp4", "com.apple.quicktime-movie": "video/quicktime",
            "org.webmproject.webm": "video/webm", "public.tiff": "image/tiff",
        ]
        return types[uniformType] ?? "application/octet-stream"
    }

    // MARK: Changes

    private func change(_ request: WebRequest, segments: [String]) throws -> WebResponse {
        let body = try JSONBody(request)
        if let action = Self.match(segments, "api", "assets", "*")?[0] {
            try changeAssets(action: action, body: body)
        } else if segments == ["api", "albums"] {
            let title = try Self.title(body)
            let created = try library.performChangesAndWait { changes in try changes.createAlbum(title: title).localIdentifier }
            return .json(.object([("id", .string(String(created.prefix(36))))]))
        } else if let captures = Self.match(segments, "api", "albums", "*", "*") {
            try changeAlbum(captures[0], action: captures[1], body: body)
        } else {
            throw WebError.notFound("the change \(request.path)")
        }
        return .json(.object([("done", .bool(true)), ("logPosition", .int(try library.currentChangeToken.logPosition))]))
    }

    private func changeAssets(action: String, body: JSONBody) throws {
        let assets = try body.strings("assets").map(assetIdentifier)
        try library.performChangesAndWait { changes in
            switch action {
            case "favorite":
                let value = try body.bool("value")
                for asset in assets { try changes.assetChangeRequest(for: asset).setFavorite(value) }
            case "hide":
                let value = try body.bool("value")
                for asset in assets { try changes.assetChangeRequest(for: asset).setHidden(value) }
            case "delete": try changes.deleteAssets(assets)
            case "recover": try changes.recoverAssets(assets)
            default: throw WebError.notFound("the change \(action)")
            }
        }
    }

    private func changeAlbum(_ id: String, action: String, body: JSONBody) throws {
        let album = try collection(id)
        guard album.collectionType == .album else {
            throw WebError(
                409, "changeNotSupported",
                "'\(album.title)' is a smart album: its contents follow from the assets; change the assets instead")
        }
        // Read before the change block: the album's order as it is now.
        var moving: (from: Int, to: Int)?
        if action == "move" {
            let asset = try assetIdentifier(try body.string("asset"))
            let members = try library.fetchAssets(in: album, options: FetchOptions(includeHiddenAssets: true))
            guard let from = members.firstIndex(where: { $0.localIdentifier == asset }) else {
                throw WebError(409, "notInAlbum", "the asset \(asset) is not in '\(album.title)'; reload the album")
            }
            moving = (from, try body.int("to"))
        }
        try library.performChangesAndWait { changes in
            let request = try changes.albumChangeRequest(for: album)
            switch action {
            case "rename": try request.setTitle(try Self.title(body))
            case "add": try request.addAssets(try body.strings("assets").map(assetIdentifier))
            case "remove": try request.removeAssets(try body.strings("assets").map(assetIdentifier))
            case "move":
                if let moving { try request.moveAssets(at: IndexSet(integer: moving.from), to: moving.to) }
            case "delete": try changes.deleteAlbums([album])
            default: throw WebError.notFound("the change \(action)")
            }
        }
    }

    private static func title(_ body: JSONBody) throws(WebError) -> String {
        let title = try body.string("title").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty else { throw .badRequest("an album needs a title that is not empty") }
        return title
    }

    // MARK: Lookups

    private func assetIdentifier(_ id: String) throws -> String {
        guard let uuid = UUID(uuidString: id) else { throw WebError.badRequest("'\(id)' is not an asset identifier (a UUID)") }
        return LocalIdentifier(uuid: uuid, kind: .asset).description
    }

    private func fetchAsset(_ id: String) throws -> Asset {
        let identifier = try assetIdentifier(id)
        if let asset = try library.fetchAssets(withLocalIdentifiers: [identifier], options: FetchOptions(includeHiddenAssets: true))
            .firstObject
        {
            return asset
        }
        // A deleted asset is fetched only through Recently Deleted.
        let deleted = try library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumRecentlyDeleted)
        if let album = deleted.firstObject,
            let asset = try library.fetchAssets(in: album, options: FetchOptions(includeHiddenAssets: true)).first(where: {
                $0.localIdentifier == identifier
            })
        {
            return asset
        }
        throw WebError.notFound("the asset \(id)")
    }

    private func collection(_ id: String) throws -> AssetCollection {
        guard let uuid = UUID(uuidString: id) else { throw WebError.badRequest("'\(id)' is not an album identifier (a UUID)") }
        // One lookup by identifier finds smart albums too, and counts only the album it finds
        // (listing every smart album would count each one's assets).
        guard
            let album = try library.fetchAssetCollections(withLocalIdentifiers: [LocalIdentifier(uuid: uuid, kind: .album).description])
                .firstObject
        else {
            throw WebError.notFound("the album \(id)")
        }
        return album
    }

    // MARK: Encoding

    /// What a grid shows of an asset.
    static func summary(_ asset: Asset) -> JSON {
        .object([
            ("id", .string(asset.id.uuidString)), ("mediaType", .string(asset.mediaType == .video ? "video" : "image")),
            ("width", .int(asset.pixelWidth)), ("height", .int(asset.pixelHeight)),
            ("creationDate", .string(asset.creationDate.map(isoDate))), ("favorite", .bool(asset.isFavorite)),
            ("hidden", .bool(asset.isHidden)),
            ("deleted", .bool(asset.isDeleted)), ("version", .int(Int64(asset.modificationDate.timeIntervalSince1970 * 1000))),
            ("alt", .string(altText(asset))),
        ])
    }

    /// A description for people who cannot see the picture.
    static func altText(_ asset: Asset) -> String {
        var text = asset.mediaType == .video ? "Video" : "Photo"
        if let date = asset.creationDate {
            text += " taken " + humanDate(date)
        } else {
            text += " with no date"
        }
        text += ", \(asset.pixelWidth) × \(asset.pixelHeight)"
        if asset.mediaType == .video { text += ", \(Int(asset.duration.rounded())) s" }
        if asset.isFavorite { text += ", favourite" }
        if asset.isHidden { text += ", hidden" }
        if asset.isDeleted { text += ", in Recently Deleted" }
        return text
    }

    private static func kind(of album: AssetCollection) -> String {
        switch album.subtype {
        case .albumRegular: return "album"
        case .smartAlbumFavorites: return "favorites"
        case .smartAlbumRecentlyDeleted: return "recentlyDeleted"
        case .smartAlbumVideos: return "videos"
        case .smartAlbumRecentlyAdded: return "recentlyAdded"
        case .smartAlbumUserLibrary: return "allPhotos"
        default: return album.collectionType == .album ? "album" : "smart"
        }
    }

    /// `2024-06-02T10:30:00Z`. Written by hand: an album page formats two dates per asset, and
    /// Foundation's format styles cost tens of microseconds each.
    static func isoDate(_ date: Date) -> String {
        let time = utc(date)
        return "\(time.year)-\(two(time.month))-\(two(time.day))T\(two(time.hour)):\(two(time.minute)):\(two(time.second))Z"
    }

    /// `2 Jun 2024 at 10:30 UTC`.
    private static func humanDate(_ date: Date) -> String {
        let time = utc(date)
        return "\(time.day) \(months[time.month - 1]) \(time.year) at \(two(time.hour)):\(two(time.minute)) UTC"
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// The UTC calendar fields of `date` (the proleptic Gregorian calendar, from days since 1970).
    private static func utc(_ date: Date) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let inDay = seconds - days * 86_400
        // Days to civil date (Howard Hinnant's algorithm).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, inDay / 3600, inDay % 3600 / 60, inDay % 60)
    }

    /// The web error a library error is answered with.
    static func webError(_ error: PhotoLibraryError) -> WebError {
        switch error.code {
        case .identifierNotFound: return WebError(404, "identifierNotFound", error.message)
        case .accessUserDenied, .accessRestricted: return WebError(403, "\(error.code)", error.message)
        case .missingResource, .networkAccessRequired:
            return WebError(404, "\(error.code)", error.message + " (sync this device with 'photoledger sync' to get the bytes)")
        default: return WebError(409, "\(error.code)", error.message)
        }
    }

    private static let staticHeaders = [("Cache-Control", "no-cache")]
    static let pageHeaders = [
        ("Cache-Control", "no-store"),
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("Referrer-Policy", "no-referrer"),
    ]
}

/// The result of an image request, handed from the image manager's thread to the connection's.
private final class OutcomeBox: @unchecked Sendable {
    // Safe to share: written once before the semaphore is signalled, read after it is waited on.
    private var result: Result<ImageResult, PhotoLibraryError>?

    func set(_ result: Result<ImageResult, PhotoLibraryError>) {
        if self.result == nil || (try? self.result?.get().isDegraded) == true { self.result = result }
    }

    func get() throws -> ImageResult {
        guard let result else { throw WebError(500, "internalError", "the image request gave no result") }
        return try result.get()
    }
}
