import Foundation
import FuzzSupport
import LedgerCore
import PhotoLedger

/// Event payloads through the schema's verdict for every event type (and a type this build
/// does not know) in every schema version (with the writer's claims kept and only checked: the
/// verdicts must agree), then the valid ones folded into a `ProjectionBatch`
/// in memory, and position keys made among the album members the fold holds, as an insert
/// makes them.
///
/// An input is a list of events, each written as:
///
/// | bytes | field |
/// |---|---|
/// | 1 | the type: `EventType.allCases[n]`, or a type this build does not know when `n` is past them |
/// | 1 | the schema version (255: 2³¹−1) |
/// | 1 | bits 0–1 the object, 2–3 the device, 4 sealed, 5 bound to another library, 6 unbound, 7 format 1 |
/// | 2 | the clock's milliseconds (big-endian) |
/// | 2 + n | the payload, after its length (big-endian) |
@main
enum PayloadsTarget: FuzzTarget {
    static let library = SampleEvents.library
    static let objects = (0..<4).map { SampleEvents.identifier(0xA0 + UInt8($0)) }
    static let devices: [DeviceID] = ["anna-phone", "ben-laptop", "cleo-tablet", "anna-phone"]
    /// The type every unknown type byte names.
    static let unknownType = "asset.rotated"
    /// This build's schema, also reading `album.renamed` version 3 (converted unchanged), as a
    /// build that registered an upcaster does.
    static let schema = EventSchema.standard.reading(.albumRenamed, version: 3) { $0 }
    /// The most events folded from one input.
    static let maximumEvents = 64

    static func seeds() -> [Seed] {
        let samples = InMemoryFold.samplePayloads(claimsBefore: 1 << 16)
        var all = FuzzInputWriter()
        var seeds = samples.enumerated().map { index, sample in
            var writer = FuzzInputWriter()
            write(sample.type, sample.version, sample.payload, flags: UInt8(index % 4), milliseconds: 2, into: &writer)
            write(sample.type, sample.version, sample.payload, flags: UInt8(index % 4) | 0x04, milliseconds: 3, into: &all)
            return Seed(name: "\(sample.type.rawValue)-v\(sample.version)-\(index)", bytes: writer.bytes)
        }
        seeds.append(Seed(name: "all", bytes: all.bytes))
        return seeds
    }

    /// Whether every event of `input` folds.
    static func accepts(_ input: [UInt8]) -> Bool {
        var reader = FuzzInput(input)
        var fold = InMemoryFold(library: library, schema: schema)
        var index = 0
        while !reader.isAtEnd {
            guard fold.add(nextEvent(&reader, index: index)) else { return false }
            index += 1
        }
        return true
    }

    private static func write(
        _ type: EventType, _ version: Int, _ payload: [UInt8], flags: UInt8, milliseconds: UInt16, into writer: inout FuzzInputWriter
    ) {
        writer.byte(UInt8(EventType.allCases.firstIndex(of: type)!))
        writer.byte(UInt8(version))
        writer.byte(flags)
        writer.uint16(milliseconds)
        writer.counted(payload)
    }

    static func run(_ input: [UInt8]) {
        var reader = FuzzInput(input)
        var fold = InMemoryFold(library: library, schema: schema)
        var index = 0
        while !reader.isAtEnd && index < maximumEvents {
            let event = nextEvent(&reader, index: index)
            require(fold.claimReadingsAgree(on: event), "claims kept and claims checked judge \(event) differently")
            let folded = fold.add(event)
            require(!folded || (EventType(rawValue: event.type) != nil && event.seal == nil), "\(event.type) folded: \(event)")
            index += 1
        }
        require(fold.eventCount == index, "\(fold.eventCount) events judged of \(index)")
        _ = fold.touchedObjects
        var random = SeededRandomNumberGenerator(seed: UInt64(input.count))
        for (album, keys) in fold.insertionKeys(using: &random) {
            require(keys.allSatisfy { !$0.isEmpty && $0.utf8.last != UInt8(ascii: "0") }, "album \(album): invalid keys \(keys)")
        }
    }

    private static func nextEvent(_ reader: inout FuzzInput, index: Int) -> Event {
        let typeByte = Int(reader.byte())
        let type = typeByte < EventType.allCases.count ? EventType.allCases[typeByte].rawValue : unknownType
        let versionByte = reader.byte()
        let version = versionByte == 255 ? Int(Int32.max) : Int(versionByte)
        let flags = reader.byte()
        let milliseconds = UInt64(reader.uint16())
        let payload = reader.bytes(upTo: Int(reader.uint16()))
        let formatOne = flags & 0x80 != 0
        let bound: UUID? = formatOne || flags & 0x40 != 0 ? nil : (flags & 0x20 != 0 ? SampleEvents.identifier(0xEE) : library)
        return Event(
            id: SampleEvents.identifier(UInt8(index)), library: bound, device: devices[Int(flags >> 2 & 3)],
            deviceSequence: Int64(index + 1), timestamp: HLCTimestamp(milliseconds: milliseconds, counter: UInt16(index)),
            changeBlock: SampleEvents.identifier(0xCB), object: objects[Int(flags & 3)], type: type, schemaVersion: version,
            seal: !formatOne && flags & 0x10 != 0 ? Event.Seal(keyID: 1, nonce: [UInt8](repeating: 1, count: 24)) : nil, payload: payload,
            format: formatOne ? .v1 : .v2)
    }
}
