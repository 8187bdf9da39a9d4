import Foundation
import PhotoLedger
import PhotoLedgerWeb
import SyncTransport
import Synchronization
import Testing

@Suite("Web view: who may reach it (Host, Origin, session, CSRF token, password)")
struct WebAccessTests {
    @Test func aForeignHostIsRefusedBeforeAnythingElse() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let session = try await fixture.logIn()
        for host in ["evil.example:\(fixture.server.port)", "127.0.0.1:1", "attacker.localhost.example"] {
            let response = try await fixture.send(.get, "/api/albums", headers: [("Host", host), ("Cookie", session.cookie)])
            let error = try WebFixture.error(response)
            #expect(response.status == 421 && error.code == "wrongHost", "\(host)")
            #expect(error.message.contains("'\(host.lowercased())' is not this server's address") && error.message.contains("--host-name"))
        }
        let login = try await fixture.send(
            .get, "/login?" + (fixture.server.launchURL.query ?? ""), headers: [("Host", "evil.example:\(fixture.server.port)")])
        #expect(login.status == 421 && login.headers["Set-Cookie"] == nil)
        let localhost = try await fixture.send(
            .get, "/api/albums", headers: [("Host", "localhost:\(fixture.server.port)"), ("Cookie", session.cookie)])
        #expect(localhost.status == 200)
    }

    @Test func aForeignOriginIsRefusedForReadsAndChanges() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let session = try await fixture.logIn()
        let read = try await fixture.send(.get, "/api/albums", headers: [("Origin", "https://evil.example"), ("Cookie", session.cookie)])
        #expect(try read.status == 403 && (WebFixture.error(read)).code == "foreignOrigin")
        let change = try await fixture.send(
            .post, "/api/assets/favorite",
            headers: [("Origin", "http://evil.example"), ("Cookie", session.cookie), ("X-CSRF-Token", session.csrfToken)],
            json: "{\"assets\":[\"\(fixture.photos[0])\"],\"value\":true}")
        let error = try WebFixture.error(change)
        #expect(change.status == 403 && error.code == "foreignOrigin" && error.message.contains("'http://evil.example'"))
        let crossSite = try await fixture.send(
            .post, "/api/assets/favorite",
            headers: [("Sec-Fetch-Site", "cross-site"), ("Cookie", session.cookie), ("X-CSRF-Token", session.csrfToken)],
            json: "{\"assets\":[\"\(fixture.photos[0])\"],\"value\":true}")
        #expect(try crossSite.status == 403 && (WebFixture.error(crossSite)).code == "foreignOrigin")
        #expect(try fixture.asset(fixture.photos[0]).isFavorite == false)
    }

    @Test func pagesAndChangesNeedASessionAndChangesItsCSRFToken() async throws {
        let fixture = try WebFixture(photoCount: 1)
        let anonymous = try await fixture.send(.get, "/api/albums")
        let error = try WebFixture.error(anonymous)
        #expect(anonymous.status == 401 && error.code == "noSession" && error.message.contains("token that 'photoledger web' printed"))
        let page = try await fixture.send(.get, "/")
        #expect(page.status == 303 && page.headers["Location"] == "/login")
        let thumbnail = try await fixture.send(.get, "/thumb/\(fixture.photos[0])")
        #expect(thumbnail.status == 401)
        let body = "{\"assets\":[\"\(fixture.photos[0])\"],\"value\":true}"
        let noSession = try await fixture.send(.post, "/api/assets/favorite", headers: [("X-CSRF-Token", "x")], json: body)
        #expect(noSession.status == 401)
        let session = try await fixture.logIn()
        let noToken = try await fixture.send(.post, "/api/assets/favorite", headers: [("Cookie", session.cookie)], json: body)
        let missing = try WebFixture.error(noToken)
        #expect(noToken.status == 403 && missing.code == "missingCSRFToken" && missing.message.contains("X-CSRF-Token"))
        let wrongToken = try await fixture.send(
            .post, "/api/assets/favorite", headers: [("Cookie", session.cookie), ("X-CSRF-Token", String(repeating: "0", count: 64))],
            json: body)
        #expect(try wrongToken.status == 403 && (WebFixture.error(wrongToken)).code == "wrongCSRFToken")
        let forged = try await fixture.send(
            .get, "/api/albums", headers: [("Cookie", "photoledger_session_\(fixture.server.port)=\(session.csrfToken)")])
        #expect(forged.status == 401)
        #expect(try fixture.asset(fixture.photos[0]).isFavorite == false)
        let accepted = try await fixture.change("/api/assets/favorite", body, session: session)
        #expect(try accepted.status == 200 && (fixture.asset(fixture.photos[0]).isFavorite))
        let logout = try await fixture.change("/logout", "{}", session: session)
        #expect(logout.status == 200)
        #expect(try await fixture.send(.get, "/api/albums", headers: [("Cookie", session.cookie)]).status == 401)
    }

    @Test func theLaunchTokenOpensASessionAndAWrongOneDoesNot() async throws {
        let fixture = try WebFixture(photoCount: 1)
        #expect(fixture.server.launchURL.absoluteString.hasPrefix("http://127.0.0.1:\(fixture.server.port)/login?token="))
        let wrong = try await fixture.send(.get, "/login?token=" + String(repeating: "a", count: 64))
        #expect(wrong.status == 403 && wrong.headers["Set-Cookie"] == nil)
        #expect(String(decoding: wrong.body.bytes, as: UTF8.self).contains("not the one of this server"))
        let launch = try await fixture.send(.get, "/login?" + (fixture.server.launchURL.query ?? ""))
        let cookie = try #require(launch.headers["Set-Cookie"])
        #expect(launch.status == 303 && launch.headers["Location"] == "/")
        #expect(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict")
                && cookie.hasPrefix("photoledger_session_\(fixture.server.port)="))
        let session = try await fixture.logIn()
        let page = try await fixture.send(.get, "/", headers: [("Cookie", session.cookie)])
        #expect(page.status == 200 && page.headers["Content-Security-Policy"]?.contains("default-src 'none'") == true)
        #expect(page.headers["X-Frame-Options"] == "DENY")
    }

    @Test func listeningBeyondLoopbackNeedsAPasswordAndThePasswordLogsIn() async throws {
        let fixture = try WebFixture(photoCount: 1, configuration: WebServer.Configuration(password: "correct horse"))
        #expect {
            _ = try WebServer(library: fixture.library, configuration: WebServer.Configuration(address: "0.0.0.0"))
        } throws: { error in
            let error = error as? WebServerError
            return error?.message.contains("no password is set") == true && error?.hint.contains("--password-file") == true
        }
        #expect {
            _ = try WebServer(library: fixture.library, configuration: WebServer.Configuration(address: "localhost"))
        } throws: { ($0 as? WebServerError)?.message.contains("not an IPv4 or IPv6 address") == true }
        let wrong = try await fixture.send(.post, "/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], json: nil)
        #expect(wrong.status == 403)
        var fields = HTTPHeaders()
        fields.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let request = HTTPRequest(
            method: .post, url: URL(string: "http://\(fixture.host)/login")!, headers: fields,
            body: .bytes(Array("password=correct+horse".utf8)))
        let right = try await fixture.transport.send(request)
        #expect(right.status == 303 && right.headers["Set-Cookie"] != nil)
        let form = try await fixture.send(.get, "/login")
        #expect(String(decoding: form.body.bytes, as: UTF8.self).contains("type=\"password\""))
    }

    @Test func aTakenPortIsAClearError() async throws {
        let fixture = try WebFixture(photoCount: 1)
        #expect {
            _ = try WebServer(library: fixture.library, configuration: WebServer.Configuration(port: fixture.server.port))
        } throws: { error in
            (error as? WebServerError)?.description.contains("cannot listen on 127.0.0.1:\(fixture.server.port)") == true
        }
    }
}

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))

    func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }

    var read: @Sendable () -> Date { { self.now.withLock { $0 } } }
}

@Suite("Web view: sessions end after an idle time and a lifetime, or by logging out")
struct WebSessionTests {
    private func fixture(_ clock: ManualClock) throws -> WebFixture {
        try WebFixture(
            photoCount: 1,
            configuration: WebServer.Configuration(
                sessionIdleTimeout: .seconds(1800), sessionLifetime: .seconds(8 * 3600), clock: clock.read))
    }

    @Test func aSessionUnusedForItsIdleTimeEnds() async throws {
        let clock = ManualClock()
        let fixture = try fixture(clock)
        let session = try await fixture.logIn()
        for _ in 0..<3 {
            clock.advance(by: 29 * 60)  // each use starts the idle time again
            #expect(try await fixture.send(.get, "/api/albums", headers: [("Cookie", session.cookie)]).status == 200)
        }
        clock.advance(by: 30 * 60)
        let expired = try await fixture.send(.get, "/api/albums", headers: [("Cookie", session.cookie)])
        let error = try WebFixture.error(expired)
        #expect(expired.status == 401 && error.code == "sessionExpired", "\(error)")
        #expect(error.message.contains("after 30 minutes without use") && error.message.contains("log in at /login"), "\(error.message)")
        // It stays ended, and says so; the page sends the browser to the login page, which says why.
        let again = try await fixture.send(.get, "/api/albums", headers: [("Cookie", session.cookie)])
        #expect(try again.status == 401 && WebFixture.error(again).code == "sessionExpired")
        let page = try await fixture.send(.get, "/", headers: [("Cookie", session.cookie)])
        #expect(page.status == 303 && page.headers["Location"] == "/login?expired=1")
        let login = try await fixture.send(.get, "/login?expired=1")
        #expect(String(decoding: login.body.bytes, as: UTF8.self).contains("Your session has ended"))
        let change = try await fixture.change(
            "/api/assets/favorite", "{\"assets\":[\"\(fixture.photos[0])\"],\"value\":true}", session: session)
        #expect(try change.status == 401 && WebFixture.error(change).code == "sessionExpired")
        #expect(try fixture.asset(fixture.photos[0]).isFavorite == false)
        // A new session works.
        let fresh = try await fixture.logIn()
        #expect(try await fixture.send(.get, "/api/albums", headers: [("Cookie", fresh.cookie)]).status == 200)
    }

    @Test func aSessionEndsAtItsLifetimeEvenInUse() async throws {
        let clock = ManualClock()
        let fixture = try fixture(clock)
        let session = try await fixture.logIn()
        for _ in 0..<23 {
            clock.advance(by: 20 * 60)
            #expect(try await fixture.send(.get, "/api/status", headers: [("Cookie", session.cookie)]).status == 200)
        }
        clock.advance(by: 20 * 60)  // 8 hours since it was opened
        let expired = try await fixture.send(.get, "/api/status", headers: [("Cookie", session.cookie)])
        let error = try WebFixture.error(expired)
        #expect(
            expired.status == 401 && error.code == "sessionExpired" && error.message.contains("8 hours after it was opened"), "\(error)")
    }

    @Test func loggingOutEndsTheSessionAndRemovesTheCookie() async throws {
        let clock = ManualClock()
        let fixture = try fixture(clock)
        let session = try await fixture.logIn()
        let other = try await fixture.logIn()
        let logout = try await fixture.change("/logout", "{}", session: session)
        #expect(logout.status == 200 && logout.headers["Set-Cookie"]?.contains("Max-Age=0") == true)
        let after = try await fixture.send(.get, "/api/albums", headers: [("Cookie", session.cookie)])
        #expect(try after.status == 401 && WebFixture.error(after).code == "noSession")
        // Logging out needs the CSRF token, like every change, and ends only its own session.
        let forged = try await fixture.send(.post, "/logout", headers: [("Cookie", other.cookie)], json: "{}")
        #expect(try forged.status == 403 && WebFixture.error(forged).code == "missingCSRFToken")
        #expect(try await fixture.send(.get, "/api/albums", headers: [("Cookie", other.cookie)]).status == 200)
    }

    @Test func aSessionTimeThatIsNotPositiveIsRefused() throws {
        let fixture = try WebFixture(photoCount: 1)
        #expect {
            _ = try WebServer(library: fixture.library, configuration: WebServer.Configuration(sessionIdleTimeout: .zero))
        } throws: { error in
            let error = error as? WebServerError
            return error?.message.contains("session idle time") == true && error?.hint.contains("positive") == true
        }
    }
}

@Suite("Web view on IPv6 loopback")
struct WebIPv6Tests {
    @Test func itListensOnIPv6LoopbackAndChecksBracketedHosts() async throws {
        let fixture = try WebFixture(photoCount: 1, configuration: WebServer.Configuration(address: "[::1]"))
        let port = fixture.server.port
        #expect(fixture.server.url.absoluteString == "http://[::1]:\(port)/")
        #expect(fixture.server.launchURL.absoluteString.hasPrefix("http://[::1]:\(port)/login?token="))
        let session = try await fixture.logIn()
        for host in ["[::1]:\(port)", "[0:0:0:0:0:0:0:1]:\(port)", "localhost:\(port)"] {
            let response = try await fixture.send(.get, "/api/albums", headers: [("Host", host), ("Cookie", session.cookie)])
            #expect(response.status == 200, "\(host)")
        }
        for host in ["[::2]:\(port)", "[::1]:\(port &+ 1)", "::1:\(port)", "[::1", "evil.example:\(port)"] {
            let response = try await fixture.send(.get, "/api/albums", headers: [("Host", host), ("Cookie", session.cookie)])
            #expect(try response.status == 421 && WebFixture.error(response).code == "wrongHost", "\(host)")
        }
        let sameOrigin = try await fixture.send(
            .get, "/api/albums", headers: [("Origin", "http://[::1]:\(port)"), ("Cookie", session.cookie)])
        #expect(sameOrigin.status == 200)
        let foreign = try await fixture.send(
            .get, "/api/albums", headers: [("Origin", "http://[::2]:\(port)"), ("Cookie", session.cookie)])
        #expect(foreign.status == 403)
    }

    @Test func onlyLoopbackIPv6GoesWithoutAPassword() throws {
        let fixture = try WebFixture(photoCount: 1)
        for address in ["::", "[::]", "fd00::2"] {
            #expect {
                _ = try WebServer(library: fixture.library, configuration: WebServer.Configuration(address: address))
            } throws: { error in
                (error as? WebServerError)?.message.contains("no password is set") == true
            }
        }
        #expect(WebServer.Configuration(address: "::1").isLoopback && WebServer.Configuration(address: "[::ffff:127.0.0.1]").isLoopback)
        #expect(!WebServer.Configuration(address: "::").isLoopback && !WebServer.Configuration(address: "[127.0.0.1]").isLoopback)
        #expect {
            _ = try WebServer(library: fixture.library, configuration: WebServer.Configuration(address: "[::1"))
        } throws: { error in
            (error as? WebServerError)?.message.contains("'[::1' is not an IPv4 or IPv6 address") == true
        }
    }
}
