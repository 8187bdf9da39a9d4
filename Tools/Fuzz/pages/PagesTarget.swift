import Foundation
import FuzzSupport
import LedgerCore
import SyncProtocol

/// The binary bodies of events: `EventPage.decode` over pull pages, as a client reads them from
/// a server, and `EventBatch.decode` and `EventBatch.decodeKeyed` over pushes (plain, and
/// carrying key store changes), as the server reads them from a device. Every input goes to all
/// three (each refuses the others' magic at once).
///
/// A page that decodes must encode to a page that decodes to the same content, and carry the
/// same content as a JSON pull page (the two forms of one response). A batch that decodes must
/// encode (its valid events, hashed again) to a batch that decodes to the same events, which
/// carries what its JSON form carries; and it holds no more events than its bytes can. A keyed
/// batch that decodes carries valid key changes, no more than the limit, and reads back from its
/// own encoding with the same changes and the events its plain form holds.
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
            Seed(name: "keyed-one", bytes: EventBatch.encode(device: "anna-phone", keys: sampleKeys, events: [SampleEvents.all[0]])),
            Seed(name: "keyed-no-events", bytes: EventBatch.encode(device: "anna-phone", keys: sampleKeys, events: [])),
            Seed(name: "keyed-invalid-type", bytes: EventBatch.encode(device: "anna-phone", keys: sampleKeys, events: [invalid])),
        ]
    }

    /// Key changes of each kind: a create-only write, a write, a deletion, an empty value.
    static let sampleKeys = [
        KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000006", value: [1, 2, 3], createOnly: true),
        KeyChange(name: "device/anna-phone", value: [UInt8](repeating: 7, count: 32)),
        KeyChange(name: "asset/0193a5b2-7c00-7000-8000-000000000007", value: nil),
        KeyChange(name: "ring/ben", value: []),
    ]

    static func accepts(_ input: [UInt8]) -> Bool {
        (try? EventPage.decode(input)) != nil || (try? EventBatch.decode(input)) != nil || (try? EventBatch.decodeKeyed(input)) != nil
    }

    static func run(_ input: [UInt8]) {
        checkPage(input)
        checkBatch(input)
        checkKeyedBatch(input)
    }

    private static func checkKeyedBatch(_ input: [UInt8]) {
        guard let push = try? EventBatch.decodeKeyed(input) else { return }
        require(push.keys.count <= KeyStoreBody.maximumChanges, "\(push.keys.count) key changes decoded")
        for change in push.keys {
            require(KeyEntryName.problem(with: change.name) == nil, "an invalid key name decoded: \(change.name)")
            require((change.value?.count ?? 0) <= KeyEntryName.maximumValueBytes, "a key value over the limit decoded")
        }
        let valid = push.validEvents
        let plain = try? EventBatch.decode(EventBatch.encode(device: push.device, events: valid))
        if push.keys.isEmpty {
            // Without changes the encoder writes the plain form, which the keyed decoder refuses.
            require(plain?.events.count == valid.count, "the keyed batch's events do not read back as a plain batch")
            return
        }
        let again = try? EventBatch.decodeKeyed(EventBatch.encode(device: push.device, keys: push.keys, events: valid))
        require(again?.keys == push.keys, "the keyed batch's changes do not decode from its own encoding")
        require(again?.events == plain?.events, "the keyed batch's events are not those of its plain form")
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
