import Foundation
import Testing

@testable import SyncTransport

/// RetryingTransport over an in-memory scripted transport: instant and deterministic.
@Suite("RetryingTransport")
struct RetryingTransportTests {
    let request = HTTPRequest(url: URL(string: "http://127.0.0.1:1/v1/events")!)
    let policy = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(200), maximumDelay: .seconds(1), maximumRetryAfter: .seconds(30))

    static let unavailable = Result<HTTPResponse, any Error>.success(HTTPResponse(status: 503))
    static let ok = Result<HTTPResponse, any Error>.success(HTTPResponse(status: 200))
    static let refused = Result<HTTPResponse, any Error>.failure(
        TransportError.unreachable(origin: "http://127.0.0.1:1", detail: "refused"))

    func retrying(_ base: ScriptedTransport, _ sleep: RecordingSleep, random: [UInt64] = [ScriptedRandom.half]) -> RetryingTransport {
        RetryingTransport(wrapping: base, policy: policy, random: ScriptedRandom(random), sleep: sleep.sleep)
    }

    @Test func retries503WithExponentialFullJitterThenSucceeds() async throws {
        let base = ScriptedTransport([Self.unavailable, Self.unavailable, Self.unavailable, Self.ok])
        let sleep = RecordingSleep()
        let random = [ScriptedRandom.half, ScriptedRandom.quarter, ScriptedRandom.threeQuarters]
        let response = try await retrying(base, sleep, random: random).send(request)
        #expect(response.status == 200)
        #expect(base.requests.count == 4)
        // Ceilings 200 ms, 400 ms, 800 ms; fractions 0.5, 0.25, 0.75.
        #expect(sleep.recorded == [.milliseconds(100), .milliseconds(100), .milliseconds(600)])
    }

    @Test func delayCeilingIsCapped() {
        #expect(policy.delayCeiling(beforeRetry: 1) == .milliseconds(200))
        #expect(policy.delayCeiling(beforeRetry: 3) == .milliseconds(800))
        #expect(policy.delayCeiling(beforeRetry: 4) == .seconds(1))
        #expect(policy.delayCeiling(beforeRetry: 1000) == .seconds(1))
        #expect(policy.delay(beforeRetry: 10, fraction: 0.5) == .milliseconds(500))
    }

    @Test func honoursRetryAfterOn429() async throws {
        let tooMany = Result<HTTPResponse, any Error>.success(HTTPResponse(status: 429, headers: ["Retry-After": "7"]))
        let base = ScriptedTransport([tooMany, Self.ok])
        let sleep = RecordingSleep()
        let response = try await retrying(base, sleep).send(request)
        #expect(response.status == 200)
        #expect(sleep.recorded == [.seconds(7)])
    }

    @Test func retryAfterLongerThanAllowedReturnsTheResponseAtOnce() async throws {
        let busy = Result<HTTPResponse, any Error>.success(HTTPResponse(status: 503, headers: ["retry-after": "3600"]))
        let base = ScriptedTransport([busy, Self.ok])
        let sleep = RecordingSleep()
        let response = try await retrying(base, sleep).send(request)
        #expect(response.status == 503)
        #expect(base.requests.count == 1)
        #expect(sleep.recorded.isEmpty)
    }

    @Test(arguments: [400, 401, 403, 404, 409, 422])
    func doesNotRetryClientErrors(status: Int) async throws {
        let base = ScriptedTransport([.success(HTTPResponse(status: status)), Self.ok])
        let sleep = RecordingSleep()
        let response = try await retrying(base, sleep).send(request)
        #expect(response.status == status)
        #expect(base.requests.count == 1)
        #expect(sleep.recorded.isEmpty)
    }

    @Test(arguments: [
        TransportError.unreachable(origin: "http://127.0.0.1:1", detail: "refused"),
        TransportError.timedOut(url: "http://127.0.0.1:1/", detail: "slow"),
        TransportError.connectionLost(url: "http://127.0.0.1:1/", detail: "reset"),
    ])
    func retriesNetworkErrors(error: TransportError) async throws {
        let base = ScriptedTransport([.failure(error), Self.ok])
        let sleep = RecordingSleep()
        let response = try await retrying(base, sleep).send(request)
        #expect(response.status == 200)
        #expect(sleep.recorded == [.milliseconds(100)])
    }

    @Test(arguments: [
        TransportError.tlsFailure(url: "https://127.0.0.1:1/", detail: "bad certificate"),
        TransportError.invalidURL(url: "ftp://x", reason: "scheme"),
        TransportError.localFile(path: "/x", detail: "missing"),
        TransportError.other(url: "http://127.0.0.1:1/", curlCode: 61, message: "bad encoding"),
    ])
    func doesNotRetryPermanentErrors(error: TransportError) async throws {
        let base = ScriptedTransport([.failure(error), Self.ok])
        let sleep = RecordingSleep()
        await #expect(throws: error) { try await retrying(base, sleep).send(request) }
        #expect(base.requests.count == 1)
    }

    @Test func exhaustedAttemptsReturnTheLastResponse() async throws {
        let base = ScriptedTransport([Self.unavailable])
        let sleep = RecordingSleep()
        let response = try await retrying(base, sleep).send(request)
        #expect(response.status == 503)
        #expect(base.requests.count == 4)
        #expect(sleep.recorded.count == 3)
    }

    @Test func exhaustedAttemptsThrowTheLastError() async throws {
        let last = TransportError.timedOut(url: "http://127.0.0.1:1/v1/events", detail: "last")
        let base = ScriptedTransport([Self.refused, Self.refused, Self.refused, .failure(last)])
        let sleep = RecordingSleep()
        await #expect(throws: last) { try await retrying(base, sleep).send(request) }
        #expect(base.requests.count == 4)
    }

    @Test func neverRetriesCancellation() async throws {
        let base = ScriptedTransport([.failure(CancellationError()), Self.ok])
        let sleep = RecordingSleep()
        await #expect(throws: CancellationError.self) { try await retrying(base, sleep).send(request) }
        #expect(base.requests.count == 1)
        #expect(sleep.recorded.isEmpty)
    }

    @Test func cancellationDuringBackoffStopsRetrying() async throws {
        let base = ScriptedTransport([Self.unavailable])
        let transport = RetryingTransport(wrapping: base, policy: policy, random: ScriptedRandom([ScriptedRandom.half])) { _ in
            throw CancellationError()
        }
        await #expect(throws: CancellationError.self) { try await transport.send(request) }
        #expect(base.requests.count == 1)
    }

    @Test func oneAttemptMeansNoRetry() async throws {
        let base = ScriptedTransport([Self.unavailable, Self.ok])
        let transport = RetryingTransport(wrapping: base, policy: RetryPolicy(maximumAttempts: 1), sleep: { _ in })
        #expect(try await transport.send(request).status == 503)
        #expect(base.requests.count == 1)
    }
}
