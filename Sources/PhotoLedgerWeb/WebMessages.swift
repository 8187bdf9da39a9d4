import Foundation
import PhotoLedgerJSON
import Synchronization

/// A request as the web view's routes see it: the head libmicrohttpd parsed and the whole body.
struct WebRequest: Sendable {
    /// `GET`, `POST`, …
    var method: String
    /// The path, percent-decoded by libmicrohttpd, without the query.
    var path: String
    /// The query's arguments.
    var query: [String: String]
    /// The header fields, names in lower case (a repeated field keeps its first value).
    var headers: [String: String]
    /// The body (empty for GET).
    var body: Data = Data()

    /// The value of the header field `name` (any case).
    func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The cookies the request carries.
    var cookies: [String: String] {
        var cookies: [String: String] = [:]
        for part in (header("Cookie") ?? "").split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, cookies[pair[0]] == nil { cookies[pair[0]] = pair[1] }
        }
        return cookies
    }

    /// The path's segments after the leading slash (`/api/albums/X` → `["api", "albums", "X"]`).
    var segments: [String] { path.split(separator: "/", omittingEmptySubsequences: true).map(String.init) }
}

/// What the web view answers.
struct WebResponse: Sendable {
    /// How the body is sent.
    enum Body: Sendable {
        /// Bytes known at once.
        case bytes(Data)
        /// A stream of server-sent events, open until the client leaves or the server stops.
        case eventStream(LiveSubscription)
        /// Bytes of an open file, sent by the kernel straight from the file (`sendfile`).
        case file(FileSlice)
    }

    var status: Int
    var headers: [(String, String)]
    var body: Body

    init(status: Int, headers: [(String, String)], body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    init(status: Int = 200, contentType: String, body: Data, headers: [(String, String)] = []) {
        self.status = status
        self.headers = [("Content-Type", contentType)] + headers
        self.body = .bytes(body)
    }

    /// A JSON answer.
    static func json(_ value: JSON, status: Int = 200) -> WebResponse {
        WebResponse(status: status, contentType: "application/json; charset=utf-8", body: Data(value.serialized(escapingHTML: true).utf8))
    }

    /// A redirection to `location` (303: the client follows with a GET).
    static func redirect(to location: String, headers: [(String, String)] = []) -> WebResponse {
        WebResponse(
            status: 303, contentType: "text/plain; charset=utf-8", body: Data("See \(location)\n".utf8),
            headers: [("Location", location)] + headers)
    }

    /// An HTML page.
    static func html(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> WebResponse {
        WebResponse(status: status, contentType: "text/html; charset=utf-8", body: Data(text.utf8), headers: headers)
    }
}

/// A part of an open file a response sends: it owns the descriptor until the HTTP library takes
/// it (which closes it after sending), and closes it itself when never sent.
final class FileSlice: Sendable {
    /// The open file.
    private let descriptor: Mutex<Int32>
    /// Where the bytes sent start.
    let offset: UInt64
    /// How many bytes are sent.
    let length: UInt64

    init(descriptor: Int32, offset: UInt64, length: UInt64) {
        self.descriptor = Mutex(descriptor)
        self.offset = offset
        self.length = length
    }

    /// Hands the descriptor over: the caller closes it from now on.
    func take() -> Int32 {
        descriptor.withLock { descriptor in
            defer { descriptor = -1 }
            return descriptor
        }
    }

    deinit {
        let descriptor = take()
        if descriptor >= 0 { close(descriptor) }
    }
}

/// A refusal or failure the web view answers with its status and a JSON body
/// `{"error": {"code": …, "message": …}}` whose message says what happened and what to do.
struct WebError: Error, Sendable, CustomStringConvertible {
    let status: Int
    let code: String
    let message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    var description: String { "\(status) \(code): \(message)" }

    var response: WebResponse {
        .json(.object([("error", .object([("code", .string(code)), ("message", .string(message))]))]), status: status)
    }

    static func notFound(_ what: String) -> WebError { WebError(404, "notFound", "\(what) was not found; go back to the albums page") }

    static func badRequest(_ message: String) -> WebError { WebError(400, "badRequest", message) }
}

/// Reading a JSON request body (Foundation's parser: bodies are small and come from the page).
struct JSONBody {
    private let fields: [String: Any]

    init(_ request: WebRequest) throws(WebError) {
        guard !request.body.isEmpty else { throw .badRequest("the request has no body; send a JSON object") }
        guard let object = try? JSONSerialization.jsonObject(with: request.body), let fields = object as? [String: Any] else {
            throw .badRequest("the body is not a JSON object; send one such as {\"assets\": [\"…\"]}")
        }
        self.fields = fields
    }

    func string(_ name: String) throws(WebError) -> String {
        guard let value = fields[name] as? String else { throw .badRequest("the body needs \"\(name)\" as a string") }
        return value
    }

    func bool(_ name: String) throws(WebError) -> Bool {
        guard let value = fields[name] as? Bool else { throw .badRequest("the body needs \"\(name)\" as true or false") }
        return value
    }

    func int(_ name: String) throws(WebError) -> Int {
        guard let number = fields[name] as? NSNumber, let value = Int(exactly: number.doubleValue) else {
            throw .badRequest("the body needs \"\(name)\" as a whole number")
        }
        return value
    }

    func strings(_ name: String) throws(WebError) -> [String] {
        guard let values = fields[name] as? [String], !values.isEmpty else {
            throw .badRequest("the body needs \"\(name)\" as a non-empty array of identifiers")
        }
        return values
    }
}
