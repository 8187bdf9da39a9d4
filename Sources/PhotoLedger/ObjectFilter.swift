import Foundation
import LedgerCore

/// What the batches of a rebuild that began with empty tables have written so far.
struct RebuildProgress {
    /// Assets with a row.
    var assets: ObjectFilter
    /// Assets with at least one membership row.
    var memberAssets: ObjectFilter

    /// Progress sized for a rebuild of about `objects` objects.
    init(objects: Int) {
        assets = ObjectFilter(capacity: objects)
        memberAssets = ObjectFilter(capacity: objects)
    }
}

/// A set of object identifiers that never answers "no" for one inserted, and for one not
/// inserted answers "maybe" rarely (about 1 in 400 at its capacity: a Bloom filter of 16 bits
/// and 4 probes per object). A rebuild's memory then stays at 4 bytes per object, however many
/// objects the log holds, where an exact set would keep every identifier; a "maybe" only costs
/// the read an exact set would have saved.
struct ObjectFilter: Sendable {
    private var words: [UInt64]
    private let mask: UInt64

    /// The most bits a filter takes (8 MiB): beyond 4 million objects, "maybe" grows more frequent.
    private static let maximumBits = 1 << 26

    /// An empty filter for about `capacity` objects.
    init(capacity: Int) {
        var bits = 1 << 12
        while bits < capacity.multipliedReportingOverflow(by: 16).partialValue && bits < Self.maximumBits { bits <<= 1 }
        words = [UInt64](repeating: 0, count: bits / 64)
        mask = UInt64(bits - 1)
    }

    /// Two independent hashes of `id`, mixed so that identifiers that are not random (a
    /// counter, a clock) spread as well as random ones.
    private static func hashes(_ id: UUID) -> (UInt64, UInt64) {
        let (high, low) = withUnsafeBytes(of: id.uuid) {
            ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        var first = (low ^ (high >> 31)) &* 0x9E37_79B9_7F4A_7C15
        first ^= first >> 29
        var second = (high ^ (low >> 27)) &* 0xBF58_476D_1CE4_E5B9
        second ^= second >> 31
        return (first, second | 1)
    }

    /// Adds `id`.
    mutating func insert(_ id: UUID) {
        let (first, second) = Self.hashes(id)
        for probe in 0..<UInt64(4) {
            let bit = (first &+ probe &* second) & mask
            words[Int(bit >> 6)] |= 1 << (bit & 63)
        }
    }

    /// False when `id` was never inserted; true when it was, or rarely when it was not.
    func mayContain(_ id: UUID) -> Bool {
        let (first, second) = Self.hashes(id)
        for probe in 0..<UInt64(4) {
            let bit = (first &+ probe &* second) & mask
            if words[Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }
}
