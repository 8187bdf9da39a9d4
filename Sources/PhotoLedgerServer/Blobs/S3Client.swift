import CCurl
import Foundation
import LedgerCore
import Synchronization

/// The S3 requests the blob store makes, over libcurl, signed with AWS Signature Version 4 by
/// libcurl (`CURLOPT_AWS_SIGV4`). Bodies are sent from memory (a part, a small blob, a short
/// XML document) with their SHA-256 in `x-amz-content-sha256`, so every byte sent is signed.
final class S3Client: Sendable {
    let configuration: S3Configuration
    private let idle = Mutex<[CurlEasyHandle]>([])

    /// A response: status, headers (names in lowercase) and the body kept in memory.
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]

        /// The `<Code>` and `<Message>` of an S3 error document, when the body is one.
        var errorSummary: String {
            let text = String(decoding: body.prefix(4096), as: UTF8.self)
            func element(_ name: String) -> String? {
                guard let start = text.range(of: "<\(name)>"),
                    let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex)
                else {
                    return nil
                }
                return String(text[start.upperBound..<end.lowerBound])
            }
            return [element("Code"), element("Message")].compactMap { $0 }.joined(separator: ": ")
        }
    }

    init(configuration: S3Configuration) throws {
        self.configuration = configuration
        try CurlGlobalState.initialize()
    }

    // MARK: Requests

    /// Sends one request and returns the response, whatever its status.
    func send(_ method: String, key: String, query: [(String, String)] = [], body: [UInt8]? = nil) throws -> Response {
        let url = configuration.url(key: key, query: query)
        let exchange = S3Exchange()
        let handle = try checkOut(url: url)
        defer { checkIn(handle) }
        let payload = body ?? []
        let code = try payload.withUnsafeBytes { bytes in
            try perform(
                handle, method: method, url: url, body: body == nil ? nil : bytes, payloadHash: Hex.encode(SHA256.hash(payload)),
                exchange: exchange)
        }
        try check(code, handle: handle, url: url)
        return Response(status: exchange.status, headers: exchange.headers, body: exchange.body)
    }

    /// Sends one request and returns the response when its status is in `accepting`; a request
    /// that cannot be sent, or another status (named with S3's error), is thrown as the error
    /// `failure` makes of its description.
    func send<Failure: Error>(
        _ method: String, key: String, query: [(String, String)] = [], body: [UInt8]? = nil, accepting: Set<Int>,
        failure: (String) -> Failure
    ) throws(Failure) -> Response {
        let response: Response
        do {
            response = try send(method, key: key, query: query, body: body)
        } catch {
            throw failure("\(error)")
        }
        guard accepting.contains(response.status) else {
            throw failure("S3 answered \(method) \(key) with \(response.status) \(response.errorSummary)")
        }
        return response
    }

    /// Starts a GET of `key` on a thread of its own, whose body goes to `sink` while it arrives
    /// when the status is 2xx (`sink` returns false to stop the transfer). Returns once the
    /// response's headers arrived, with the status and headers; for another status, once the
    /// transfer ended, with the body.
    /// `onEnd` runs on the transfer's thread when it is over, however it ended.
    func startDownload(
        key: String, from offset: Int64 = 0, sink: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool,
        onEnd: @escaping @Sendable () -> Void
    )
        throws -> Response
    {
        let url = configuration.url(key: key)
        let handle = try checkOut(url: url)
        let exchange = S3Exchange()
        exchange.sink = sink
        let headersArrived = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        exchange.onHeadersComplete = { headersArrived.signal() }
        let failure = Mutex<S3Error?>(nil)
        // The rest of the object from `offset` (S3 answers 206).
        exchange.range = offset > 0 ? "\(offset)-" : nil
        let transfer = S3Transfer(client: self, handle: handle, url: url, exchange: exchange)
        Thread.detachNewThread {
            do {
                let code = try transfer.client.perform(
                    transfer.handle, method: "GET", url: transfer.url, body: nil, payloadHash: SHA256.emptyHex, exchange: transfer.exchange)
                try transfer.client.check(code, handle: transfer.handle, url: transfer.url)
            } catch let error as S3Error {
                failure.withLock { $0 = error }
            } catch {
                failure.withLock { $0 = S3Error(.failed, "\(error)", url: transfer.url) }
            }
            transfer.client.checkIn(transfer.handle)
            onEnd()
            headersArrived.signal()  // when the transfer failed before any header
            finished.signal()
        }
        headersArrived.wait()
        guard (200..<300).contains(exchange.status) else {
            finished.wait()
            if exchange.status == 0, let error = failure.withLock({ $0 }) { throw error }
            return Response(status: exchange.status, headers: exchange.headers, body: exchange.body)
        }
        return Response(status: exchange.status, headers: exchange.headers, body: [])
    }

    // MARK: libcurl

    private func checkOut(url: String) throws -> CurlEasyHandle {
        if let handle = idle.withLock({ $0.popLast() }) { return handle }
        guard let handle = CurlEasyHandle() else { throw S3Error(.failed, "curl_easy_init failed (out of memory?)", url: url) }
        return handle
    }

    fileprivate func checkIn(_ handle: CurlEasyHandle) {
        curl_easy_reset(handle.raw)
        idle.withLock { if $0.count < 16 { $0.append(handle) } }
    }

    fileprivate func check(_ code: CURLcode, handle: CurlEasyHandle, url: String) throws {
        guard code == CURLE_OK else {
            let detail = handle.message(for: code)
            switch code {
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT:
                throw S3Error(
                    .unreachable, "cannot reach the S3 service: \(detail); check \(S3Configuration.endpointVariable) and the network",
                    url: url)
            default:
                throw S3Error(.failed, "the request failed: \(detail)", url: url)
            }
        }
    }

    fileprivate func perform(
        _ handle: CurlEasyHandle, method: String, url: String, body: UnsafeRawBufferPointer?, payloadHash: String, exchange: S3Exchange
    ) throws -> CURLcode {
        let raw = handle.raw
        func set(_ result: CURLcode) throws { try check(result, handle: handle, url: url) }
        try set(plcurl_setopt_string(raw, CURLOPT_URL, url))
        try set(plcurl_setopt_string(raw, CURLOPT_PROTOCOLS_STR, "http,https"))
        try set(plcurl_setopt_long(raw, CURLOPT_NOSIGNAL, 1))
        try set(plcurl_setopt_long(raw, CURLOPT_CONNECTTIMEOUT_MS, 10_000))
        try set(plcurl_setopt_long(raw, CURLOPT_LOW_SPEED_LIMIT, 1))
        try set(plcurl_setopt_long(raw, CURLOPT_LOW_SPEED_TIME, 60))
        try set(plcurl_setopt_long(raw, CURLOPT_TCP_KEEPALIVE, 1))
        try set(plcurl_setopt_pointer(raw, CURLOPT_ERRORBUFFER, handle.errorBuffer))
        handle.errorBuffer[0] = 0
        // Set on every use: a pooled handle keeps the options of its last request.
        try set(plcurl_setopt_string(raw, CURLOPT_RANGE, exchange.range))
        // Signature Version 4: libcurl signs with the key pair for the configured region.
        try set(plcurl_setopt_string(raw, CURLOPT_AWS_SIGV4, "aws:amz:\(configuration.region):s3"))
        try set(plcurl_setopt_string(raw, CURLOPT_USERNAME, configuration.accessKeyID))
        try set(plcurl_setopt_string(raw, CURLOPT_PASSWORD, configuration.secretAccessKey))
        if method == "HEAD" {
            try set(plcurl_setopt_long(raw, CURLOPT_NOBODY, 1))
        } else if let body {
            try set(
                plcurl_setopt_pointer(
                    raw, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: body.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)))
            try set(plcurl_setopt_off_t(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            try set(plcurl_setopt_string(raw, CURLOPT_CUSTOMREQUEST, method))
        } else if method != "GET" {
            try set(plcurl_setopt_string(raw, CURLOPT_CUSTOMREQUEST, method))
        }
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        // No empty "Expect:" to turn 100-continue off: libcurl 7.88 signs the header it then leaves out.
        var lines = ["x-amz-content-sha256: \(payloadHash)"]
        if body != nil { lines.append("Content-Type: application/octet-stream") }
        if let token = configuration.sessionToken { lines.append("x-amz-security-token: \(token)") }
        for line in lines {
            guard let appended = curl_slist_append(headers, line) else {
                throw S3Error(.failed, "curl_slist_append failed (out of memory?)", url: url)
            }
            headers = appended
        }
        try set(plcurl_setopt_slist(raw, CURLOPT_HTTPHEADER, headers))
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        try set(plcurl_setopt_write_function(raw, CURLOPT_WRITEFUNCTION, s3ReceiveBody))
        try set(plcurl_setopt_pointer(raw, CURLOPT_WRITEDATA, context))
        try set(plcurl_setopt_write_function(raw, CURLOPT_HEADERFUNCTION, s3ReceiveHeader))
        try set(plcurl_setopt_pointer(raw, CURLOPT_HEADERDATA, context))
        return withExtendedLifetime(exchange) { curl_easy_perform(raw) }
    }
}

/// What travels to a download's thread.
// Safe to share: handed to one thread, which alone uses the handle and the exchange from then on
// (the starting thread reads the exchange's status and headers only after the headers arrived).
private struct S3Transfer: @unchecked Sendable {
    let client: S3Client
    let handle: CurlEasyHandle
    let url: String
    let exchange: S3Exchange
}

/// The state of one request, reached from libcurl's callbacks on the thread that performs it.
private final class S3Exchange {
    var status = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    /// Where a streamed body goes (only for a successful response); false stops the transfer.
    var sink: ((UnsafeRawBufferPointer) -> Bool)?
    var onHeadersComplete: (() -> Void)?
    /// The byte range to ask for (`N-`), or nil for the whole object.
    var range: String?

    func headerLine(_ line: String) {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("HTTP/") {
            headers = [:]
            status = Int(trimmed.split(separator: " ").dropFirst().first ?? "") ?? 0
        } else if trimmed.isEmpty {
            if status >= 200 { onHeadersComplete?() }
        } else if let colon = trimmed.firstIndex(of: ":") {
            headers[trimmed[..<colon].lowercased()] = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    func bodyBytes(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let sink, (200..<300).contains(status) { return sink(bytes) }
        if body.count < 1 << 20 { body.append(contentsOf: bytes.prefix((1 << 20) - body.count)) }
        return true
    }
}

private let s3ReceiveBody: curl_write_callback = { data, size, count, context in
    guard let context else { return 0 }
    let exchange = Unmanaged<S3Exchange>.fromOpaque(context).takeUnretainedValue()
    let total = size * count
    return exchange.bodyBytes(UnsafeRawBufferPointer(start: data, count: total)) ? total : 0
}

private let s3ReceiveHeader: curl_write_callback = { data, size, count, context in
    guard let context else { return 0 }
    let exchange = Unmanaged<S3Exchange>.fromOpaque(context).takeUnretainedValue()
    let total = size * count
    exchange.headerLine(String(decoding: UnsafeRawBufferPointer(start: data, count: total), as: UTF8.self))
    return total
}

/// One libcurl easy handle with its error buffer; freed in `deinit`.
// Safe to share: the client lends a handle to one request at a time and takes it back only after
// `curl_easy_perform` returned.
final class CurlEasyHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let raw = curl_easy_init() else { return nil }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    func message(for code: CURLcode) -> String {
        let detailed = String(cString: errorBuffer).trimmingCharacters(in: .whitespacesAndNewlines)
        return detailed.isEmpty ? String(cString: curl_easy_strerror(code)) : detailed
    }
}

/// `curl_global_init`, once per process (before the first handle).
enum CurlGlobalState {
    private static let result = plcurl_global_init()

    static func initialize() throws {
        guard result == CURLE_OK else {
            throw S3Error(.failed, "curl_global_init failed: \(String(cString: curl_easy_strerror(result)))", url: "-")
        }
    }
}

extension SHA256 {
    /// The SHA-256 of no bytes, in hex.
    static let emptyHex = Hex.encode(SHA256.hash([]))
}
