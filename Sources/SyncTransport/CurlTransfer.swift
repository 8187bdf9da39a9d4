import CCurl
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One request performed on one easy handle, on the calling (blocking) thread.
///
/// The libcurl callbacks reach this object through an unretained pointer that is valid for the
/// duration of `perform()`; they run on the same thread, so the mutable state needs no lock.
final class CurlTransfer {
    /// A non-2xx body meant for a destination file is kept in memory up to this size.
    static let errorBodyLimit = 1 << 20

    private let handle: EasyHandle
    private let request: HTTPRequest
    private let configuration: CurlTransport.Configuration
    private let cancellation: CancellationFlag

    private var upload = UploadSource.none
    private var responseStatus = 0
    private var responseHeaders: [HTTPHeaders.Field] = []
    /// Whether the blank line that ends the current response's head has arrived: libcurl reports
    /// success for a response cut inside its head, with the status line's code and no body.
    private var headComplete = false
    /// A body kept in memory, as libcurl delivers it (at most 16 KB at a time): joined once at
    /// the end, so a body of megabytes is not copied into ever larger buffers while it arrives,
    /// each one fresh memory the system must first clear.
    private var memoryChunks: [[UInt8]] = []
    private var memoryCount = 0
    private var download: DownloadFile?
    private var bodyGoesToFile: Bool?
    private var localFileError: TransportError?
    private var lastProgress = TransferProgress(bytesSent: 0, totalBytesToSend: nil, bytesReceived: 0, totalBytesToReceive: nil)

    init(handle: EasyHandle, request: HTTPRequest, configuration: CurlTransport.Configuration, cancellation: CancellationFlag) {
        self.handle = handle
        self.request = request
        self.configuration = configuration
        self.cancellation = cancellation
    }

    /// Runs the exchange and returns the response, or throws what went wrong.
    func perform() throws -> HTTPResponse {
        if cancellation.isCancelled { throw CancellationError() }
        upload = try UploadSource(request.body, fileOffset: request.bodyFileOffset)
        if request.resumesResponseBody, request.method == .get, let destination = request.responseBodyDestination {
            download = try DownloadFile(resuming: destination, hashing: request.hashesResponseBody)
            download?.writebackBytes = writebackStep
        }
        defer {
            upload.close()
            // A resumable transfer keeps what arrived for the next attempt.
            download?.discard(keepingResumable: true)
        }
        let headerList = try configure()
        defer { curl_slist_free_all(headerList) }
        handle.errorBuffer[0] = 0
        let code = curl_easy_perform(handle.raw)
        if let localFileError { throw localFileError }
        guard code == CURLE_OK else {
            if cancellation.isCancelled && code == CURLE_ABORTED_BY_CALLBACK { throw CancellationError() }
            throw TransportError(code: code, message: handle.message(for: code), url: request.url)
        }
        return try finish()
    }

    // MARK: - Options

    private func configure() throws -> UnsafeMutablePointer<curl_slist>? {
        let raw = handle.raw
        let context = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, request.url.absoluteString)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_ACCEPT_ENCODING, "")
        try set(CURLOPT_USERAGENT, configuration.userAgent)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caBundlePath = configuration.caBundlePath { try set(CURLOPT_CAINFO, caBundlePath) }
        try configureRedirects()
        try configureTimeouts()
        try check(plcurl_setopt_pointer(raw, CURLOPT_ERRORBUFFER, handle.errorBuffer))
        try configureCallbacks(context: context)
        try configureMethodAndBody()
        return try configureHeaders()
    }

    private func configureRedirects() throws {
        guard configuration.followRedirects else { return try set(CURLOPT_FOLLOWLOCATION, 0) }
        try set(CURLOPT_FOLLOWLOCATION, 1)
        try set(CURLOPT_MAXREDIRS, 5)
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    }

    private func configureTimeouts() throws {
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout))
        if let total = request.timeout ?? configuration.requestTimeout {
            try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(total))
        }
        if configuration.lowSpeedLimit > 0 {
            let seconds = (Self.milliseconds(configuration.lowSpeedTime) + 999) / 1000
            try set(CURLOPT_LOW_SPEED_LIMIT, configuration.lowSpeedLimit)
            try set(CURLOPT_LOW_SPEED_TIME, max(1, seconds))
        }
    }

    private func configureCallbacks(context: UnsafeMutableRawPointer) throws {
        let raw = handle.raw
        try check(
            plcurl_setopt_write_function(raw, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                guard let context else { return 0 }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
            })
        try check(plcurl_setopt_pointer(raw, CURLOPT_WRITEDATA, context))
        try check(
            plcurl_setopt_write_function(raw, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                guard let context else { return 0 }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
                return size * count
            })
        try check(plcurl_setopt_pointer(raw, CURLOPT_HEADERDATA, context))
        try check(
            plcurl_setopt_xferinfo_function(raw) { context, downloadTotal, downloaded, _, uploaded in
                guard let context else { return 1 }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                return transfer.reportProgress(downloadTotal: downloadTotal, downloaded: downloaded, uploaded: uploaded) ? 0 : 1
            })
        try check(plcurl_setopt_pointer(raw, CURLOPT_XFERINFODATA, context))
        try set(CURLOPT_NOPROGRESS, 0)
        // Set even without a body, so libcurl never falls back to reading standard input.
        try check(
            plcurl_setopt_read_function(raw) { buffer, size, count, context in
                guard let context, let buffer else { return Int(CURL_READFUNC_ABORT) }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                return transfer.sendBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
            })
        try check(plcurl_setopt_pointer(raw, CURLOPT_READDATA, context))
        try check(
            plcurl_setopt_seek_function(raw) { context, offset, origin in
                guard let context else { return Int32(CURL_SEEKFUNC_FAIL) }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                return transfer.upload.seek(to: Int64(offset), origin: origin) ? Int32(CURL_SEEKFUNC_OK) : Int32(CURL_SEEKFUNC_CANTSEEK)
            })
        try check(plcurl_setopt_pointer(raw, CURLOPT_SEEKDATA, context))
    }

    private func configureMethodAndBody() throws {
        let size = upload.size
        switch request.method {
        case .head:
            try set(CURLOPT_NOBODY, 1)
        case .get where size == nil:
            try set(CURLOPT_HTTPGET, 1)
        case .post:
            try set(CURLOPT_POST, 1)
            try check(plcurl_setopt_off_t(handle.raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(size ?? 0)))
        default:
            if let size {
                try set(CURLOPT_UPLOAD, 1)
                try check(plcurl_setopt_off_t(handle.raw, CURLOPT_INFILESIZE_LARGE, curl_off_t(size)))
            } else if request.method == .put {
                try set(CURLOPT_UPLOAD, 1)
                try check(plcurl_setopt_off_t(handle.raw, CURLOPT_INFILESIZE_LARGE, 0))
            }
            if request.method != .put { try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
        }
    }

    /// Builds the header list; the caller frees it after the transfer.
    private func configureHeaders() throws -> UnsafeMutablePointer<curl_slist>? {
        var lines = ["Expect:"]
        if !request.headers.contains("Content-Type") { lines.append("Content-Type:") }
        if let download, download.offset > 0 { lines.append("Range: bytes=\(download.offset)-") }
        for field in request.headers where !HTTPHeaders.sameName(field.name, "Content-Length") {
            lines.append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw TransportError.invalidRequest(reason: "out of memory while building the header list")
            }
            list = appended
        }
        do {
            try check(plcurl_setopt_slist(handle.raw, CURLOPT_HTTPHEADER, list))
        } catch {
            curl_slist_free_all(list)
            throw error
        }
        return list
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(plcurl_setopt_long(handle.raw, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        try check(plcurl_setopt_string(handle.raw, option, value))
    }

    private func check(_ code: CURLcode) throws {
        guard code == CURLE_OK else {
            throw TransportError(code: code, message: String(cString: curl_easy_strerror(code)), url: request.url)
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let total = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int(clamping: max(total, duration > .zero ? 1 : 0))
    }

    // MARK: - Callbacks

    private func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.isEmpty {
            headComplete = true
        } else if line.hasPrefix("HTTP/") {
            // A new response begins (an interim 1xx or a followed redirect): forget the previous one.
            headComplete = false
            responseHeaders = []
            let parts = line.split(separator: " ", maxSplits: 2)
            responseStatus = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            responseHeaders.append(HTTPHeaders.Field(name: name, value: value))
        }
    }

    /// Returns the number of bytes consumed; anything else makes libcurl fail with a write error.
    private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if bodyGoesToFile == nil { bodyGoesToFile = startDownloadIfNeeded() }
        if localFileError != nil { return 0 }
        guard bodyGoesToFile == true else {
            let room = request.responseBodyDestination == nil ? bytes.count : max(0, Self.errorBodyLimit - memoryCount)
            if room > 0 {
                memoryChunks.append([UInt8](bytes.prefix(room)))
                memoryCount += min(room, bytes.count)
            }
            return bytes.count
        }
        do {
            try download?.write(bytes)
            return bytes.count
        } catch {
            localFileError = error
            return 0
        }
    }

    /// A new temporary file for the body, hashed and written back as the request asks.
    private func newDownloadFile(_ destination: URL) throws(TransportError) -> DownloadFile {
        let file = try DownloadFile(destination: destination, hashing: request.hashesResponseBody)
        file.writebackBytes = writebackStep
        return file
    }

    /// The bytes after which the body file's writeback is started: sooner when it is flushed at
    /// its end, so the flush waits for little more than the tail.
    private var writebackStep: Int64 {
        request.flushesResponseBody ? DownloadFile.flushedWritebackBytes : DownloadFile.writebackBytes
    }

    /// Opens the destination's temporary file when the response is a success; false keeps the body in memory.
    private func startDownloadIfNeeded() -> Bool {
        guard let destination = request.responseBodyDestination, (200..<300).contains(responseStatus) else { return false }
        do throws(TransportError) {
            guard let download else {
                download = try newDownloadFile(destination)
                return true
            }
            guard responseStatus == 206 else {
                try download.restart()  // the whole body: what was kept goes
                return true
            }
            let held = download.offset
            let contentRange = responseHeaders.last { HTTPHeaders.sameName($0.name, "Content-Range") }?.value
            guard contentRange.flatMap(HTTPHeaders.contentRangeStart) == held else {
                try download.restart()
                throw TransportError.connectionLost(
                    url: URLDisplay.redacted(request.url),
                    detail: "the server continued the download at another byte than the \(held) held here")
            }
            return true
        } catch {
            localFileError = error
            return true
        }
    }

    private func sendBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        do {
            return try upload.read(into: buffer)
        } catch {
            localFileError = error
            return Int(CURL_READFUNC_ABORT)
        }
    }

    /// Reports progress when it moved forward; returns false to abort the transfer.
    private func reportProgress(downloadTotal: curl_off_t, downloaded: curl_off_t, uploaded: curl_off_t) -> Bool {
        if cancellation.isCancelled { return false }
        let current = TransferProgress(
            bytesSent: Int64(uploaded), totalBytesToSend: upload.size,
            bytesReceived: Int64(downloaded), totalBytesToReceive: downloadTotal > 0 ? Int64(downloadTotal) : nil)
        report(current)
        return true
    }

    private func report(_ progress: TransferProgress) {
        guard let handler = request.progress, progress != lastProgress,
            progress.bytesSent >= lastProgress.bytesSent, progress.bytesReceived >= lastProgress.bytesReceived
        else { return }
        lastProgress = progress
        handler(progress)
    }

    // MARK: - Completion

    private func finish() throws -> HTTPResponse {
        var status = 0
        try check(plcurl_getinfo_long(handle.raw, CURLINFO_RESPONSE_CODE, &status))
        var downloaded: curl_off_t = 0
        var uploaded: curl_off_t = 0
        try check(plcurl_getinfo_off_t(handle.raw, CURLINFO_SIZE_DOWNLOAD_T, &downloaded))
        try check(plcurl_getinfo_off_t(handle.raw, CURLINFO_SIZE_UPLOAD_T, &uploaded))
        try checkComplete(status: status, downloaded: downloaded)
        report(
            TransferProgress(
                bytesSent: Int64(uploaded), totalBytesToSend: upload.size,
                bytesReceived: Int64(downloaded), totalBytesToReceive: Int64(downloaded)))

        var memoryBody: [UInt8] = []
        memoryBody.reserveCapacity(memoryCount)
        for chunk in memoryChunks { memoryBody.append(contentsOf: chunk) }
        memoryChunks = []
        var body = HTTPBody.bytes(memoryBody)
        var digest: [UInt8]?
        // The kept bytes are not a prefix the server can continue: they go, and the next attempt
        // starts again.
        if status == 416 { download?.discard() }
        if let destination = request.responseBodyDestination, (200..<300).contains(status), request.method != .head {
            if download == nil {
                download = try newDownloadFile(destination)
            } else if bodyGoesToFile == nil, status != 206 {
                try download?.restart()  // an empty whole body
            }
            digest = try download?.commit(flushing: request.flushesResponseBody)
            download = nil
            body = .file(destination)
        }
        var response = HTTPResponse(status: status, headers: HTTPHeaders(responseHeaders), body: body)
        if body.fileURL != nil {
            response.bodyFileSHA256 = digest
            response.bodyFileIsFlushed = request.flushesResponseBody
        }
        return response
    }

    /// Throws ``TransportError/connectionLost(url:detail:)`` for a response that libcurl reports
    /// as complete but is not: cut inside its head, or with fewer body bytes (as sent, before
    /// decompression) than its `Content-Length`.
    private func checkComplete(status: Int, downloaded: curl_off_t) throws {
        let shown = URLDisplay.redacted(request.url)
        guard headComplete else {
            throw TransportError.connectionLost(url: shown, detail: "the response ended inside its head (HTTP status line \(status))")
        }
        var declared: curl_off_t = -1
        try check(plcurl_getinfo_off_t(handle.raw, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &declared))
        let hasBody = request.method != .head && status != 204 && status != 304
        if hasBody, declared >= 0, downloaded < declared {
            throw TransportError.connectionLost(url: shown, detail: "the response body ended after \(downloaded) of its \(declared) bytes")
        }
    }
}

extension TransportError {
    /// Classifies a libcurl failure.
    init(code: CURLcode, message: String, url: URL) {
        let shown = URLDisplay.redacted(url)
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            self = .unreachable(origin: URLDisplay.origin(url), detail: message)
        case CURLE_OPERATION_TIMEDOUT:
            self = .timedOut(url: shown, detail: message)
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            self = .connectionLost(url: shown, detail: message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED:
            self = .tlsFailure(url: shown, detail: message)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            self = .invalidURL(url: shown, reason: message)
        default:
            self = .other(url: shown, curlCode: Int(code.rawValue), message: message)
        }
    }
}
