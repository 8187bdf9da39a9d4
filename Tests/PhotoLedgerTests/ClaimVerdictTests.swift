import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Causal claims in verdicts")
struct ClaimVerdictTests {
    @Test("a change that claims to overwrite a write at or after its own clock value is quarantined, named by its first such register")
    func contradictingClaims() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let asset = try anna.createAssets(1)[0]
        try anna.performChangesAndWait { try $0.assetChangeRequest(for: asset).setFavorite(true) }
        let events = try anna.allEvents()
        let template = try #require(events.last { $0.type == EventType.assetChanged.rawValue })
        let stamp = WriterStamp(hlc: Int64(bitPattern: template.timestamp.rawValue), device: template.device.rawValue)
        var sequence = Int64(100)
        func forged(dateClaim: Int64, favoriteClaim: Int64) -> Event {
            let change = ChangeEvent.assetChanged(.init(creationDate: .some(Date(timeIntervalSince1970: 86_400)), isFavorite: false))
            var claims = CausalClaims()
            claims.overwritten[.creationDate] = WriterStamp(hlc: dateClaim, device: "anna-phone")
            claims.overwritten[.isFavorite] = WriterStamp(hlc: favoriteClaim, device: "ben-tablet")
            var event = template
            event.id = UUID()
            sequence += 1
            event.deviceSequence = sequence
            event.payload = change.encoded(claims: claims)
            event.schemaVersion = 2
            return event
        }
        // Both claims false (the first, in payload order, is named); only the second; neither.
        let both = forged(dateClaim: stamp.hlc, favoriteClaim: stamp.hlc + 5)
        let second = forged(dateClaim: stamp.hlc - 1, favoriteClaim: stamp.hlc)
        let honest = forged(dateClaim: stamp.hlc - 1, favoriteClaim: stamp.hlc - 2)
        try ben.applyRemoteEvents(Array(events.dropLast()) + [both, second, honest])
        let quarantine = try ben.quarantine()
        let reasons = Dictionary(uniqueKeysWithValues: quarantine.map { ($0.eventID, $0.reason) })
        #expect(
            reasons[both.id]
                == "it claims to overwrite the creationDate written at \(stamp.hlc) by 'anna-phone', not before its own clock value \(stamp.hlc)"
        )
        #expect(
            reasons[second.id]
                == "it claims to overwrite the isFavorite written at \(stamp.hlc) by 'ben-tablet', not before its own clock value \(stamp.hlc)"
        )
        #expect(reasons[honest.id] == nil, "claims below the event's clock fold")
        #expect(quarantine.allSatisfy { $0.kind == .quarantined })
        try ben.rebuild()
        #expect(try ben.quarantine() == quarantine, "a rebuild, which checks claims without keeping them, gives the same verdicts")
    }

    @Test("checking claims while decoding judges every payload as keeping them does: every sample, and seeded mutations of each")
    func checkedAgreesWithKept() {
        let schema = EventSchema.standard
        let object = UUID(), library = UUID()
        var outcomes: [String: Int] = [:]
        func compare(_ type: EventType, _ version: Int, _ payload: [UInt8], hlc: Int64) {
            let stamp = WriterStamp(hlc: hlc, device: "anna-phone")
            func verdict(keepingClaims: Bool) -> EventVerdict {
                schema.verdict(
                    type: type.rawValue, version: version, payload: payload, object: object, stamp: stamp, bound: nil, library: library,
                    sealed: false, keepingClaims: keepingClaims)
            }
            let kept = verdict(keepingClaims: true), checked = verdict(keepingClaims: false)
            switch (kept, checked) {
            case (.fold(let change, _), .fold(let same, let claims)):
                #expect(change == same, "\(type.rawValue) v\(version) \(payload)")
                #expect(claims == nil)
                outcomes["folded", default: 0] += 1
            default:
                #expect(kept.stored?.kind == checked.stored?.kind && kept.stored?.reason == checked.stored?.reason, "\(payload)")
                let reason = kept.stored?.reason ?? ""
                let outcome =
                    reason.contains("claims to overwrite")
                    ? "contradicted"
                    : reason.contains("a claim naming the device") ? "device" : reason.contains("invalid") ? "invalid" : "other"
                outcomes[outcome, default: 0] += 1
            }
        }
        var random = SeededRandomNumberGenerator(seed: 7)
        let device = Array("anna-phone".utf8)
        for sample in InMemoryFold.samplePayloads(claimsBefore: 1_000) {
            // Claims name writes at 999: above it they hold, at or below it they are false.
            for hlc: Int64 in [1_000, 999, 5] { compare(sample.type, sample.version, sample.payload, hlc: hlc) }
            for _ in 0..<300 {
                var payload = sample.payload
                switch Int.random(in: 0..<4, using: &random) {
                case 0 where !payload.isEmpty:
                    payload[Int.random(in: 0..<payload.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                case 1 where !payload.isEmpty:
                    payload.removeLast(Int.random(in: 1...payload.count, using: &random))
                case 2:
                    payload.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...payload.count, using: &random))
                default:
                    // A claim's device name made invalid: a space, a byte that is not UTF-8, a slash.
                    guard
                        let start = (0..<max(0, payload.count - device.count + 1)).first(where: {
                            payload[$0..<$0 + device.count].elementsEqual(device)
                        })
                    else { continue }
                    payload[start + Int.random(in: 0..<device.count, using: &random)] = [0x20, 0xC3, 0xFF, 0x2F].randomElement(
                        using: &random)!
                }
                compare(sample.type, sample.version, payload, hlc: 1_000)
            }
        }
        for outcome in ["folded", "contradicted", "device", "invalid"] {
            #expect(outcomes[outcome, default: 0] > 0, "no payload was \(outcome): \(outcomes)")
        }
    }
}
