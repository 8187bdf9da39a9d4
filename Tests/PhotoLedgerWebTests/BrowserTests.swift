import Foundation
import MediaSynthesis
import PhotoLedger
import PhotoLedgerTestSupport
import PhotoLedgerWeb
import TestSupportKit
import Testing
import WebDriverClient

/// The web view in a real headless Chromium (chromedriver), as a person uses it: every wait is for
/// a condition in the page with a generous deadline, never a fixed sleep.
@Suite(
    "Web view in a headless Chromium", .serialized, .enabled(if: TestGate.browser.isOpen, "\(TestGate.browser.skipReason)"),
    .enabled(if: Browser.unavailableReason == nil, "skipped: \(Browser.unavailableReason ?? "")"))
struct BrowserTests {
    /// The ids of the album page's items, in page order, joined by commas.
    private static let pageOrder = "[...document.querySelectorAll('#assets li[data-id]')].map(li => li.dataset.id).join(',')"
    /// True when the album page shows the ids of `arguments[0]`, in that order.
    private static let pageOrderIs = "return document.body.dataset.view === 'album' && \(pageOrder) === arguments[0];"

    /// Where screenshots are kept: the package's .build/test-artifacts/web.
    private static let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts/web")

    private func withBrowser(
        _ configuration: WebServer.Configuration = WebServer.Configuration(), _ body: (Browser, WebFixture) async throws -> Void
    ) async throws {
        let fixture = try WebFixture(configuration: configuration)
        let browser = try await Browser(artifacts: Self.artifacts)
        do {
            try await browser.open(fixture.server.launchURL)
            try await browser.waitFor(
                "the albums page", "return document.body.dataset.view === 'albums' && !!document.querySelector('#albums li');")
            try await body(browser, fixture)
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    @Test func theAlbumsPageThenAnAlbumInAlbumOrderWithRealThumbnails() async throws {
        try await withBrowser { browser, fixture in
            let smart =
                try await browser.execute("return [...document.querySelectorAll('#smart-albums li')].map(li => li.textContent).join('|');")
                as? String
            #expect(
                smart?.contains("Favorites") == true && smart?.contains("Recently Deleted") == true && smart?.contains("Hidden") == true)
            try await browser.waitFor(
                "the album cover decoded",
                "const img = document.querySelector('#albums li img'); return !!img && img.complete && img.naturalWidth > 0;")
            try await browser.screenshot("albums")
            try await browser.click("#albums li[data-id='\(fixture.album)'] a")
            try await browser.waitFor(
                "the album page", "return document.body.dataset.view === 'album' && document.querySelectorAll('#assets li').length === 4;")
            #expect(try await browser.execute("return \(Self.pageOrder);") as? String == fixture.albumOrder.joined(separator: ","))
            try await browser.waitFor(
                "every thumbnail decoded",
                "const images = [...document.querySelectorAll('#assets img')]; return images.length === 4 && images.every(img => img.complete && img.naturalWidth > 0 && img.naturalHeight > 0);"
            )
            let sizes =
                try await browser.execute(
                    "return [...document.querySelectorAll('#assets img')].map(img => img.naturalWidth + 'x' + img.naturalHeight + ' ' + img.alt);"
                ) as? [String]
            // 256-pixel fill renditions of 640…736 × 480 photos: 256 pixels high.
            #expect(sizes?.allSatisfy { $0.contains("x256 Photo taken ") } == true, "\(sizes ?? [])")
            // The first screen's thumbnails are asked for at once, first.
            #expect(
                try await browser.execute(
                    "return document.querySelector('#assets img').loading + ' ' + document.querySelector('#assets img').fetchPriority;")
                    as? String == "eager high")
            try await browser.screenshot("album")
        }
    }

    @Test func favouritingAnAssetShowsItInFavoritesAndInItsHistory() async throws {
        try await withBrowser { browser, fixture in
            let photo = fixture.albumOrder[1]
            try await browser.click("#albums li[data-id='\(fixture.album)'] a")
            try await browser.waitFor("the album page", "return document.body.dataset.view === 'album';")
            try await browser.click("#assets li[data-id='\(photo)'] a")
            try await browser.waitFor(
                "the asset page", "return document.body.dataset.view === 'asset' && !!document.querySelector('#actions button');")
            #expect(try await browser.execute("return document.querySelector('.viewer img').alt;") as? String != "")
            let details = try await browser.execute("return document.querySelector('main dl').textContent;") as? String
            #expect(details?.contains("Size640 × 480") == true && details?.contains("From deviceanna-laptop") == true, "\(details ?? "")")
            let map =
                try await browser.execute(
                    "const a = document.querySelector('main a[href^=\"https://www.openstreetmap.org/\"]'); return a ? a.href : null;")
                as? String
            #expect(map?.contains("mlat=38.7139&mlon=-9.1394") == true)
            #expect(
                try await browser.execute("return document.querySelector('#asset-albums').textContent;") as? String
                    == "Trip Remove from Trip")
            try await browser.click("#actions button[aria-pressed]")
            try await browser.waitFor(
                "the button to say Unfavourite", "return document.querySelector('#actions button').textContent === 'Unfavourite';")
            #expect(try fixture.asset(photo).isFavorite)
            try await browser.screenshot("favourited")

            try await browser.click("nav a[href='#/']")
            let favorites = try fixture.library.fetchAssetCollections(with: .smartAlbum, subtype: .smartAlbumFavorites)[0].id.uuidString
            try await browser.waitFor(
                "the albums page",
                "return document.body.dataset.view === 'albums' && !!document.querySelector(\"#smart-albums li[data-id='\(favorites)']\");")
            try await browser.click("#smart-albums li[data-id='\(favorites)'] a")
            try await browser.waitFor("the asset in Favorites", Self.pageOrderIs, [photo])

            try await browser.execute("location.hash = '#/history/\(photo)';")
            try await browser.waitFor(
                "the favourite in the history",
                "return [...document.querySelectorAll('#timeline li[data-field=isFavorite]')].some(li => li.textContent.includes('→ “true”') && li.dataset.outcome === 'inEffect');"
            )
            let device = try await browser.execute("return document.querySelector('#timeline strong').textContent;") as? String
            #expect(device == "anna-laptop")
            try await browser.screenshot("history")

            try await browser.click("nav a[href='#/status']")
            try await browser.waitFor(
                "the sync status",
                "return document.body.dataset.view === 'status' && document.querySelector('#status').textContent.includes('Deviceanna-laptop');"
            )
            #expect(
                (try await browser.execute("return document.querySelector('#status').textContent;") as? String)?.contains("Remotenone")
                    == true)
            try await browser.click("nav a[href='#/quarantine']")
            try await browser.waitFor(
                "the quarantine list",
                "return document.body.dataset.view === 'quarantine' && document.querySelector('main p').textContent === 'No event is quarantined.';"
            )
        }
    }

    @Test func reorderingByDragAndDropAndByKeyboardIsKept() async throws {
        try await withBrowser { browser, fixture in
            let order = fixture.albumOrder
            try await browser.click("#albums li[data-id='\(fixture.album)'] a")
            try await browser.waitFor(
                "the album page", "return document.body.dataset.view === 'album' && document.querySelectorAll('#assets li').length === 4;")
            // Dropping the first photo on the third puts it in the third place.
            try await browser.drag("#assets li[data-id='\(order[0])']", onto: "#assets li[data-id='\(order[2])']")
            let dragged = [order[1], order[2], order[0], order[3]]
            try await browser.waitFor("the dragged order on the page", Self.pageOrderIs, [dragged.joined(separator: ",")])
            #expect(try fixture.albumContents() == dragged)
            #expect(try await browser.execute("return document.body.dataset.view;") as? String == "album", "a drag must not open the photo")
            try await browser.screenshot("dragged")

            // Alt+→ on a focused photo moves it one place later.
            try await browser.execute("document.querySelector(\"#assets li[data-id='\(order[1])'] a\").focus();")
            try await browser.pressWithAlt("\u{E014}")
            let moved = [order[2], order[1], order[0], order[3]]
            try await browser.waitFor("the keyboard order on the page", Self.pageOrderIs, [moved.joined(separator: ",")])
            #expect(try fixture.albumContents() == moved)
            let focused =
                try await browser.execute(
                    "return document.activeElement.closest('li') ? document.activeElement.closest('li').dataset.id : null;") as? String
            #expect(focused == order[1], "the moved photo keeps the focus")

            // Reloading shows the kept order.
            try await browser.execute("location.reload();")
            try await browser.waitFor("the album after a reload", Self.pageOrderIs, [moved.joined(separator: ",")])
        }
    }

    @Test func changesOfTheLibraryAndOfTheCommandLineAppearWithoutReloading() async throws {
        try await withBrowser { browser, fixture in
            try await browser.click("#albums li[data-id='\(fixture.album)'] a")
            try await browser.waitFor(
                "the album page, live", "return document.body.dataset.view === 'album' && document.body.dataset.position !== undefined;")
            try await browser.execute("window.sameDocument = true;")

            // A change block through the library's API, in this process.
            let albumIdentifier = "\(fixture.album)/L0/040"
            try fixture.library.performChangesAndWait { changes in
                try changes.albumChangeRequest(for: albumIdentifier).setTitle("Trip to Lisbon")
                try changes.albumChangeRequest(for: albumIdentifier).removeAssets(["\(fixture.albumOrder[3])/L0/001"])
            }
            try await browser.waitFor(
                "the renamed album with three photos",
                "return document.querySelector('h1').textContent === 'Trip to Lisbon' && document.querySelectorAll('#assets li').length === 3;"
            )

            // The command line, another process writing the same library.
            let tool = try builtExecutable("photoledger")
            let process = ChildProcess()
            process.executableURL = tool
            process.arguments = [
                "favorite", fixture.albumOrder[0], "--library", fixture.library.url.path, "--device", "anna-terminal", "--quiet",
            ]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            try await browser.waitFor(
                "the favourite mark from the command line",
                "return document.querySelector(\"#assets li[data-id='\(fixture.albumOrder[0])'] .badges\").textContent.includes('♥');")
            #expect(try await browser.execute("return window.sameDocument === true;") as? Bool == true, "the page was not reloaded")
            try await browser.screenshot("live")
        }
    }

    @Test func aLargeAlbumComesInPagesAndEndsInAlbumOrder() async throws {
        try await withBrowser { browser, fixture in
            // 150 small photos more, at the album's end: more than the first page holds.
            let encoder = JPEGEncoder()
            let files = (0..<150).map { Data(encoder.encode(RGBImage.scene(width: 64, height: 48, seed: UInt64(100 + $0)))) }
            let albumIdentifier = "\(fixture.album)/L0/040"
            try fixture.library.performChangesAndWait { changes in
                let created = try files.map { try changes.createAsset(from: $0).placeholderForCreatedAsset.localIdentifier }
                try changes.albumChangeRequest(for: albumIdentifier).addAssets(created)
            }
            let order = try fixture.albumContents()
            #expect(order.count == 154)
            try await browser.execute("location.hash = '#/album/\(fixture.album)';")
            try await browser.waitFor(
                "the whole album, in album order", Self.pageOrderIs, [order.joined(separator: ",")])
            let loading =
                try await browser.execute(
                    "const images = [...document.querySelectorAll('#assets img')]; return [images.filter(img => img.loading === 'eager').length, images.filter(img => img.loading === 'lazy').length, firstScreen()];"
                ) as? [Int]
            #expect(
                loading?.count == 3 && loading?[0] == loading?[2] && loading?[1] == 154 - (loading?[2] ?? 0),
                "the first screen eager, the rest lazy: \(loading ?? [])")
            let firstPage = try await browser.execute("return firstPage();") as? Int ?? 0
            #expect(firstPage >= 60 && firstPage < 154, "the first page (\(firstPage)) must leave a second one")
            #expect(try await browser.execute("return document.querySelector('main p').textContent;") as? String == "154 items · History")
            let requests =
                try await browser.execute(
                    "return performance.getEntriesByType('resource').filter(entry => entry.name.includes('/api/albums/\(fixture.album)')).map(entry => new URL(entry.name).search);"
                ) as? [String]
            #expect(requests == ["?limit=\(firstPage)", "?offset=\(firstPage)&limit=2000"], "\(requests ?? [])")
            // ← and → on an asset go through the whole album, later pages included.
            try await browser.execute("location.hash = '#/asset/\(order[152])';")
            try await browser.waitFor("the asset page", "return document.body.dataset.view === 'asset';")
            #expect(
                try await browser.execute("return document.querySelector('main p span').textContent;") as? String
                    == "153 of 154 — ← and → go to the previous and next")
        }
    }

    @Test func aVideoPlaysAndSeeksThroughByteRanges() async throws {
        try await withBrowser { browser, fixture in
            let video = try fixture.addVideo()
            try await browser.execute("location.hash = '#/asset/\(video)';")
            try await browser.waitFor(
                "the video's metadata", "const video = document.querySelector('.viewer video'); return !!video && video.readyState >= 1;")
            let seekable =
                try await browser.execute(
                    "const video = document.querySelector('.viewer video'); return video.seekable.length ? [video.seekable.end(0), video.duration] : null;"
                ) as? [Double]
            #expect(seekable?.count == 2 && (seekable?[0] ?? 0) >= 1.9, "\(seekable ?? [])")
            try await browser.execute("document.querySelector('.viewer video').currentTime = 1.5;")
            try await browser.waitFor(
                "the video seeked to 1.5 s",
                "const video = document.querySelector('.viewer video'); return !video.seeking && Math.abs(video.currentTime - 1.5) < 0.2 && video.readyState >= 2;"
            )
            try await browser.screenshot("video")
        }
    }

    @Test func loggingOutLeadsToTheLoginPage() async throws {
        try await withBrowser { browser, fixture in
            try await browser.click("#logout")
            try await browser.waitFor("the login page", "return document.body.dataset.view === 'login';")
            #expect(
                (try await browser.execute("return document.body.textContent;") as? String)?.contains(
                    "Open the address that photoledger web printed")
                    == true)
            let status = try await fixture.send(.get, "/api/albums")
            #expect(status.status == 401)
        }
    }

    @Test func anEndedSessionSendsThePageToTheLoginPageSayingWhy() async throws {
        let clock = ManualClock()
        let configuration = WebServer.Configuration(sessionIdleTimeout: .seconds(600), clock: clock.read)
        try await withBrowser(configuration) { browser, fixture in
            clock.advance(by: 601)
            try await browser.click("nav a[href='#/status']")
            try await browser.waitFor("the login page", "return document.body.dataset.view === 'login';")
            let text = try await browser.execute("return document.querySelector('main').textContent;") as? String
            #expect(text?.contains("Your session has ended. Open the address 'photoledger web' printed again.") == true, "\(text ?? "")")
            try await browser.screenshot("session-ended")
        }
    }
}
