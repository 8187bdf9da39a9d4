import Foundation
@preconcurrency import Glibc
import SyncTransport
import Synchronization
import TestSupportKit

/// A headless Chromium driven through chromedriver with the W3C WebDriver protocol (JSON over
/// HTTP on loopback, sent by the project's libcurl transport), for the web view's tests and
/// benchmarks.
public final class Browser: @unchecked Sendable {
    // Safe to share: the properties are set once in init; callers use one browser from one task.
    /// Debian's Chromium.
    public static let chromium = "/usr/bin/chromium"
    /// Debian's chromedriver (package chromium-driver).
    public static let chromedriver = "/usr/bin/chromedriver"

    /// Why the browser tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        for path in [chromium, chromedriver] where !FileManager.default.isExecutableFile(atPath: path) {
            return
                "\(path) is not installed (Debian packages chromium and chromium-driver: run Tools/install-dependencies.sh --test-services)"
        }
        return nil
    }

    private let driver: ChildProcess
    private let driverURL: String
    private let session: String
    private let profile: URL
    private let transport = CurlTransport(configuration: CurlTransport.Configuration(requestTimeout: Browser.patience))
    /// Where screenshots are kept.
    public let artifacts: URL
    /// How long a step may take before it counts as failed: a bound that only ends a broken run,
    /// never one a slow or busy machine reaches (ten minutes).
    public static let patience: Duration = .seconds(600)

    /// Starts chromedriver on a free port and a headless Chromium session whose window is
    /// `width` × `height`; screenshots go to `artifacts`.
    public init(artifacts: URL, width: Int = 1200, height: Int = 900) async throws {
        self.artifacts = artifacts
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("photoledger-chromium-\(UUID().uuidString)")
        driver = ChildProcess()
        driver.executableURL = URL(fileURLWithPath: Self.chromedriver)
        // Port 0: chromedriver binds a free port itself and says which, so no other program
        // (another test, run at the same time) can take the port between a probe and its bind.
        driver.arguments = ["--port=0", "--allowed-ips=127.0.0.1"]
        let output = Pipe()
        driver.standardOutput = output
        driver.standardError = FileHandle.nullDevice
        try driver.run()
        let port: Int
        do {
            port = try await Self.announcedPort(output.fileHandleForReading)
        } catch {
            Self.stop(driver)
            throw error
        }
        driverURL = "http://127.0.0.1:\(port)"
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": Self.chromium,
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            "--window-size=\(width),\(height)",
                            "--user-data-dir=\(profile.path)", "--no-first-run", "--disable-extensions", "--disable-background-networking",
                        ],
                    ],
                ]
            ]
        ]
        do {
            let created = try await Self.command(transport, .post, "\(driverURL)/session", capabilities)
            guard let value = created as? [String: Any], let session = value["sessionId"] as? String else {
                throw BrowserError("chromedriver did not start a session: \(String(describing: created))")
            }
            self.session = session
        } catch {
            Self.stop(driver)
            throw error
        }
    }

    /// Ends chromedriver (it does not always end on SIGTERM while it holds connections).
    private static func stop(_ driver: ChildProcess) {
        kill(driver.processIdentifier, SIGKILL)
        driver.waitUntilExit()
    }

    /// Ends the session and chromedriver.
    public func quit() async {
        _ = try? await Self.command(transport, .delete, "\(driverURL)/session/\(session)", nil)
        Self.stop(driver)
        try? FileManager.default.removeItem(at: profile)
    }

    // MARK: Commands

    /// Navigates to `url` and waits for its document to load.
    public func open(_ url: URL) async throws { _ = try await send(.post, "url", ["url": url.absoluteString]) }

    /// Runs `script` (a function body; `arguments` holds the arguments) and returns its value.
    @discardableResult
    public func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await send(.post, "execute/sync", ["script": script, "args": arguments])
    }

    /// The element `selector` finds (its reference).
    public func element(_ selector: String) async throws -> [String: String] {
        let value = try await send(.post, "element", ["using": "css selector", "value": selector])
        guard let reference = value as? [String: String] else { throw BrowserError("no element matches \(selector)") }
        return reference
    }

    /// Clicks the element `selector` finds, as a person would.
    public func click(_ selector: String) async throws {
        let reference = try await element(selector)
        _ = try await send(.post, "element/\(reference.values.first ?? "")/click", [:])
    }

    /// Input actions (pointer, keys) as the protocol's `actions` list.
    public func perform(_ actions: [[String: Any]]) async throws {
        _ = try await send(.post, "actions", ["actions": actions])
        _ = try await send(.delete, "actions", nil)
    }

    /// Drags the element `from` and drops it on `to` with a mouse, in small steps.
    public func drag(_ from: String, onto to: String) async throws {
        let source = try await element(from)
        let target = try await element(to)
        try await perform([
            [
                "type": "pointer", "id": "mouse", "parameters": ["pointerType": "mouse"],
                "actions": [
                    ["type": "pointerMove", "origin": source, "x": 0, "y": 0, "duration": 0],
                    ["type": "pointerDown", "button": 0],
                    ["type": "pointerMove", "origin": source, "x": 12, "y": 4, "duration": 100],
                    ["type": "pointerMove", "origin": target, "x": -4, "y": 0, "duration": 200],
                    ["type": "pointerMove", "origin": target, "x": 0, "y": 0, "duration": 100],
                    ["type": "pointerUp", "button": 0],
                ],
            ]
        ])
    }

    /// Presses `key` (a WebDriver key code such as "\u{E014}", ArrowRight) with Alt held.
    public func pressWithAlt(_ key: String) async throws {
        let alt = "\u{E00A}"
        try await perform([
            [
                "type": "key", "id": "keyboard",
                "actions": [
                    ["type": "keyDown", "value": alt], ["type": "keyDown", "value": key], ["type": "keyUp", "value": key],
                    ["type": "keyUp", "value": alt],
                ],
            ]
        ])
    }

    /// Writes a PNG of the page to .build/test-artifacts/web/`name`.png.
    public func screenshot(_ name: String) async throws {
        guard let base64 = try await send(.get, "screenshot", nil) as? String, let data = Data(base64Encoded: base64) else {
            throw BrowserError("chromedriver sent no screenshot")
        }
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        try data.write(to: artifacts.appendingPathComponent("\(name).png"))
    }

    /// Waits until `script` returns true in the page, failing after `deadline` with `what`, the
    /// script's last value and a screenshot.
    public func waitFor(_ what: String, _ script: String, _ arguments: [Any] = [], deadline: Duration = Browser.patience) async throws {
        var last: Any?
        do {
            try await Self.waitUntil(what, deadline: deadline) { [self] in
                last = try? await execute(script, arguments)
                return last as? Bool == true
            }
        } catch {
            try? await screenshot("timeout-\(what.filter { $0.isLetter || $0.isNumber })")
            throw BrowserError("\(error) (the page's last answer: \(String(describing: last)))")
        }
    }

    // MARK: Plumbing

    private func send(_ method: HTTPMethod, _ path: String, _ body: [String: Any]?) async throws -> Any? {
        try await Self.command(transport, method, "\(driverURL)/session/\(session)/\(path)", body)
    }

    private static func command(_ transport: CurlTransport, _ method: HTTPMethod, _ url: String, _ body: [String: Any]?) async throws
        -> Any?
    {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        let bytes = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
        let response = try await transport.send(
            HTTPRequest(method: method, url: URL(string: url)!, headers: headers, body: .bytes(bytes), timeout: patience))
        let decoded = try? JSONSerialization.jsonObject(with: Data(response.body.bytes), options: [.fragmentsAllowed]) as? [String: Any]
        guard response.isSuccess else {
            let error = decoded?["value"] as? [String: Any]
            throw BrowserError(
                "WebDriver \(method) \(url) failed with \(response.status): \(error?["message"] as? String ?? String(decoding: response.body.bytes, as: UTF8.self))"
            )
        }
        let value = decoded?["value"]
        return value is NSNull ? nil : value
    }

    /// Polls `condition` every 50 ms until it holds, or throws after `deadline`.
    public static func waitUntil(_ what: String, deadline: Duration, _ condition: () async throws -> Bool) async throws {
        let clock = ContinuousClock()
        let end = clock.now + deadline
        while true {
            if try await condition() { return }
            if clock.now >= end { throw BrowserError("timed out after \(deadline) waiting for: \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Reads chromedriver's standard output until it says which port it listens on, then goes
    /// on reading it (on a thread of its own), so that chromedriver never blocks on a full pipe.
    private static func announcedPort(_ output: FileHandle) async throws -> Int {
        let announcement = PortAnnouncement()
        let timer = Task {
            try? await Task.sleep(for: patience)
            announcement.finish(.failure(BrowserError("chromedriver did not say within \(patience) which port it listens on")))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            announcement.start(continuation)
            let reader = Thread {
                var text = ""
                while true {
                    let data = output.availableData
                    if data.isEmpty { break }
                    guard !announcement.isFinished else { continue }
                    text += String(decoding: data, as: UTF8.self)
                    if let port = Self.port(announcedIn: text) { announcement.finish(.success(port)) }
                }
                announcement.finish(.failure(BrowserError("chromedriver ended without saying which port it listens on: \(text)")))
            }
            reader.name = "chromedriver output"
            reader.start()
        }
    }

    /// The port in chromedriver's "ChromeDriver was started successfully on port 45623." line.
    static func port(announcedIn text: String) -> Int? {
        guard let marker = text.range(of: "started successfully on port ") else { return nil }
        let digits = text[marker.upperBound...].prefix { $0.isASCII && $0.isNumber }
        guard digits.count < text[marker.upperBound...].count, let port = Int(digits), port > 0 else { return nil }
        return port
    }
}

/// The port chromedriver announces, handed to the one task waiting for it.
private final class PortAnnouncement: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Int, any Error>?, finished: Bool)>((nil, false))

    var isFinished: Bool { state.withLock { $0.finished } }

    func start(_ continuation: CheckedContinuation<Int, any Error>) {
        let early = state.withLock { state -> Bool in
            guard !state.finished else { return true }
            state.continuation = continuation
            return false
        }
        if early { continuation.resume(throwing: BrowserError("chromedriver's output ended before it was read")) }
    }

    func finish(_ result: Result<Int, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Int, any Error>? in
            guard !state.finished else { return nil }
            state.finished = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}

/// A browser step that failed.
public struct BrowserError: Error, CustomStringConvertible {
    /// What failed.
    public let description: String
    init(_ description: String) { self.description = description }
}
