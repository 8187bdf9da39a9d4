import Foundation
import Synchronization

/// A hybrid logical clock stamp: 48 bits of Unix milliseconds and a 16-bit logical counter,
/// packed into one integer so stamps compare and sort as plain numbers.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The packed value: `milliseconds << 16 | counter`.
    public let rawValue: UInt64

    /// Creates a stamp from its packed value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Creates a stamp from its parts.
    public init(milliseconds: UInt64, counter: UInt16) {
        self.rawValue = (milliseconds << 16) | UInt64(counter)
    }

    /// The physical part, in Unix milliseconds.
    public var milliseconds: UInt64 { rawValue >> 16 }
    /// The logical counter.
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    /// The earliest stamp.
    public static let zero = HLCTimestamp(rawValue: 0)

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The wall-clock time of the physical part.
    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// `2026-11-30T06:23:10.123Z#0003`: the physical time in ISO 8601 and the counter.
    public var description: String {
        let seconds = time_t(milliseconds / 1000)
        var parts = tm()
        var copy = seconds
        gmtime_r(&copy, &parts)
        let counterText = String(counter, radix: 16)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ#%@", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
            Int(milliseconds % 1000), String(repeating: "0", count: 4 - counterText.count) + counterText)
    }
}

/// A stamp from another device was too far ahead of this device's clock.
public struct ClockDriftError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stamp received.
    public let received: HLCTimestamp
    /// This device's physical time when it was received, in Unix milliseconds.
    public let localMilliseconds: UInt64
    /// The largest drift accepted, in milliseconds.
    public let maximumDriftMilliseconds: UInt64

    public var description: String {
        let ahead = (received.milliseconds &- localMilliseconds) / 1000
        return "a timestamp \(ahead) s ahead of this clock was refused (at most \(maximumDriftMilliseconds / 1000) s "
            + "allowed); check the date and time settings of the device that made it"
    }
}

/// A hybrid logical clock (Kulkarni et al.): stamps follow physical time when it moves forward,
/// never go backwards when it does not, and advance past every stamp received.
///
/// The physical clock is injected, so tests control time. The clock is thread-safe.
public final class HybridLogicalClock: Sendable {
    private let physical: @Sendable () -> UInt64
    private let state: Mutex<HLCTimestamp>
    /// The largest amount a received stamp may be ahead of physical time.
    public let maximumDriftMilliseconds: UInt64

    /// Creates a clock that starts after `last` (a stamp persisted by a previous run).
    public init(
        physicalClock: @escaping @Sendable () -> UInt64 = { WallClock.milliseconds() },
        last: HLCTimestamp = .zero,
        maximumDriftMilliseconds: UInt64 = 5 * 60 * 1000
    ) {
        self.physical = physicalClock
        self.state = Mutex(last)
        self.maximumDriftMilliseconds = maximumDriftMilliseconds
    }

    /// The last stamp issued or received.
    public var lastTimestamp: HLCTimestamp { state.withLock { $0 } }

    /// A new stamp for a local event, greater than every stamp issued or received before.
    public func now() -> HLCTimestamp {
        state.withLock { last in
            let wall = physical()
            if wall > last.milliseconds {
                last = HLCTimestamp(milliseconds: wall, counter: 0)
            } else {
                last = Self.successor(of: last)
            }
            return last
        }
    }

    /// Merges a stamp received from another device, so later local stamps come after it.
    ///
    /// - Throws: ``ClockDriftError`` when the stamp is further ahead of physical time than
    ///   ``maximumDriftMilliseconds``; the clock is left unchanged.
    public func receive(_ remote: HLCTimestamp) throws {
        let wall = physical()
        if remote.milliseconds > wall, remote.milliseconds - wall > maximumDriftMilliseconds {
            throw ClockDriftError(received: remote, localMilliseconds: wall, maximumDriftMilliseconds: maximumDriftMilliseconds)
        }
        state.withLock { last in if remote > last { last = remote } }
    }

    private static func successor(of stamp: HLCTimestamp) -> HLCTimestamp {
        stamp.counter == UInt16.max
            ? HLCTimestamp(milliseconds: stamp.milliseconds + 1, counter: 0)
            : HLCTimestamp(rawValue: stamp.rawValue + 1)
    }
}
