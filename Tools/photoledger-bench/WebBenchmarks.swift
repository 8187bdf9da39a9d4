import Foundation
import LedgerCore
import MediaSynthesis
import PhotoLedger
import SyncTransport
import WebDriverClient

/// Web view figures, measured in a headless Chromium (chromedriver) against the built
/// `photoledger web` serving a library with one album of 10,000 photos (1,000 with --quick):
///
/// - `web.first-screen.cold`: from the start of the page's navigation to the moment every
///   thumbnail of the first screen of the album is decoded by the browser, read in the page
///   (`performance.now()`, polled every 10 ms), with no rendition cached yet (the server makes
///   them on request);
/// - `web.first-screen.warm`: the same with the renditions cached beside the library (a new
///   browser each time, so its own cache is empty), the median of 3;
/// - `web.rss.scroll`: the peak resident memory of the `photoledger web` process after
///   scrolling through the whole album, a screen at a time, each screen's thumbnails decoded
///   before the next.
///
/// It also checks that the server refuses a request with a foreign `Host` or `Origin`.
struct WebBenchmarks {
    let quick: Bool

    func run() throws -> [Figure] {
        if let reason = Browser.unavailableReason {
            print("note: web figures skipped: \(reason)")
            return []
        }
        let bench = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let tool = bench.deletingLastPathComponent().appendingPathComponent("photoledger")
        guard FileManager.default.isExecutableFile(atPath: tool.path) else {
            print("note: web figures skipped: build photoledger beside photoledger-bench (swift build -c release)")
            return []
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = quick ? 1000 : 10_000
        let (libraryURL, album) = try makeLibrary(in: directory, photos: count)
        let server = try WebProcess(tool: tool, library: libraryURL)
        defer { server.stop() }
        try checkRefusals(server)

        let albumURL = URL(string: server.url.absoluteString + "#/album/\(album)")!
        let cold = try blocking { try await Self.firstScreen(server: server, album: albumURL, artifacts: directory) }
        let warm = try (0..<3).map { _ in try blocking { try await Self.firstScreen(server: server, album: albumURL, artifacts: directory) }
        }
        let screens = try blocking { try await Self.scrollThrough(server: server, album: albumURL, count: count, artifacts: directory) }
        let peak = Double(peakResidentKiB(pid: server.process.processIdentifier)) / 1024
        let label = quick ? "1k" : "10k"
        return [
            Figure(
                name: "web.first-screen.cold.\(label)", value: cold, unit: "ms", baseline: nil, higherIsBetter: false, target: 1000,
                note: "navigation start → every thumbnail of the first screen of a \(count)-photo album decoded, renditions made on request"
            ),
            Figure(
                name: "web.first-screen.warm.\(label)", value: median(warm), unit: "ms", baseline: nil, higherIsBetter: false, target: 1000,
                note: "the same with the renditions cached beside the library, a new browser each time; median of 3"),
            Figure(
                name: "web.rss.scroll.\(label)", value: peak, unit: "MB", baseline: nil, higherIsBetter: false, target: 200,
                note: "peak RSS of photoledger web after scrolling through the album (\(screens) screens, each decoded before the next)"),
        ]
    }

    // MARK: The library

    /// A library with `photos` distinct 480×360 JPEGs in one album, in import order.
    private func makeLibrary(in directory: URL, photos: Int) throws -> (URL, String) {
        let url = directory.appendingPathComponent("library.sqlite")
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        let library = try PhotoLibrary(url: url, device: "bench", options: options)
        let scenes = (0..<50).map { RGBImage.scene(width: 480, height: 360, seed: UInt64($0 + 1)) }
        let encoder = JPEGEncoder(quality: 80)
        var created: [String] = []
        var index = 0
        while index < photos {
            let end = min(photos, index + 500)
            // Each photo is a scene with its number written in the top row, so every file differs.
            let files = (index..<end).map { number -> Data in
                var image = scenes[number % scenes.count]
                for bit in 0..<16 { image[bit, 0] = number >> bit & 1 == 1 ? (255, 255, 255) : (0, 0, 0) }
                return Data(encoder.encode(image))
            }
            created += try library.performChangesAndWait { changes in
                try files.map { try changes.createAsset(from: $0).placeholderForCreatedAsset.localIdentifier }
            }
            index = end
        }
        let album = try library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Everything")
            try album.addAssets(created)
            return album.localIdentifier
        }
        return (url, String(album.prefix(36)))
    }

    // MARK: Security

    /// Throws unless a foreign Host and a foreign Origin are refused.
    private func checkRefusals(_ server: WebProcess) throws {
        let transport = CurlTransport()
        let api = URL(string: server.url.absoluteString + "api/albums")!
        for (name, value, status) in [("Host", "evil.example:\(server.url.port ?? 0)", 421), ("Origin", "https://evil.example", 403)] {
            var headers = HTTPHeaders()
            headers.add(name: name, value: value)
            let request = HTTPRequest(url: api, headers: headers)
            let answer = try blocking { try await transport.send(request).status }
            guard answer == status else { throw BenchmarkError("a request with \(name): \(value) got \(answer), not \(status)") }
        }
        print("note: web: requests with a foreign Host (421) and a foreign Origin (403) were refused")
    }

    // MARK: In the browser

    /// The album page's thumbnails in the window, as `images`.
    private static let visibleImages = """
        const images = [...document.querySelectorAll('#assets img')].filter(img => {
          const box = img.getBoundingClientRect();
          return box.bottom > 0 && box.top < innerHeight;
        });
        const decoded = document.body.dataset.view === 'album' && images.length > 0 && images.every(img => img.complete && img.naturalWidth > 0);
        """

    /// Once the thumbnails in the window are decoded, the page's clock (milliseconds since its
    /// navigation started) and where the time went, from the page's resource timings and the
    /// server's `Server-Timing` (how long it took to make each answer); else null.
    private static let firstScreenReady =
        visibleImages + """
            if (!decoded) return null;
            const now = performance.now();
            const entries = performance.getEntriesByType('resource');
            const server = entry => (entry.serverTiming.find(timing => timing.name === 'app') || { duration: -1 }).duration;
            const page = performance.getEntriesByType('navigation')[0];
            const json = entries.find(entry => entry.name.includes('/api/albums/'));
            const wanted = new Set(images.map(img => img.currentSrc));
            const thumbnails = entries.filter(entry => wanted.has(entry.name));
            const asked = entries.filter(entry => entry.name.includes('/thumb/'));
            const median = values => { const sorted = [...values].sort((a, b) => a - b); return sorted.length ? sorted[sorted.length >> 1] : -1; };
            return {
              now, page: page ? page.responseEnd : -1, script: (entries.find(entry => entry.name.endsWith('/app.js')) || { responseEnd: -1 }).responseEnd,
              jsonStart: json ? json.startTime : -1, jsonEnd: json ? json.responseEnd : -1, jsonServer: json ? server(json) : -1,
              jsonBytes: json ? json.encodedBodySize : -1,
              firstAsked: asked.length ? Math.min(...asked.map(entry => entry.startTime)) : -1,
              lastIn: thumbnails.length ? Math.max(...thumbnails.map(entry => entry.responseEnd)) : -1,
              visible: images.length, asked: asked.length,
              medianWait: median(thumbnails.map(entry => entry.responseEnd - entry.startTime)),
              medianServer: median(thumbnails.map(server)),
              totalServer: thumbnails.map(server).reduce((a, b) => a + b, 0)
            };
            """

    /// Milliseconds from the start of a fresh browser's navigation to the album until its first
    /// screen of thumbnails is decoded.
    private static func firstScreen(server: WebProcess, album: URL, artifacts: URL) async throws -> Double {
        let browser = try await Browser(artifacts: artifacts)
        do {
            try await browser.open(server.launchURL)
            try await browser.open(URL(string: "about:blank")!)
            try await browser.open(album)
            var reached: [String: Any]?
            try await Browser.waitUntil("the first screen of thumbnails", deadline: .seconds(120)) {
                reached = try await browser.execute(firstScreenReady) as? [String: Any]
                if reached == nil { try await Task.sleep(for: .milliseconds(10)) }
                return reached != nil
            }
            await browser.quit()
            guard let reached, let now = (reached["now"] as? NSNumber)?.doubleValue else { return .nan }
            func value(_ name: String) -> Double { (reached[name] as? NSNumber)?.doubleValue ?? .nan }
            print(
                String(
                    format: "note: web first screen: %.0f ms; page in at %.0f ms, app.js at %.0f; album's first page asked at %.0f ms, "
                        + "in at %.0f ms (%.1f ms in the server, %.0f bytes); first thumbnail asked at %.0f ms, the %.0f on screen "
                        + "(of %.0f asked) in by %.0f ms, each %.1f ms from asked to in (median; %.2f ms in the server, %.0f ms in all)",
                    now, value("page"), value("script"), value("jsonStart"), value("jsonEnd"), value("jsonServer"), value("jsonBytes"),
                    value("firstAsked"), value("visible"), value("asked"), value("lastIn"), value("medianWait"), value("medianServer"),
                    value("totalServer")))
            return now
        } catch {
            await browser.quit()
            throw error
        }
    }

    /// Scrolls through the album of `count` photos a screen at a time (once all its pages are
    /// drawn), each screen's thumbnails decoded before the next; returns the number of screens.
    private static func scrollThrough(server: WebProcess, album: URL, count: Int, artifacts: URL) async throws -> Int {
        let browser = try await Browser(artifacts: artifacts)
        do {
            try await browser.open(server.launchURL)
            try await browser.open(album)
            try await browser.waitFor(
                "the whole album drawn", "return document.querySelectorAll('#assets li').length === arguments[0];", [count],
                deadline: .seconds(300))
            var screens = 0
            while true {
                try await browser.waitFor("screen \(screens) decoded", visibleImages + "return decoded;", deadline: .seconds(300))
                screens += 1
                let atEnd =
                    try await browser.execute(
                        "const end = scrollY + innerHeight >= document.documentElement.scrollHeight - 2; if (!end) scrollBy(0, innerHeight); return end;"
                    ) as? Bool
                if atEnd == true { break }
            }
            await browser.quit()
            return screens
        } catch {
            await browser.quit()
            throw error
        }
    }
}

/// Runs async work from synchronous benchmark code and returns its result.
private func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<T, any Error>?
    Task {
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let outcome else { throw BenchmarkError("the async work gave no result") }
    return try outcome.get()
}

/// The built `photoledger web` serving a library, on a free loopback port.
private final class WebProcess: @unchecked Sendable {
    // Safe to share: set once in init.
    let process = Process()
    let url: URL
    let launchURL: URL

    init(tool: URL, library: URL) throws {
        process.executableURL = tool
        process.arguments = ["web", "--library", library.path, "--listen", "127.0.0.1:0", "--json"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line += byte }
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: String],
            let url = object["url"].flatMap(URL.init(string:)),
            let launch = object["launchURL"].flatMap(URL.init(string:))
        else { throw BenchmarkError("photoledger web printed '\(String(decoding: line, as: UTF8.self))', not its addresses") }
        self.url = url
        launchURL = launch
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
