import Foundation
import PhotoLedger
import PhotoLedgerWeb
import SyncTransport
import Testing

@Suite("Web view: album pages, thumbnails from their files, byte ranges of originals")
struct WebServingTests {
    @Test func anAlbumComesInPagesInAlbumOrder() async throws {
        let fixture = try WebFixture()
        let session = try await fixture.logIn()
        func page(_ query: String) async throws -> (count: Int, offset: Int, ids: [String]) {
            let response = try await fixture.send(.get, "/api/albums/\(fixture.album)\(query)", headers: [("Cookie", session.cookie)])
            #expect(response.status == 200, "\(response)")
            let object = try WebFixture.object(response)
            let assets = object["assets"] as? [[String: Any]] ?? []
            return (object["count"] as? Int ?? -1, object["offset"] as? Int ?? -1, assets.map { $0["id"] as? String ?? "" })
        }
        let whole = try await page("")
        #expect(whole.count == 4 && whole.offset == 0 && whole.ids == fixture.albumOrder)
        let first = try await page("?limit=3")
        #expect(first.count == 4 && first.offset == 0 && first.ids == Array(fixture.albumOrder[0..<3]))
        let second = try await page("?offset=3&limit=3")
        #expect(second.count == 4 && second.offset == 3 && second.ids == [fixture.albumOrder[3]])
        let past = try await page("?offset=10&limit=3")
        #expect(past.count == 4 && past.offset == 4 && past.ids.isEmpty)

        for (query, expected) in [
            ("?offset=-1", "offset must be a whole number from 0"), ("?limit=0", "limit must be a whole number from 1"),
            ("?limit=ten", "limit must be a whole number from 1, not 'ten'"),
        ] {
            let response = try await fixture.send(.get, "/api/albums/\(fixture.album)\(query)", headers: [("Cookie", session.cookie)])
            let error = try WebFixture.error(response)
            #expect(response.status == 400 && error.code == "badRequest" && error.message.contains(expected), "\(query): \(error)")
        }
    }

    @Test func markupInATitleIsEscapedInTheJSONAndReadsBackUnchanged() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let title = "</script><b>Tom & Jerry</b>\u{2028}"
        try fixture.library.performChangesAndWait { changes in
            try changes.albumChangeRequest(for: fixture.album + "/L0/040").setTitle(title)
        }
        let session = try await fixture.logIn()
        let response = try await fixture.send(.get, "/api/albums/\(fixture.album)", headers: [("Cookie", session.cookie)])
        let text = String(decoding: response.body.bytes, as: UTF8.self)
        #expect(response.status == 200 && !text.contains("<") && !text.contains(">") && !text.contains("&"), "\(text)")
        #expect(text.contains(#"\u003c/script\u003e\u003cb\u003eTom \u0026 Jerry\u003c/b\u003e\u2028"#), "\(text)")
        let object = try WebFixture.object(response)
        let album = object["album"] as? [String: Any] ?? object
        #expect(album["title"] as? String == title, "\(object)")
    }

    @Test func aThumbnailIsSentFromItsFileWithAnETagAndRevalidated() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let session = try await fixture.logIn()
        let path = "/thumb/\(fixture.photos[0])?size=256&v=1"
        let first = try await fixture.send(.get, path, headers: [("Cookie", session.cookie)])
        let tag = try #require(first.headers["ETag"])
        #expect(first.status == 200 && first.headers["Content-Type"] == "image/jpeg")
        #expect(first.headers["Cache-Control"] == "private, max-age=31536000, immutable")
        #expect(first.body.bytes.prefix(2).elementsEqual([0xFF, 0xD8]) && first.body.bytes.suffix(2).elementsEqual([0xFF, 0xD9]))
        #expect(tag.hasPrefix("\"") && tag.contains("-256-fill"), "\(tag)")
        #expect(first.headers["Server-Timing"]?.hasPrefix("app;dur=") == true)
        // The cached file itself is what was sent.
        let cached = try #require(
            FileManager.default.enumerator(atPath: fixture.directory.file("library.renditions").path)?.compactMap { $0 as? String }
                .first { $0.hasSuffix("-256-fill.jpg") })
        #expect(
            try Data(contentsOf: fixture.directory.file("library.renditions").appendingPathComponent(cached)) == Data(first.body.bytes))

        let again = try await fixture.send(.get, path, headers: [("Cookie", session.cookie), ("If-None-Match", tag)])
        #expect(again.status == 304 && again.body.bytes.isEmpty && again.headers["ETag"] == tag)
        let other = try await fixture.send(.get, path, headers: [("Cookie", session.cookie), ("If-None-Match", "\"something-else\"")])
        #expect(other.status == 200 && other.body.bytes == first.body.bytes)

        for (query, expected) in [("?size=0", "from 1 to 4096, not 0"), ("?size=big", "from 1 to 4096, not 'big'")] {
            let response = try await fixture.send(.get, "/thumb/\(fixture.photos[0])\(query)", headers: [("Cookie", session.cookie)])
            let error = try WebFixture.error(response)
            #expect(response.status == 400 && error.message.contains(expected), "\(error)")
        }
        // Hidden and deleted assets have thumbnails too (the Hidden and Recently Deleted pages).
        let photo = "\(fixture.photos[0])/L0/001"
        try fixture.library.performChangesAndWait { changes in try changes.assetChangeRequest(for: photo).setHidden(true) }
        try fixture.library.performChangesAndWait { changes in try changes.deleteAssets([photo]) }
        let deleted = try await fixture.send(.get, "/thumb/\(fixture.photos[0])?size=256&v=2", headers: [("Cookie", session.cookie)])
        #expect(deleted.status == 200 && deleted.body.bytes == first.body.bytes)
        let missing = try await fixture.send(.get, "/thumb/\(UUID().uuidString)", headers: [("Cookie", session.cookie)])
        #expect(try missing.status == 404 && WebFixture.error(missing).message.contains("no asset with identifier"))
    }

    @Test func anOriginalAnswersByteRanges() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let video = try fixture.addVideo()
        let session = try await fixture.logIn()
        let asset = try fixture.asset(video)
        let resource = try #require(try fixture.library.resources(for: asset).first { $0.type == .video })
        let bytes = [UInt8](try fixture.library.requestData(for: resource))
        let size = bytes.count
        #expect(size > 1000)
        func get(_ headers: [(String, String)]) async throws -> HTTPResponse {
            try await fixture.send(.get, "/original/\(video)", headers: [("Cookie", session.cookie)] + headers)
        }

        let whole = try await get([])
        #expect(whole.status == 200 && whole.body.bytes == bytes && whole.headers["Accept-Ranges"] == "bytes")
        #expect(whole.headers["Content-Type"] == "video/mp4" && whole.headers["ETag"] == "\"\(resource.sha256)\"")

        let cases: [(range: String, expected: Range<Int>)] = [
            ("bytes=0-99", 0..<100), ("bytes=100-", 100..<size), ("bytes=-10", (size - 10)..<size),
            ("bytes=\(size - 5)-\(size + 1000)", (size - 5)..<size), ("bytes=-\(size * 2)", 0..<size),
        ]
        for (range, expected) in cases {
            let part = try await get([("Range", range)])
            #expect(part.status == 206, "\(range)")
            #expect(part.headers["Content-Range"] == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(size)", "\(range)")
            #expect(part.body.bytes == Array(bytes[expected]), "\(range)")
        }

        for range in ["bytes=\(size)-", "bytes=\(size + 10)-\(size + 20)", "bytes=-0"] {
            let refused = try await get([("Range", range)])
            let error = try WebFixture.error(refused)
            #expect(refused.status == 416 && refused.headers["Content-Range"] == "bytes */\(size)", "\(range)")
            #expect(
                error.code == "rangeNotSatisfiable" && error.message.contains("\(size) bytes")
                    && error.message.contains("ask for bytes 0 to"))
        }

        // Ranges the server may ignore get the whole body: several, another unit, nonsense (signed
        // positions among it), and a Range whose If-Range names other bytes.
        for headers in [
            [("Range", "bytes=0-1,5-6")], [("Range", "lines=1-2")], [("Range", "bytes=9-3")], [("Range", "bytes=x-")],
            [("Range", "bytes=+5-")], [("Range", "bytes=-+5")], [("Range", "bytes=0--0")],
            [("Range", "bytes=0-9"), ("If-Range", "\"another\"")],
        ] {
            let response = try await get(headers)
            #expect(response.status == 200 && response.body.bytes == bytes, "\(headers)")
        }
        let matching = try await get([("Range", "bytes=0-9"), ("If-Range", "\"\(resource.sha256)\"")])
        #expect(matching.status == 206 && matching.body.bytes == Array(bytes[0..<10]))
        let notModified = try await get([("If-None-Match", "\"\(resource.sha256)\"")])
        #expect(notModified.status == 304 && notModified.body.bytes.isEmpty)

        // HEAD answers the same head without the body.
        let head = try await fixture.send(.head, "/original/\(video)", headers: [("Cookie", session.cookie)])
        #expect(head.status == 200 && head.body.bytes.isEmpty && head.headers["Content-Length"] == "\(size)")
        let headPart = try await fixture.send(.head, "/original/\(video)", headers: [("Cookie", session.cookie), ("Range", "bytes=10-19")])
        #expect(headPart.status == 206 && headPart.headers["Content-Range"] == "bytes 10-19/\(size)")

        // A photo's original answers ranges too.
        let photo = try await fixture.send(
            .get, "/original/\(fixture.photos[0])", headers: [("Cookie", session.cookie), ("Range", "bytes=0-1")])
        #expect(photo.status == 206 && photo.body.bytes == [0xFF, 0xD8] && photo.headers["Content-Type"] == "image/jpeg")
    }

    @Test func anOriginalWhoseBytesAreGoneIsAClearError() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let session = try await fixture.logIn()
        let asset = try fixture.asset(fixture.photos[0])
        let resource = try #require(try fixture.library.resources(for: asset).first)
        try FileManager.default.removeItem(at: try fixture.library.fileURL(for: resource))
        let response = try await fixture.send(.get, "/original/\(fixture.photos[0])", headers: [("Cookie", session.cookie)])
        let error = try WebFixture.error(response)
        #expect(response.status == 404 && error.message.contains("photoledger sync"), "\(error)")
    }
}
