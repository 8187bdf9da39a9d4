import Foundation
import FuzzSupport
import LedgerCore
import SyncProtocol

/// `EventPage.decode` over binary pull pages, as a client reads them from a server. A page that
/// decodes must encode to a page that decodes to the same content, and carry the same content
/// as a JSON pull page (the two forms of one response).
@main
enum PagesTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        let events = SampleEvents.all.enumerated().map { index, event in
            WireEvent(event, serverSequence: Int64(index + 1), chainHash: [UInt8](repeating: UInt8(index), count: 32))
        }
        var last = events[3]
        last.serverSequence = .max
        return [
            Seed(name: "page-empty", bytes: EventPage.encode(PullResponse(events: [], nextCursor: 0, hasMore: false))),
            Seed(name: "page-one", bytes: EventPage.encode(PullResponse(events: [events[0]], nextCursor: 1, hasMore: true))),
            Seed(name: "page-all", bytes: EventPage.encode(PullResponse(events: events, nextCursor: Int64(events.count), hasMore: false))),
            Seed(name: "page-last", bytes: EventPage.encode(PullResponse(events: [last], nextCursor: .max, hasMore: false))),
        ]
    }

    static func accepts(_ input: [UInt8]) -> Bool { (try? EventPage.decode(input)) != nil }

    static func run(_ input: [UInt8]) {
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
}
