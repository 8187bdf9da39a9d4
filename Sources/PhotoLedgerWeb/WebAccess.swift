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
        /// When it was opened.
        let opened: Date
        /// When a request last used it.
        var lastUsed: Date
    }

    /// Why a request has no session.
    enum Absence: Sendable {
        /// No cookie, or one this server never gave (or ended by logging out).
        case none
        /// Unused for longer than the idle time.
        case idle
        /// Older than the lifetime.
        case tooOld
    }

    /// The `host:port` values the `Host` header may carry (lower case).
    let allowedHosts: Set<String>
    /// The origins (`http://host:port`) requests may come from.
    let allowedOrigins: Set<String>
    /// The cookie's name (per port: browsers share cookies between the ports of one host).
    let cookieName: String
    /// The token of the launch URL.
    let launchToken: String
    /// How long a session may go unused, in seconds.
    let idleTimeout: TimeInterval
    /// How long a session lasts at most, in seconds.
    let lifetime: TimeInterval
    private let clock: @Sendable () -> Date
    private let passwordDigest: [UInt8]?
    private let sessions = Mutex([String: Session]())
    /// Sessions that ended by time, and why, so the next request can say so (bounded).
    private let ended = Mutex([String: Absence]())
    private let failedLogins = Mutex(0)

    /// - Parameters:
    ///   - hosts: the names this server answers to (`127.0.0.1`, `localhost`, the listening
    ///     address, names given with `--host-name`).
    ///   - port: the port it listens on.
    ///   - password: the password a login form takes, nil when there is none.
    ///   - idleTimeout: how long a session may go unused, in seconds.
    ///   - lifetime: how long a session lasts at most, in seconds.
    ///   - clock: the time now.
    init(
        hosts: [String], port: UInt16, password: String?, idleTimeout: TimeInterval = 12 * 3600, lifetime: TimeInterval = 7 * 86_400,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        let names = Set(hosts.map { Self.normalizedName($0) })
        var hosts = Set(names.map { "\($0):\(port)" })
        if port == 80 { hosts.formUnion(names) }  // browsers leave the default port out
        allowedHosts = hosts
        allowedOrigins = Set(hosts.map { "http://\($0)" })
        self.idleTimeout = idleTimeout
        self.lifetime = lifetime
        self.clock = clock
        cookieName = "photoledger_session_\(port)"
        launchToken = Self.randomToken()
        passwordDigest = password.map { SHA256.hash(Array($0.utf8)) }
    }

    /// Refuses a request whose `Host` or `Origin` is not this server's, or (for a change) whose
    /// `Sec-Fetch-Site` says another site sent it.
    func checkAddressing(_ request: WebRequest) throws(WebError) {
        guard let header = request.header("Host"), !header.isEmpty else {
            throw WebError(400, "missingHost", "the request has no Host header; send the address of this server, such as \(exampleHost)")
        }
        let host = Self.normalizedHost(header)
        guard allowedHosts.contains(host) else {
            throw WebError(
                421, "wrongHost",
                "the Host header '\(host)' is not this server's address (\(allowedHosts.sorted().joined(separator: ", "))); "
                    + "open the address printed by 'photoledger web' (another name for this machine can be allowed with --host-name)")
        }
        if let origin = request.header("Origin"), !allowedOrigins.contains(Self.normalizedOrigin(origin)) {
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

    /// The session of the request's cookie (marked as used now), or nil.
    func session(of request: WebRequest) -> Session? {
        if case .success(let session) = lookUp(request) { return session }
        return nil
    }

    /// The session of the request's cookie, marked as used now, or why there is none. A
    /// session past its idle time or lifetime ends here.
    func lookUp(_ request: WebRequest) -> Result<Session, AbsenceError> {
        guard let id = request.cookies[cookieName] else { return .failure(AbsenceError(.none)) }
        let now = clock()
        let found = sessions.withLock { sessions -> Result<Session, AbsenceError> in
            guard var session = sessions[id] else { return .failure(AbsenceError(.none)) }
            let absence: Absence? =
                now.timeIntervalSince(session.opened) >= lifetime
                ? .tooOld : now.timeIntervalSince(session.lastUsed) >= idleTimeout ? .idle : nil
            if let absence {
                sessions[id] = nil
                return .failure(AbsenceError(absence))
            }
            session.lastUsed = max(session.lastUsed, now)
            sessions[id] = session
            return .success(session)
        }
        if case .failure(let error) = found {
            if error.absence != .none {
                ended.withLock { ended in
                    if ended.count >= 10_000 { ended.removeAll() }
                    ended[id] = error.absence
                }
            } else if let absence = ended.withLock({ $0[id] }) {
                return .failure(AbsenceError(absence))
            }
        }
        return found
    }

    /// Why a request has no session, as an error.
    struct AbsenceError: Error {
        let absence: Absence
        init(_ absence: Absence) { self.absence = absence }
    }

    /// The session a request must have.
    func requireSession(_ request: WebRequest) throws(WebError) -> Session {
        switch lookUp(request) {
        case .success(let session): return session
        case .failure(let error): throw noSessionError(error.absence)
        }
    }

    /// The error of a request without a session, saying why.
    func noSessionError(_ absence: Absence) -> WebError {
        switch absence {
        case .none:
            return WebError(
                401, "noSession",
                "no session: open the address with the token that 'photoledger web' printed (it sets a session cookie), or log in at /login"
            )
        case .idle:
            return WebError(
                401, "sessionExpired",
                "the session ended after \(Self.describe(idleTimeout)) without use; open the address 'photoledger web' printed again, or log in at /login"
            )
        case .tooOld:
            return WebError(
                401, "sessionExpired",
                "the session ended \(Self.describe(lifetime)) after it was opened; open the address 'photoledger web' printed again, or log in at /login"
            )
        }
    }

    /// `30 minutes`, `12 hours`, `7 days`, `45 seconds`.
    static func describe(_ seconds: TimeInterval) -> String {
        func unit(_ count: Int, _ name: String) -> String { "\(count) \(name)\(count == 1 ? "" : "s")" }
        let whole = Int(seconds.rounded())
        if whole % 86_400 == 0, whole > 0 { return unit(whole / 86_400, "day") }
        if whole % 3600 == 0, whole > 0 { return unit(whole / 3600, "hour") }
        if whole % 60 == 0, whole > 0 { return unit(whole / 60, "minute") }
        return unit(whole, "second")
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

    /// The `Set-Cookie` value that removes the session cookie from the browser.
    var removingCookie: String { "\(cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" }

    /// The `Set-Cookie` value of a session.
    func cookie(for session: Session) -> String { "\(cookieName)=\(session.id); Path=/; HttpOnly; SameSite=Strict" }

    /// A `Host` header as the allowed hosts are written: lower case, an IPv6 address in its
    /// shortest form inside brackets (`[0:0::1]:80` → `[::1]:80`).
    static func normalizedHost(_ header: String) -> String {
        let host = header.lowercased().trimmingCharacters(in: .whitespaces)
        guard host.hasPrefix("["), let close = host.firstIndex(of: "]") else { return host }
        let inside = String(host[host.index(after: host.startIndex)..<close])
        var address = in6_addr()
        guard inet_pton(AF_INET6, inside, &address) == 1, let canonical = ListeningAddress.canonical(address) else { return host }
        return "[\(canonical)]" + host[host.index(after: close)...]
    }

    /// A name given for this server (`localhost`, `192.168.1.10`, `::1`, `[::1]`), as it stands
    /// in a `Host` header without the port.
    static func normalizedName(_ name: String) -> String {
        let name = name.lowercased()
        if !name.hasPrefix("["), name.contains(":") { return normalizedHost("[\(name)]") }
        return normalizedHost(name)
    }

    /// An `Origin` header as the allowed origins are written.
    static func normalizedOrigin(_ origin: String) -> String {
        let origin = origin.lowercased()
        guard origin.hasPrefix("http://") else { return origin }
        return "http://" + normalizedHost(String(origin.dropFirst("http://".count)))
    }

    private var exampleHost: String { allowedHosts.sorted().first ?? "127.0.0.1" }

    private func newSession() -> Session {
        let now = clock()
        let session = Session(id: Self.randomToken(), csrfToken: Self.randomToken(), opened: now, lastUsed: now)
        sessions.withLock { sessions in
            // Sessions nobody came back to end here, so they do not pile up.
            sessions = sessions.filter {
                now.timeIntervalSince($0.value.opened) < lifetime && now.timeIntervalSince($0.value.lastUsed) < idleTimeout
            }
            sessions[session.id] = session
        }
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
