import Synchronization

/// When and how long to wait before trying a request again.
///
/// Delays grow exponentially with full jitter: before retry *n* (1-based) the wait is drawn
/// uniformly from `0 ..< min(maximumDelay, baseDelay × 2^(n-1))`. A `Retry-After` header in seconds
/// on a 429 or 503 response is honoured instead, unless it asks for more than ``maximumRetryAfter``,
/// in which case the response is returned at once so the caller can report it.
public struct RetryPolicy: Sendable, Equatable {
    /// The most attempts in all, the first one included; 1 means no retries.
    public var maximumAttempts: Int
    /// The upper bound of the first retry's random delay.
    public var baseDelay: Duration
    /// The cap on the upper bound of any random delay.
    public var maximumDelay: Duration
    /// The longest `Retry-After` wait that is honoured.
    public var maximumRetryAfter: Duration

    /// Creates a policy; the defaults give 5 attempts within a few seconds.
    public init(
        maximumAttempts: Int = 5,
        baseDelay: Duration = .milliseconds(250),
        maximumDelay: Duration = .seconds(10),
        maximumRetryAfter: Duration = .seconds(60)
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// Whether a response with this status is worth retrying: 429 and every 5xx.
    public static func isRetryable(status: Int) -> Bool { status == 429 || (500..<600).contains(status) }

    /// Whether a thrown error is worth retrying: ``TransportError/isRetryable`` errors only, never
    /// cancellation.
    public static func isRetryable(_ error: any Error) -> Bool {
        (error as? TransportError)?.isRetryable ?? false
    }

    /// The upper bound of the random delay before retry number `retry` (1 for the first retry).
    public func delayCeiling(beforeRetry retry: Int) -> Duration {
        let doublings = min(max(retry - 1, 0), 30)
        let ceiling = baseDelay * (1 << doublings)
        return ceiling > maximumDelay ? maximumDelay : ceiling
    }

    /// The jittered delay before retry number `retry`, for a uniform `fraction` in `0..<1`.
    public func delay(beforeRetry retry: Int, fraction: Double) -> Duration {
        let ceiling = delayCeiling(beforeRetry: retry)
        let (seconds, attoseconds) = ceiling.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds / 1_000_000_000)
        return .nanoseconds(Int64((nanoseconds * min(max(fraction, 0), 1)).rounded(.down)))
    }
}

/// Wraps another transport and retries what may succeed later: network failures (unreachable,
/// timed out, connection lost), 5xx and 429 responses. Other 4xx responses, other errors and
/// cancellation are returned or thrown at once.
///
/// When the attempts run out, the last response is returned or the last error thrown. Requests are
/// sent again unchanged, so they should be idempotent (the sync protocol's pushes are: events carry
/// their identifiers). Sleeping and randomness are injected so that tests run instantly and
/// deterministically:
///
/// ```swift
/// let transport = RetryingTransport(wrapping: CurlTransport(), policy: RetryPolicy(maximumAttempts: 4))
/// ```
public struct RetryingTransport: HTTPTransport {
    /// The transport that sends each attempt.
    public let base: any HTTPTransport
    /// When and how long to wait between attempts.
    public let policy: RetryPolicy
    private let random: RandomSource
    private let sleep: @Sendable (Duration) async throws -> Void

    /// Creates a retrying transport.
    ///
    /// - Parameters:
    ///   - base: The transport that sends each attempt.
    ///   - policy: Attempts and delays.
    ///   - random: The source of jitter; the system generator unless a test passes a seeded one.
    ///   - sleep: Waits for a delay, throwing `CancellationError` when the task is cancelled;
    ///     `Task.sleep(for:)` unless a test records the delays instead.
    public init(
        wrapping base: any HTTPTransport,
        policy: RetryPolicy = RetryPolicy(),
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.base = base
        self.policy = policy
        self.random = RandomSource(random)
        self.sleep = sleep
    }

    /// Sends the request, retrying as the policy allows.
    ///
    /// - Throws: The last ``TransportError`` when every attempt failed without a response;
    ///   `CancellationError` as soon as the task is cancelled, without further attempts.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var attempt = 1
        while true {
            try Task.checkCancellation()
            let wait: Duration
            do {
                let response = try await base.send(request)
                guard attempt < policy.maximumAttempts, RetryPolicy.isRetryable(status: response.status) else { return response }
                guard let delay = delay(after: response, beforeRetry: attempt) else { return response }
                wait = delay
            } catch {
                guard attempt < policy.maximumAttempts, RetryPolicy.isRetryable(error), !Task.isCancelled else { throw error }
                wait = policy.delay(beforeRetry: attempt, fraction: random.nextFraction())
            }
            try await sleep(wait)
            attempt += 1
        }
    }

    /// The wait before retrying after a retryable response, or `nil` when `Retry-After` asks for
    /// longer than the policy allows.
    private func delay(after response: HTTPResponse, beforeRetry retry: Int) -> Duration? {
        if let text = response.headers["Retry-After"], let seconds = Int(text.filter { !$0.isWhitespace }), seconds >= 0 {
            let requested = Duration.seconds(seconds)
            return requested <= policy.maximumRetryAfter ? requested : nil
        }
        return policy.delay(beforeRetry: retry, fraction: random.nextFraction())
    }
}

/// A random number generator shared by concurrent requests.
final class RandomSource: Sendable {
    private let generator: Mutex<any RandomNumberGenerator & Sendable>

    init(_ generator: some RandomNumberGenerator & Sendable) { self.generator = Mutex(generator) }

    /// A uniform fraction in `0..<1` with 53 random bits.
    func nextFraction() -> Double {
        let bits = generator.withLock { generator in generator.next() } >> 11
        return Double(bits) * 0x1p-53
    }
}
