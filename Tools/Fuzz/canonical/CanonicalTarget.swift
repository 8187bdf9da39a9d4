import Foundation
import FuzzSupport
import LedgerCore

/// `Event.readCanonical` over canonical bytes of formats 1 and 2, as the archive, the log and
/// binary pull pages hold them: events are read one after another until the bytes end or
/// one is refused, each with and without the envelope checks. Every event read must write
/// canonical bytes that read back as the same event.
@main
enum CanonicalTarget: FuzzTarget {
    static func seeds() -> [Seed] {
        SampleEvents.all.enumerated().map { Seed(name: "event-\($0.offset + 1)", bytes: $0.element.canonicalBytes) }
            + [Seed(name: "events-all", bytes: SampleEvents.all.flatMap(\.canonicalBytes))]
    }

    static func accepts(_ input: [UInt8]) -> Bool {
        var reader = ByteReader(input)
        while !reader.isAtEnd {
            guard (try? Event.readCanonical(from: &reader)) != nil else { return false }
        }
        return true
    }

    static func run(_ input: [UInt8]) {
        for validating in [true, false] {
            var reader = ByteReader(input)
            while !reader.isAtEnd, let event = try? Event.readCanonical(from: &reader, validating: validating) {
                check(event, validating: validating)
            }
        }
    }

    private static func check(_ event: Event, validating: Bool) {
        require(!validating || event.envelopeProblem == nil, "an event read with validation has a problem: \(event)")
        let bytes = event.canonicalBytes
        var reader = ByteReader(bytes)
        let again = try? Event.readCanonical(from: &reader, validating: validating)
        require(again == event && reader.isAtEnd, "\(event) does not read back from its canonical bytes")
        require(event.contentHash.count == 32, "a content hash of \(event.contentHash.count) bytes")
        require(bytes.starts(with: event.envelopeBytes), "the envelope bytes do not start the canonical bytes")
    }
}
