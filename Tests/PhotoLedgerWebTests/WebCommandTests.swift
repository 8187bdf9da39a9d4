import Foundation
import PhotoLedgerTestSupport
import SyncTransport
import TestSupportKit
import Testing

@Suite("photoledger web")
struct WebCommandTests {
    /// Runs `photoledger` with `arguments`; returns the process and its output pipes.
    private func start(_ arguments: [String], environment: [String: String] = [:]) throws -> (ChildProcess, Pipe, Pipe) {
        let process = ChildProcess()
        process.executableURL = try builtExecutable("photoledger")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let (output, errors) = (Pipe(), Pipe())
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        return (process, output, errors)
    }

    @Test func itServesUntilSIGTERMAndPrintsTheLaunchAddress() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let (process, output, _) = try start(["web", "--library", fixture.library.url.path, "--listen", "127.0.0.1:0", "--json"])
        // The first line is the JSON object with the addresses; read it as it comes.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line += byte }
        let addresses = try #require(try JSONSerialization.jsonObject(with: line) as? [String: String])
        let launch = try #require(addresses["launchURL"].flatMap(URL.init(string:)))
        #expect(launch.absoluteString.hasPrefix(try #require(addresses["url"])) && launch.query?.hasPrefix("token=") == true)
        let response = try await CurlTransport().send(HTTPRequest(url: launch))
        #expect(response.status == 303 && response.headers["Set-Cookie"] != nil)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    @Test func listeningBeyondLoopbackWithoutAPasswordIsRefused() throws {
        let fixture = try WebFixture(photoCount: 1)
        let (process, _, errors) = try start(
            ["web", "--library", fixture.library.url.path, "--listen", "0.0.0.0:0"], environment: ["PHOTOLEDGER_WEB_PASSWORD": ""])
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 1 && text.contains("no password is set") && text.contains("--password-file"), "\(text)")
        let empty = fixture.directory.file("empty-password")
        try Data().write(to: empty)
        let (second, _, secondErrors) = try start([
            "web", "--library", fixture.library.url.path, "--listen", "0.0.0.0:0", "--password-file", empty.path,
        ])
        second.waitUntilExit()
        let secondText = String(decoding: secondErrors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(second.terminationStatus == 1 && secondText.contains("is empty"), "\(secondText)")
        let (third, _, thirdErrors) = try start(["web", "--library", fixture.library.url.path, "--listen", "localhost"])
        third.waitUntilExit()
        let thirdText = String(decoding: thirdErrors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(third.terminationStatus == 64 && thirdText.contains("--listen"), "\(thirdText)")
    }

    @Test func itListensOnIPv6LoopbackAndTakesSessionTimes() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let (process, output, _) = try start([
            "web", "--library", fixture.library.url.path, "--listen", "[::1]:0", "--session-idle", "30m", "--session-lifetime", "2d",
            "--json",
        ])
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line += byte }
        let addresses = try #require(try JSONSerialization.jsonObject(with: line) as? [String: String])
        let url = try #require(addresses["url"])
        #expect(url.hasPrefix("http://[::1]:") && !url.hasPrefix("http://[::1]:0/"), "\(url)")
        let launch = try #require(addresses["launchURL"].flatMap(URL.init(string:)))
        let response = try await CurlTransport().send(HTTPRequest(url: launch))
        #expect(response.status == 303 && response.headers["Set-Cookie"] != nil)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func aSessionTimeThatIsNotALengthOfTimeIsRefused() throws {
        let fixture = try WebFixture(photoCount: 1)
        for (option, value) in [("--session-idle", "0m"), ("--session-lifetime", "forever"), ("--session-idle", "12")] {
            let (process, _, errors) = try start(["web", "--library", fixture.library.url.path, "--listen", "127.0.0.1:0", option, value])
            process.waitUntilExit()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 64 && text.contains(option) && text.contains("followed by s, m, h or d"), "\(text)")
        }
    }
}
