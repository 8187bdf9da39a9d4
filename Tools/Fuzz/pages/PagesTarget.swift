import Foundation
import FuzzSupport
import LedgerCore
import SyncProtocol

/// The binary bodies of events: `EventPage.decode` over pull pages, as a client reads them from
/// a server, and `EventBatch.decode` over pushes, as the server reads them from a device. Every
/// input goes to both (each refuses the other's magic at once).
///
/// A page that decodes must encode to a page that decodes to the same content, and carry the
/// same content as a JSON pull page (the two forms of one response). A batch that decodes must
/// encode (its valid events, hashed again) to a batch that decodes to the same events, which
/// carries what its JSON form carries; and it holds no more events than its bytes can.
@main
enum PagesTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        let events = SampleEvents.all.enumerated().map { index, event in
            WireEvent(event, serverSequence: Int64(index + 1), chainHash: [UInt8](repeating: UInt8(index), count: 32))
        }
        var last = events[3]
        last.serverSequence = .max
        // A batch whose second event has an invalid envelope field (a type with a space): it is
        // answered alone, the batch decodes.
        var invalid = SampleEvents.all[1]
        invalid.type = "asset renamed"
        return [
            Seed(name: "page-empty", bytes: EventPage.encode(PullResponse(events: [], nextCursor: 0, hasMore: false))),
            Seed(name: "page-one", bytes: EventPage.encode(PullResponse(events: [events[0]], nextCursor: 1, hasMore: true))),
            Seed(name: "page-all", bytes: EventPage.encode(PullResponse(events: events, nextCursor: Int64(events.count), hasMore: false))),
            Seed(name: "page-last", bytes: EventPage.encode(PullResponse(events: [last], nextCursor: .max, hasMore: false))),
            Seed(name: "batch-empty", bytes: EventBatch.encode(device: "anna-phone", events: [])),
            Seed(name: "batch-one", bytes: EventBatch.encode(device: "anna-phone", events: [SampleEvents.all[0]])),
            Seed(name: "batch-all", bytes: EventBatch.encode(device: "cleo_tablet.2", events: SampleEvents.all)),
            Seed(name: "batch-invalid-type", bytes: EventBatch.encode(device: "anna-phone", events: [SampleEvents.all[0], invalid])),
        ]
    }

    static func accepts(_ input: [UInt8]) -> Bool { (try? EventPage.decode(input)) != nil || (try? EventBatch.decode(input)) != nil }

    static func run(_ input: [UInt8]) {
        checkPage(input)
        checkBatch(input)
    }

    private static func checkPage(_ input: [UInt8]) {
        guard let page = try? EventPage.decode(input) else { return }
        for event in page.events {
            require(event.event.envelopeProblem == nil, "a decoded event has a problem: \(event.event)")
            require((event.serverSequence ?? 0) >= 1 && event.chainHash?.count == 32, "a decoded event lacks its server fields")
            _ = event.hasValidHash
        }
        let binary = try? EventPage.decode(EventPage.encode(page))
        require(binary == page, "the page does not decode from its own encoding")
        let json = try? PullResponse.decode(page.encoded())
        require(json == page, "the page does not decode from its JSON form")
    }

    private static func checkBatch(_ input: [UInt8]) {
        guard let push = try? EventBatch.decode(input) else { return }
        // The smallest event takes 33 bytes of hash and length and 69 of canonical bytes.
        require(push.events.count <= input.count / 102, "\(push.events.count) events decoded from \(input.count) bytes")
        var valid: [WireEvent] = []
        for received in push.events {
            switch received {
            case .valid(let event):
                require(event.event.envelopeProblem == nil, "a valid event has a problem: \(event.event)")
                require(event.hash.count == 32, "a valid event's hash has \(event.hash.count) bytes")
                valid.append(event)
            case .invalid(_, let deviceSequence, let field, let problem):
                require(deviceSequence >= 1, "an invalid event without a device sequence to answer is kept")
                require(field.hasPrefix("events[") && !problem.isEmpty, "an invalid event names no field: \(field)")
            }
        }
        // Encoding hashes each event again: what decodes back carries the hashes of its bytes.
        let encoded = EventBatch.encode(device: push.device, events: valid.map(\.event))
        let again = try? EventBatch.decode(encoded)
        let rehashed = ReceivedPush(device: push.device, events: valid.map { .valid(WireEvent($0.event)) })
        require(again == rehashed, "the batch does not decode from its own encoding")
        require(again.map { EventBatch.encode(device: $0.device, events: $0.validEvents) } == encoded, "encoding is not a fixed point")
        if valid.count == push.events.count && valid.allSatisfy(\.hasValidHash) {
            require(again == push, "a batch of valid, rightly hashed events does not read back as itself")
        }
        let json = try? ReceivedPush.decode(push.encoded())
        require(json == ReceivedPush(device: push.device, events: valid.map { .valid($0) }), "the batch does not decode from its JSON form")
    }
}

extension ReceivedPush {
    /// The events of the push that are valid.
    fileprivate var validEvents: [Event] {
        events.compactMap { if case .valid(let event) = $0 { event.event } else { nil } }
    }
}
