import Foundation
import LedgerCore
import Synchronization

/// Who may use the web view, checked on every request before any route runs.
///
/// Loopback is not private: every local process can connect, and every web page the person opens
/// can make the browser send requests to it. So:
/// - the `Host` header must name this server (a page of another site that made its name resolve
///   to 127.0.0.1, DNS rebinding, sends its own name);
/// - an `Origin` header, which browsers send with cross-site and state-changing requests, must be
///   this server's own;
/// - every page and API call needs a session: a cookie set by opening the launch URL printed at
///   start (its token is a secret of the terminal), or by the password when one is set;
/// - every change also needs the session's CSRF token in an `X-CSRF-Token` header, which only the
///   server's own pages can read.
final class WebAccess: Sendable {
    /// A session: its cookie value and the CSRF token its pages send with changes.
    struct Session: Sendable {
        let id: String
        let csrfToken: String
    }

    /// The `host:port` values the `Host` header may carry (lower case).
    let allowedHosts: Set<String>
    /// The origins (`http://host:port`) requests may come from.
    let allowedOrigins: Set<String>
    /// The cookie's name (per port: browsers share cookies between the ports of one host).
    let cookieName: String
    /// The token of the launch URL.
    let launchToken: String
    private let passwordDigest: [UInt8]?
    private let sessions = Mutex([String: Session]())
    private let failedLogins = Mutex(0)

    /// - Parameters:
    ///   - hosts: the names this server answers to (`127.0.0.1`, `localhost`, the listening
    ///     address, names given with `--host-name`).
    ///   - port: the port it listens on.
    ///   - password: the password a login form takes, nil when there is none.
    init(hosts: [String], port: UInt16, password: String?) {
        let names = Set(hosts.map { $0.lowercased() })
        allowedHosts = Set(names.map { "\($0):\(port)" })
        allowedOrigins = Set(allowedHosts.map { "http://\($0)" })
        cookieName = "photoledger_session_\(port)"
        launchToken = Self.randomToken()
        passwordDigest = password.map { SHA256.hash(Array($0.utf8)) }
    }

    /// Refuses a request whose `Host` or `Origin` is not this server's, or (for a change) whose
    /// `Sec-Fetch-Site` says another site sent it.
    func checkAddressing(_ request: WebRequest) throws(WebError) {
        guard let host = request.header("Host")?.lowercased(), !host.isEmpty else {
            throw WebError(400, "missingHost", "the request has no Host header; send the address of this server, such as \(exampleHost)")
        }
        guard allowedHosts.contains(host) else {
            throw WebError(
                421, "wrongHost",
                "the Host header '\(host)' is not this server's address (\(allowedHosts.sorted().joined(separator: ", "))); "
                    + "open the address printed by 'photoledger web' (another name for this machine can be allowed with --host-name)")
        }
        if let origin = request.header("Origin"), !allowedOrigins.contains(origin.lowercased()) {
            throw WebError(
                403, "foreignOrigin",
                "requests from the origin '\(origin)' are refused: only pages of this server (\(allowedOrigins.sorted().joined(separator: ", "))) may call it"
            )
        }
        if let site = request.header("Sec-Fetch-Site")?.lowercased(), site == "cross-site" || site == "same-site", request.method != "GET" {
            throw WebError(
                403, "foreignOrigin",
                "a change sent by another site (Sec-Fetch-Site: \(site)) is refused; make changes from the web view's own pages")
        }
    }

    /// The session of the request's cookie, or nil.
    func session(of request: WebRequest) -> Session? {
        guard let id = request.cookies[cookieName] else { return nil }
        return sessions.withLock { $0[id] }
    }

    /// The session a request must have.
    func requireSession(_ request: WebRequest) throws(WebError) -> Session {
        guard let session = session(of: request) else {
            throw WebError(
                401, "noSession",
                "no session: open the address with the token that 'photoledger web' printed (it sets a session cookie), or log in at /login"
            )
        }
        return session
    }

    /// Refuses a change without the session's CSRF token.
    func checkChange(_ request: WebRequest, session: Session) throws(WebError) {
        guard let token = request.header("X-CSRF-Token") else {
            throw WebError(
                403, "missingCSRFToken", "a change needs the X-CSRF-Token header of the session; make changes from the web view's pages")
        }
        guard Self.same(token, session.csrfToken) else {
            throw WebError(403, "wrongCSRFToken", "the X-CSRF-Token header does not match the session; reload the page and try again")
        }
    }

    /// A new session when `token` is the launch token.
    func logIn(launchToken token: String) -> Session? {
        guard Self.same(token, launchToken) else { return nil }
        return newSession()
    }

    /// A new session when `password` is the password; failures slow the next attempts down.
    func logIn(password: String) -> Session? {
        guard let passwordDigest else { return nil }
        let failures = failedLogins.withLock { $0 }
        if failures > 0 { Thread.sleep(forTimeInterval: min(Double(failures) * 0.25, 5)) }
        guard Self.same(SHA256.hash(Array(password.utf8)), passwordDigest) else {
            failedLogins.withLock { $0 += 1 }
            return nil
        }
        failedLogins.withLock { $0 = 0 }
        return newSession()
    }

    /// Whether a password login is possible.
    var hasPassword: Bool { passwordDigest != nil }

    /// Ends a session.
    func logOut(_ session: Session) { _ = sessions.withLock { $0.removeValue(forKey: session.id) } }

    /// The `Set-Cookie` value of a session.
    func cookie(for session: Session) -> String { "\(cookieName)=\(session.id); Path=/; HttpOnly; SameSite=Strict" }

    private var exampleHost: String { allowedHosts.sorted().first ?? "127.0.0.1" }

    private func newSession() -> Session {
        let session = Session(id: Self.randomToken(), csrfToken: Self.randomToken())
        sessions.withLock { $0[session.id] = session }
        return session
    }

    /// 32 bytes of the system's secure random generator, as hex.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Compares in time independent of where the texts differ.
    private static func same(_ a: String, _ b: String) -> Bool { same(Array(a.utf8), Array(b.utf8)) }

    private static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
