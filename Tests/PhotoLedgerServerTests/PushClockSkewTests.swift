import Foundation
import LedgerCore
import PhotoLedgerServer
import SyncProtocol
import Testing

/// The push's clock-skew check with allowances near the clock's range.
@Suite("Clock skew limits")
struct PushClockSkewTests {
    @Test("clock skew allowances near the clock's range do not overflow: far stamps are stored, not refused")
    func hugeClockSkew() async throws {
        // Allowances whose sum with the clock wraps, stamps far ahead and just behind the clock.
        let now = ManualClock().read()
        for (allowance, stamp) in [
            (UInt64.max, (1 << 48) - 10), (UInt64.max - 1, now), (UInt64.max - 999, now - 501), (UInt64.max / 2 + 1, now + 5),
        ] {
            let fixture = try ServerFixture { $0.maximumClockSkewMilliseconds = allowance }
            var factory = EventFactory()
            factory.milliseconds = stamp
            let response = try await fixture.client().pushResponse(factory.make(2))
            #expect(response.results.map(\.status) == [.stored(serverSequence: 1), .stored(serverSequence: 2)], "\(allowance)")
        }
        let strict = try ServerFixture { $0.maximumClockSkewMilliseconds = 1000 }
        var factory = EventFactory()
        factory.milliseconds = strict.clock.read() + 10_000
        let refused = try await strict.client().push(factory.make(1))
        #expect(refused.status == 422)
        #expect(refused.errorMessage.contains("is 10 s ahead"), "\(refused.errorMessage)")
    }
}
