import Foundation
import LedgerCore
import SyncProtocol
import Testing

/// A pull page of `count` sample events with server sequences from `first` and a real chain.
private func samplePage(_ count: Int, first: Int64 = 1, hasMore: Bool = false) -> PullResponse {
    var chain = HashChain()
    let events = sampleEvents(count).enumerated().map { index, event in
        WireEvent(event, serverSequence: first + Int64(index), chainHash: chain.link(event))
    }
    return PullResponse(events: events, nextCursor: events.last?.serverSequence ?? first - 1, hasMore: hasMore)
}

/// The error `decode` throws, or nil when it decodes.
private func failure(_ bytes: [UInt8]) -> WireFormatError? {
    do {
        _ = try EventPage.decode(bytes)
        return nil
    } catch let error as WireFormatError {
        return error
    } catch {
        Issue.record("not a WireFormatError: \(error)")
        return nil
    }
}

/// Little helpers to build damaged pages by hand.
private struct PageBuilder {
    var writer = ByteWriter()

    init(count: Int, flags: UInt8 = 0, version: UInt8 = 1, cursor: UInt64 = 1) {
        writer.write(raw: Array("PLEP".utf8))
        writer.write(byte: version)
        writer.write(byte: flags)
        writer.write(varint: cursor)
        writer.write(varint: UInt64(count))
    }

    mutating func event(serverSequence: UInt64 = 1, canonical: [UInt8], length: Int? = nil) {
        writer.write(varint: serverSequence)
        writer.write(raw: [UInt8](repeating: 7, count: 32))
        writer.write(raw: SHA256.hash(canonical))
        writer.write(varint: UInt64(length ?? canonical.count))
        writer.write(raw: canonical)
    }
}

@Suite("Binary event pages")
struct EventPageTests {
    @Test("a page survives encode and decode with every event, cursor and flag", arguments: [0, 1, 7, 200])
    func roundTrip(count: Int) throws {
        for hasMore in [false, true] {
            let page = samplePage(count, first: 41, hasMore: hasMore)
            let decoded = try EventPage.decode(EventPage.encode(page))
            #expect(decoded == page)
            let valid = decoded.events.allSatisfy { $0.hasValidHash }
            #expect(valid)
        }
    }

    @Test("the page is the JSON page's content, in about half the bytes")
    func sameContentAsJSON() throws {
        let page = samplePage(100)
        let binary = EventPage.encode(page)
        let json = page.encoded()
        #expect(try PullResponse.decode(json) == EventPage.decode(binary))
        #expect(binary.count * 2 < json.count)
    }

    @Test("each event travels as its canonical bytes, after its sequence and two hashes")
    func layout() throws {
        let page = samplePage(2, first: 300, hasMore: true)
        let bytes = EventPage.encode(page)
        #expect(Array(bytes.prefix(6)) == Array("PLEP".utf8) + [1, 1])
        var reader = ByteReader(bytes)
        _ = try reader.readRaw(count: 6)
        #expect(try reader.readVarint() == 301)  // nextCursor
        #expect(try reader.readVarint() == 2)
        for event in page.events {
            #expect(try reader.readVarint() == UInt64(event.serverSequence!))
            #expect(try reader.readRaw(count: 32) == event.chainHash)
            #expect(try reader.readRaw(count: 32) == event.hash)
            #expect(try reader.readBytes() == event.event.canonicalBytes)
        }
        #expect(reader.isAtEnd)
    }

    @Test("every truncation is refused with an error, never a crash or a shorter page")
    func truncations() {
        let bytes = EventPage.encode(samplePage(3))
        for length in 0..<bytes.count {
            #expect(failure(Array(bytes.prefix(length))) != nil, "a page cut to \(length) of \(bytes.count) bytes decoded")
        }
    }

    @Test("a damaged byte anywhere is refused or changes what decodes; nothing crashes")
    func damage() throws {
        let page = samplePage(3)
        let bytes = EventPage.encode(page)
        var random = SeededRandomNumberGenerator(seed: 7)
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= UInt8.random(in: 1...255, using: &random)
            guard let decoded = try? EventPage.decode(damaged) else { continue }
            // What decodes differs: a hash, a sequence, the cursor or an event whose hash no longer matches.
            #expect(decoded != page, "damage at byte \(index) went unnoticed")
        }
    }

    @Test("a body that is not a page says so")
    func notAPage() {
        #expect(failure(Array(#"{"events":[],"nextCursor":0,"hasMore":false}"#.utf8))?.message.contains("PLEP") == true)
        #expect(failure([])?.message.contains("not an event page") == true)
        var newer = EventPage.encode(samplePage(1))
        newer[4] = 2
        #expect(failure(newer)?.message == "event page format version 2 is not supported (this build reads version 1)")
        var flagged = EventPage.encode(samplePage(1))
        flagged[5] = 0b10
        #expect(failure(flagged)?.field == "flags")
    }

    @Test("trailing bytes and impossible counts are refused")
    func framing() {
        #expect(failure(EventPage.encode(samplePage(2)) + [0])?.message == "1 byte follows the last event")
        #expect(failure(EventPage.encode(samplePage(2)) + [0, 0])?.message == "2 bytes follow the last event")
        let huge = PageBuilder(count: 1_000_000).writer.bytes
        #expect(failure(huge)?.field == "events")
        var cursor = ByteWriter()
        cursor.write(raw: Array("PLEP".utf8) + [1, 0])
        cursor.write(varint: UInt64(Int64.max) + 1)
        cursor.write(varint: 0)
        #expect(failure(cursor.bytes)?.field == "nextCursor")
    }

    @Test("an invalid event field is an error naming the event and the field")
    func invalidFields() {
        let good = sampleEvents(1)[0]
        func page(_ event: Event, serverSequence: UInt64 = 1) -> [UInt8] {
            var builder = PageBuilder(count: 1)
            builder.event(serverSequence: serverSequence, canonical: event.canonicalBytes)
            return builder.writer.bytes
        }
        #expect(failure(page(good)) == nil)
        #expect(failure(page(good, serverSequence: 0))?.field == "events[0].serverSeq")
        var event = good
        event.device = "anna phone"
        #expect(failure(page(event))?.field == "events[0].device")
        event = good
        event.deviceSequence = 0
        #expect(failure(page(event))?.field == "events[0].deviceSeq")
        event = good
        event.type = "asset created"
        #expect(failure(page(event))?.field == "events[0].type")
        event = good
        event.schemaVersion = 0
        #expect(failure(page(event))?.field == "events[0].schemaVersion")

        // Canonical bytes of another format version, or whose length prefix lies.
        var canonical = good.canonicalBytes
        canonical[0] = 3
        var builder = PageBuilder(count: 1)
        builder.event(canonical: canonical)
        #expect(failure(builder.writer.bytes)?.field == "events[0].canonical")
        builder = PageBuilder(count: 1)
        builder.event(canonical: good.canonicalBytes, length: good.canonicalBytes.count + 1)
        #expect(failure(builder.writer.bytes)?.field == "events[0].canonical")

        // A device name that is not UTF-8.
        canonical = good.canonicalBytes
        canonical[1 + 16 + 16 + 1] = 0xFF
        builder = PageBuilder(count: 1)
        builder.event(canonical: canonical)
        let error = failure(builder.writer.bytes)
        #expect(error?.field == "events[0].canonical")
        #expect(error?.message.contains("UTF-8") == true)
    }

    @Test("canonical bytes read back into the event they were written from")
    func canonicalRoundTrip() throws {
        for event in sampleEvents(30) {
            var reader = ByteReader(event.canonicalBytes)
            #expect(try Event.readCanonical(from: &reader) == event)
            #expect(reader.isAtEnd)
        }
    }
}
