import Foundation
import PhotoLedger
import SyncTransport
import Testing

@testable import PhotoLedgerWeb

@Suite("Web view: reading the library and making changes over HTTP")
struct WebChangeTests {
    @Test func albumsListTheSmartAlbumsAndTheAlbumsWithCovers() async throws {
        let fixture = try WebFixture()
        let session = try await fixture.logIn()
        let albums = try WebFixture.object(try await fixture.send(.get, "/api/albums", headers: [("Cookie", session.cookie)]))
        let smart = try #require(albums["smartAlbums"] as? [[String: Any]])
        #expect(
            smart.map { $0["title"] as? String } == [
                "All Photos", "Favorites", "Recently Added", "Videos", "Recently Deleted", "Hidden", "Live Photos", "Animated", "Panoramas",
                "Bursts", "Selfies", "Screenshots",
            ])
        #expect(smart.first { $0["title"] as? String == "Hidden" }?["id"] as? String == "hidden")
        let mine = try #require(albums["albums"] as? [[String: Any]])
        #expect(mine.count == 1 && mine[0]["title"] as? String == "Trip" && mine[0]["count"] as? Int == 4)
        #expect((mine[0]["cover"] as? [String: Any])?["id"] as? String == fixture.albumOrder[0])
        let album = try WebFixture.object(
            try await fixture.send(.get, "/api/albums/\(fixture.album)", headers: [("Cookie", session.cookie)]))
        let assets = try #require(album["assets"] as? [[String: Any]])
        #expect(assets.map { $0["id"] as? String } == fixture.albumOrder)
        #expect(assets[0]["alt"] as? String == "Photo taken 16 Nov 2023 at 22:13 UTC, 704 × 480")
        #expect(assets[0]["creationDate"] as? String == "2023-11-16T22:13:20Z")
        let thumbnail = try await fixture.send(.get, "/thumb/\(fixture.photos[0])?size=256", headers: [("Cookie", session.cookie)])
        #expect(
            thumbnail.status == 200 && thumbnail.headers["Content-Type"] == "image/jpeg" && thumbnail.body.bytes.starts(with: [0xFF, 0xD8]))
        let asset = try WebFixture.object(
            try await fixture.send(.get, "/api/assets/\(fixture.photos[0])", headers: [("Cookie", session.cookie)]))
        let location = try #require(asset["location"] as? [String: Any])
        #expect((location["map"] as? String)?.hasPrefix("https://www.openstreetmap.org/?mlat=38.7139&mlon=-9.1394") == true)
        #expect((asset["albums"] as? [[String: Any]])?.map { $0["title"] as? String } == ["Trip"])
        let unknown = try await fixture.send(.get, "/api/assets/\(UUID().uuidString)", headers: [("Cookie", session.cookie)])
        #expect(try unknown.status == 404 && (WebFixture.error(unknown)).message.contains("was not found"))
        let status = try WebFixture.object(try await fixture.send(.get, "/api/status", headers: [("Cookie", session.cookie)]))
        #expect(status["assets"] as? Int == 5 && status["device"] as? String == "anna-laptop" && status["remote"] is NSNull)
        let quarantine = try await fixture.send(.get, "/api/quarantine", headers: [("Cookie", session.cookie)])
        #expect(quarantine.status == 200 && String(decoding: quarantine.body.bytes, as: UTF8.self) == "[]")
    }

    @Test func assetChangesAreChangeBlocksWithHistory() async throws {
        let fixture = try WebFixture()
        let session = try await fixture.logIn()
        let photo = fixture.photos[1]
        #expect(
            try await fixture.change("/api/assets/favorite", "{\"assets\":[\"\(photo)\"],\"value\":true}", session: session).status == 200)
        #expect(try fixture.asset(photo).isFavorite)
        #expect(try await fixture.change("/api/assets/hide", "{\"assets\":[\"\(photo)\"],\"value\":true}", session: session).status == 200)
        #expect(try fixture.asset(photo).isHidden)
        let hidden = try WebFixture.object(try await fixture.send(.get, "/api/albums/hidden", headers: [("Cookie", session.cookie)]))
        #expect((hidden["assets"] as? [[String: Any]])?.map { $0["id"] as? String } == [photo])
        #expect(try await fixture.change("/api/assets/hide", "{\"assets\":[\"\(photo)\"],\"value\":false}", session: session).status == 200)
        #expect(try await fixture.change("/api/assets/delete", "{\"assets\":[\"\(photo)\"]}", session: session).status == 200)
        #expect(try fixture.asset(photo).isDeleted)
        #expect(try await fixture.change("/api/assets/recover", "{\"assets\":[\"\(photo)\"]}", session: session).status == 200)
        #expect(try fixture.asset(photo).isDeleted == false)
        let history = try WebFixture.object(try await fixture.send(.get, "/api/history/\(photo)", headers: [("Cookie", session.cookie)]))
        let entries = try #require(history["entries"] as? [[String: Any]])
        let fields = entries.flatMap { ($0["changes"] as? [[String: Any]]) ?? [] }.map { "\($0["field"] ?? ""):\($0["newValue"] ?? "")" }
        #expect(fields.contains("isFavorite:true") && fields.contains("isHidden:true") && fields.contains("isHidden:false"), "\(fields)")
        #expect(entries.allSatisfy { $0["device"] as? String == "anna-laptop" })
        let bad = try await fixture.change("/api/assets/favorite", "{\"assets\":[\"\(photo)\"]}", session: session)
        #expect(try bad.status == 400 && (WebFixture.error(bad)).message.contains("\"value\" as true or false"))
        let notJSON = try await fixture.change("/api/assets/favorite", "favourite please", session: session)
        #expect(try notJSON.status == 400 && (WebFixture.error(notJSON)).message.contains("not a JSON object"))
        let missing = try await fixture.change(
            "/api/assets/favorite", "{\"assets\":[\"\(UUID().uuidString)\"],\"value\":true}", session: session)
        #expect(try missing.status == 404 && (WebFixture.error(missing)).code == "identifierNotFound")
    }

    @Test func albumChangesCreateRenameAddRemoveMoveAndDelete() async throws {
        let fixture = try WebFixture()
        let session = try await fixture.logIn()
        let created = try WebFixture.object(try await fixture.change("/api/albums", "{\"title\":\"Lisbon\"}", session: session))
        let lisbon = try #require(created["id"] as? String)
        #expect(try await fixture.change("/api/albums/\(lisbon)/rename", "{\"title\":\"Lisbon 2023\"}", session: session).status == 200)
        let titles = try fixture.library.fetchAssetCollections(with: .album).map(\.title).sorted()
        #expect(titles == ["Lisbon 2023", "Trip"])
        let untitled = try await fixture.change("/api/albums/\(lisbon)/rename", "{\"title\":\"  \"}", session: session)
        #expect(try untitled.status == 400 && (WebFixture.error(untitled)).message.contains("title that is not empty"))

        let order = fixture.albumOrder
        #expect(
            try await fixture.change("/api/albums/\(fixture.album)/add", "{\"assets\":[\"\(fixture.photos[4])\"]}", session: session).status
                == 200)
        #expect(try fixture.albumContents() == order + [fixture.photos[4]])
        #expect(
            try await fixture.change("/api/albums/\(fixture.album)/remove", "{\"assets\":[\"\(order[1])\"]}", session: session).status
                == 200)
        #expect(try fixture.albumContents() == [order[0], order[2], order[3], fixture.photos[4]])
        #expect(
            try await fixture.change("/api/albums/\(fixture.album)/move", "{\"asset\":\"\(fixture.photos[4])\",\"to\":0}", session: session)
                .status == 200)
        #expect(try fixture.albumContents() == [fixture.photos[4], order[0], order[2], order[3]])
        let outside = try await fixture.change(
            "/api/albums/\(fixture.album)/move", "{\"asset\":\"\(order[1])\",\"to\":0}", session: session)
        #expect(try outside.status == 409 && (WebFixture.error(outside)).code == "notInAlbum")
        let far = try await fixture.change("/api/albums/\(fixture.album)/move", "{\"asset\":\"\(order[0])\",\"to\":9}", session: session)
        #expect(try far.status == 409 && (WebFixture.error(far)).message.contains("out of range"))

        let favorites = try fixture.library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumFavorites)[0].id.uuidString
        let smart = try await fixture.change("/api/albums/\(favorites)/add", "{\"assets\":[\"\(order[0])\"]}", session: session)
        #expect(try smart.status == 409 && (WebFixture.error(smart)).message.contains("is a smart album"))

        #expect(try await fixture.change("/api/albums/\(lisbon)/delete", "{}", session: session).status == 200)
        #expect(try fixture.library.fetchAssetCollections(with: .album).map(\.title) == ["Trip"])
        let history = try WebFixture.object(
            try await fixture.send(.get, "/api/history/\(fixture.album)", headers: [("Cookie", session.cookie)]))
        #expect((history["entries"] as? [[String: Any]])?.count ?? 0 >= 4)
    }
}

@Suite("Web view: dates")
struct WebDateTests {
    @Test func datesAreWrittenInUTC() {
        let cases: [(TimeInterval, String)] = [
            (0, "1970-01-01T00:00:00Z"), (-1, "1969-12-31T23:59:59Z"), (951_782_400, "2000-02-29T00:00:00Z"),
            (1_700_000_000, "2023-11-14T22:13:20Z"), (4_107_542_400, "2100-03-01T00:00:00Z"), (-2_208_988_800, "1900-01-01T00:00:00Z"),
        ]
        for (seconds, text) in cases {
            #expect(WebApplication.isoDate(Date(timeIntervalSince1970: seconds)) == text)
        }
    }
}
