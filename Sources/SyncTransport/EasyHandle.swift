import CCurl
import Foundation
import Synchronization

/// One libcurl easy handle with its error buffer; freed in `deinit`.
///
/// A handle keeps its connections open between requests, which is how connections are reused.
// @unchecked Sendable: the pool hands a handle to exactly one transfer at a time and takes it back
// only after `curl_easy_perform` has returned, so the C state is never touched by two threads at once.
final class EasyHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER`: libcurl writes its detailed message here on failure.
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let raw = curl_easy_init() else { return nil }
        self.raw = raw
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    /// The detailed message libcurl left in the error buffer, or its generic text for `code`.
    func message(for code: CURLcode) -> String {
        let detailed = String(cString: errorBuffer).trimmingCharacters(in: [" ", "\n"])
        if !detailed.isEmpty { return detailed }
        return String(cString: curl_easy_strerror(code))
    }
}

/// Idle easy handles, reused last-in first-out so consecutive requests share a warm connection.
final class EasyHandlePool: Sendable {
    private let idle = Mutex<[EasyHandle]>([])
    private let maximumIdle: Int

    init(maximumIdle: Int) { self.maximumIdle = max(0, maximumIdle) }

    /// An idle handle, or a new one.
    func checkOut(for url: URL) throws -> EasyHandle {
        try CurlGlobal.initialize(for: url)
        if let handle = idle.withLock({ $0.popLast() }) { return handle }
        guard let handle = EasyHandle() else {
            throw TransportError.other(
                url: URLDisplay.redacted(url), curlCode: Int(CURLE_FAILED_INIT.rawValue), message: "curl_easy_init failed (out of memory?)")
        }
        return handle
    }

    /// Returns a handle after its transfer; its options are reset, its connections kept.
    func checkIn(_ handle: EasyHandle) {
        curl_easy_reset(handle.raw)
        idle.withLock { handles in
            if handles.count < maximumIdle { handles.append(handle) }
        }
    }
}

/// `curl_global_init`, run once per process before the first handle is created.
enum CurlGlobal {
    private static let result: UInt32 = plcurl_global_init().rawValue

    static func initialize(for url: URL) throws {
        guard result == CURLE_OK.rawValue else {
            let code = CURLcode(rawValue: result)
            throw TransportError.other(
                url: URLDisplay.redacted(url), curlCode: Int(result),
                message: "curl_global_init failed: \(String(cString: curl_easy_strerror(code)))")
        }
    }
}
