import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

@Suite("Compaction watermark endpoint")
struct WatermarkTests {
    /// `GET …/watermark` of `library` with `device`'s token, over loopback.
    static func watermark(_ fixture: ServerFixture, _ device: String? = "anna-phone", library: String = "family") async throws -> Reply {
        try await fixture.client(device).send("GET", SyncRoutes.watermark(library: library))
    }

    /// The same request handled in this process, without sockets.
    static func inProcess(_ fixture: ServerFixture, token: String?, library: String = "family", method: String = "GET") -> Reply {
        let response = fixture.server.respond(
            to: RequestHead(method: method, path: SyncRoutes.watermark(library: library), authorization: token.map { "Bearer \($0)" }),
            body: [])
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name] = value }
        guard case .bytes(let bytes) = response.body else { return Reply(status: response.status, headers: headers, body: []) }
        return Reply(status: response.status, headers: headers, body: bytes)
    }

    @Test("the watermark is the lowest position pulled by the devices that can pull; one that never pulled pins it to 0")
    func lowestPulledPosition() async throws {
        let fixture = try ServerFixture()
        var anna = EventFactory(device: "anna-phone")
        _ = try await fixture.client().pushResponse(anna.make(10))
        // anna-phone, ben-laptop and the readOnly frame count; the addOnly kiosk never pulls.
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self)
                == .init(watermark: 0, lastServerSequence: 10, deviceCount: 3))
        for since in [0, 4, 8, 10] { #expect(try await fixture.client().pull(since: Int64(since), limit: 4).status == 200) }
        #expect(try await fixture.client("ben-laptop").pull(since: 6).status == 200)
        #expect(try await Self.watermark(fixture).decode(CompactionWatermark.self).watermark == 0, "the frame never pulled")
        #expect(try await fixture.client("frame").pull(since: 8).status == 200)
        let reply = try await Self.watermark(fixture, "frame")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        #expect(try reply.decode(CompactionWatermark.self) == .init(watermark: 6, lastServerSequence: 10, deviceCount: 3))
        #expect(String(decoding: reply.body, as: UTF8.self) == #"{"watermark":6,"lastServerSeq":10,"devices":3}"#)
        // A device may go back (it pulls from an earlier position again): the watermark follows.
        #expect(try await fixture.client("ben-laptop").pull(since: 2).status == 200)
        #expect(try await Self.watermark(fixture).decode(CompactionWatermark.self).watermark == 2)
        // Positions past the head do not lift the watermark past it.
        for device in ["anna-phone", "ben-laptop", "frame"] {
            #expect(try await fixture.client(device).pull(since: 10_000).status == 200)
        }
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self)
                == .init(watermark: 10, lastServerSequence: 10, deviceCount: 3))
    }

    @Test("a device whose every token is revoked no longer holds the watermark; a new token counts it again")
    func revokedDevices() async throws {
        let fixture = try ServerFixture()
        var anna = EventFactory(device: "anna-phone")
        _ = try await fixture.client().pushResponse(anna.make(5))
        #expect(try await fixture.client().pull(since: 5).status == 200)
        #expect(try await fixture.client("ben-laptop").pull(since: 3).status == 200)
        #expect(try await fixture.client("frame").pull(since: 1).status == 200)
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self) == .init(watermark: 1, lastServerSequence: 5, deviceCount: 3)
        )
        #expect(try fixture.store.revokeTokens(library: "family", device: "frame", at: 2) == 1)
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self) == .init(watermark: 3, lastServerSequence: 5, deviceCount: 2)
        )
        #expect(try fixture.store.revokeTokens(library: "family", device: "ben-laptop", at: 3) == 1)
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self) == .init(watermark: 5, lastServerSequence: 5, deviceCount: 1)
        )
        // Given a new token, the frame counts again from where it stopped: the watermark goes back.
        fixture.tokens["frame"] = try fixture.issue(device: "frame", scope: .readOnly)
        #expect(
            try await Self.watermark(fixture, "frame").decode(CompactionWatermark.self)
                == .init(watermark: 1, lastServerSequence: 5, deviceCount: 2))
    }

    @Test("devices with only addOnly tokens never count; with another scope besides, they do")
    func addOnlyDevices() async throws {
        let fixture = try ServerFixture()
        var kiosk = EventFactory(device: "kiosk")
        _ = try await fixture.client("kiosk").pushResponse(kiosk.make(3), device: "kiosk")
        for device in ["anna-phone", "ben-laptop", "frame"] { #expect(try await fixture.client(device).pull(since: 3).status == 200) }
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self) == .init(watermark: 3, lastServerSequence: 3, deviceCount: 3)
        )
        fixture.tokens["kiosk-reader"] = try fixture.issue(device: "kiosk", scope: .readOnly)
        #expect(
            try await Self.watermark(fixture).decode(CompactionWatermark.self) == .init(watermark: 0, lastServerSequence: 3, deviceCount: 4)
        )
    }

    @Test("a library where no device counts reports its head")
    func noDeviceCounts() async throws {
        let fixture = try ServerFixture()
        var factory = EventFactory(device: "work-phone")
        _ = try await fixture.client("work-phone").push(factory.make(4), device: "work-phone", library: "work")
        #expect(
            try await Self.watermark(fixture, "work-phone", library: "work").decode(CompactionWatermark.self)
                == .init(watermark: 0, lastServerSequence: 4, deviceCount: 1))
        let workToken = try #require(fixture.tokens["work-phone"])
        let work = try #require(try fixture.store.authenticate(tokenHash: DeviceToken.hash(workToken)))
        #expect(try fixture.store.revokeTokens(library: "work", device: "work-phone", at: 2) == 1)
        #expect(
            try fixture.store.compactionWatermark(libraryID: work.libraryID) == .init(watermark: 4, lastServerSequence: 4, deviceCount: 0))
        #expect(throws: ServerStoreError.self) { try fixture.store.compactionWatermark(libraryID: 999) }
    }

    @Test("errors: no token, a wrong or revoked token 401; addOnly, another library or an unknown one 403; other methods 405")
    func errors() async throws {
        let fixture = try ServerFixture()
        let none = try await Self.watermark(fixture, nil)
        #expect(none.status == 401 && none.errorCode == "unauthorized")
        #expect(none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        let wrong = try await fixture.client(nil).with(token: "plt_not-a-real-token").send("GET", SyncRoutes.watermark(library: "family"))
        #expect(wrong.status == 401 && wrong.errorMessage.contains("unknown or revoked"))
        let kiosk = try await Self.watermark(fixture, "kiosk")
        #expect(kiosk.status == 403 && kiosk.errorCode == "forbidden")
        #expect(kiosk.errorMessage.contains("compaction watermark"))
        // A token never tells whether a library it is not for exists.
        let other = try await Self.watermark(fixture, "work-phone", library: "family")
        let unknown = try await Self.watermark(fixture, "work-phone", library: "no-such-library")
        #expect(other.status == 403 && unknown.status == 403)
        #expect(other.body == unknown.body)
        let post = try await fixture.client().send("POST", SyncRoutes.watermark(library: "family"), body: Array("{}".utf8))
        #expect(post.status == 405 && post.header("Allow") == "GET")
        #expect(try fixture.store.revokeTokens(library: "family", device: "anna-phone", at: 2) == 1)
        #expect(try await Self.watermark(fixture).status == 401)
    }

    @Test("in process: the same answers without sockets")
    func inProcess() throws {
        let fixture = try ServerFixture()
        let store = fixture.store
        let annaToken = try #require(fixture.tokens["anna-phone"])
        let credential = try #require(try store.authenticate(tokenHash: DeviceToken.hash(annaToken)))
        var anna = EventFactory(device: "anna-phone")
        let candidates = anna.make(7).map { PushCandidate.accept($0) }
        #expect(try store.push(candidates, for: credential, receivedAt: fixture.clock.read()).lastDeviceSequence == 7)
        let token = { (device: String) in fixture.tokens[device] }
        #expect(
            try Self.inProcess(fixture, token: token("anna-phone")).decode(CompactionWatermark.self)
                == .init(watermark: 0, lastServerSequence: 7, deviceCount: 3))
        for (device, since) in [("anna-phone", 7), ("ben-laptop", 5), ("frame", 4)] {
            let pull = fixture.server.respond(
                to: RequestHead(
                    method: "GET", path: SyncRoutes.events(library: "family"), authorization: "Bearer \(token(device)!)",
                    query: ["since": "\(since)"]), body: [])
            #expect(pull.status == 200)
        }
        #expect(
            try Self.inProcess(fixture, token: token("ben-laptop")).decode(CompactionWatermark.self)
                == .init(watermark: 4, lastServerSequence: 7, deviceCount: 3))
        #expect(try store.revokeTokens(library: "family", device: "frame", at: 2) == 1)
        #expect(
            try Self.inProcess(fixture, token: token("ben-laptop")).decode(CompactionWatermark.self)
                == .init(watermark: 5, lastServerSequence: 7, deviceCount: 2))
        #expect(Self.inProcess(fixture, token: token("frame")).status == 401)
        #expect(Self.inProcess(fixture, token: "plt_bogus").status == 401)
        #expect(Self.inProcess(fixture, token: nil).status == 401)
        #expect(Self.inProcess(fixture, token: token("kiosk")).status == 403)
        let unknown = Self.inProcess(fixture, token: token("anna-phone"), library: "no-such-library")
        #expect(unknown.status == 403 && unknown.errorCode == "forbidden")
        #expect(Self.inProcess(fixture, token: token("anna-phone"), method: "DELETE").status == 405)
    }
}
