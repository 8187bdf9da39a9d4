import CCrypto
import Foundation
import Synchronization

extension UUID {
    /// The 16 bytes of the UUID, in RFC 9562 order.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: uuid) { Array($0) }
    }

    /// The UUID as `uuidString` writes it, in lowercase (8-4-4-4-12 hexadecimal digits), made
    /// without formatting through the C library: key store names are made by the ten thousand.
    public var lowercaseString: String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits.utf8Start[Int(byte >> 4)]
                    text[at + 1] = digits.utf8Start[Int(byte & 0xF)]
                    at += 2
                }
                return at
            }
        }
    }

    /// A random (version 4) UUID from the system's generator (`getrandom`). Foundation's `UUID()`
    /// opens, reads and closes `/dev/urandom` for each one: this is for the names of temporary
    /// files that a change block makes.
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var value = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &value) { bytes in
            bytes[6] = bytes[6] & 0x0F | 0x40
            bytes[8] = bytes[8] & 0x3F | 0x80
            return UUID(bytes: UnsafeRawBufferPointer(bytes))!
        }
    }

    /// Whether this UUID's bytes come before `other`'s in lexicographic order (the order of
    /// SQLite's BLOB keys), compared as two big-endian 64-bit words.
    @inlinable
    public func precedes(_ other: UUID) -> Bool {
        let (a, b) = withUnsafeBytes(of: uuid) {
            ($0.loadUnaligned(as: UInt64.self).bigEndian, $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian)
        }
        let (c, d) = withUnsafeBytes(of: other.uuid) {
            ($0.loadUnaligned(as: UInt64.self).bigEndian, $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian)
        }
        return a < c || (a == c && b < d)
    }

    /// Creates a UUID from exactly 16 bytes, or returns nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// Creates a UUID from 16 bytes at the start of a buffer, or returns nil.
    public init?(bytes buffer: UnsafeRawBufferPointer) {
        guard buffer.count == 16 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: buffer) }
        self.init(uuid: value)
    }

    /// The Unix time in milliseconds stored in a version 7 UUID.
    public var unixMilliseconds: UInt64 {
        let b = bytes
        return b[0..<6].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The version number (7 for time-ordered UUIDs).
    public var version: Int { Int(bytes[6] >> 4) }

    /// A name-based UUID: SHA-256 of the namespace and name, marked version 8 as RFC 9562
    /// suggests for SHA-256 name-based identifiers. The same namespace and name give the same
    /// identifier on every device.
    public static func named(_ name: String, in namespace: UUID) -> UUID {
        var digest = SHA256()
        digest.update(namespace.bytes)
        digest.update(Array(name.utf8))
        var bytes = Array(digest.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(bytes: bytes)!
    }
}

/// Makes time-ordered version 7 UUIDs (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit
/// counter that keeps identifiers made in the same millisecond in creation order, then 62 random
/// bits. Identifiers from one generator are strictly increasing even if the clock steps back.
public final class UUIDv7Generator: Sendable {
    private struct State: ~Copyable {
        var random: any RandomNumberGenerator & Sendable
        var lastMilliseconds: UInt64 = 0
        var counter: UInt16 = 0
    }

    private let clock: @Sendable () -> UInt64
    private let state: Mutex<State>

    /// A generator over the system clock and the system's random source.
    public convenience init() {
        self.init(clock: { WallClock.milliseconds() }, random: BufferedSystemRandom())
    }

    /// A generator over an injected clock (Unix milliseconds) and random source.
    public init(clock: @escaping @Sendable () -> UInt64, random: any RandomNumberGenerator & Sendable) {
        self.clock = clock
        self.state = Mutex(State(random: random))
    }

    /// The next identifier.
    public func next() -> UUID {
        let (now, counter, tail) = state.withLock { state in
            var now = clock()
            if now <= state.lastMilliseconds {
                now = state.lastMilliseconds
                if state.counter == 0x0FFF {
                    now += 1
                    state.counter = 0
                } else {
                    state.counter += 1
                }
            } else {
                state.counter = 0
            }
            state.lastMilliseconds = now
            return (now, state.counter, state.random.next() as UInt64)
        }
        var b = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { b[index] = UInt8(truncatingIfNeeded: now >> (40 - 8 * UInt64(index))) }
        b[6] = 0x70 | UInt8(counter >> 8)
        b[7] = UInt8(truncatingIfNeeded: counter)
        for index in 0..<8 { b[8 + index] = UInt8(truncatingIfNeeded: tail >> (56 - 8 * UInt64(index))) }
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(bytes: b)!
    }
}

/// The system's wall clock.
public enum WallClock {
    /// Milliseconds since the Unix epoch.
    public static func milliseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
    }
}

/// A device's stable name within a library, such as `anna-phone`.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name.
    public let rawValue: String

    /// Creates a device identifier from a name.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    /// Why `name` cannot name a device, or nil when it can: 1–64 characters of letters, digits,
    /// `-`, `_` and `.`.
    public static func problem(with name: String) -> String? {
        if name.isEmpty || name.utf8.count > 64 { return "a device name must have 1 to 64 characters" }
        return name.utf8.allSatisfy(isAllowed) ? nil : "a device name may contain only letters, digits, '-', '_' and '.'"
    }

    /// Whether `utf8` (the bytes of a name, not yet made a string) names a device: what
    /// ``problem(with:)`` accepts, checked without making a string.
    public static func isValid(utf8: UnsafeRawBufferPointer) -> Bool {
        (1...64).contains(utf8.count) && utf8.allSatisfy(isAllowed)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
    }
}

/// libcrypto's generator (seeded from the system's random source) read 512 bytes at a time,
/// instead of one system call per value (identifiers are made by the thousand in an import).
struct BufferedSystemRandom: RandomNumberGenerator, Sendable {
    private var buffer = [UInt64](repeating: 0, count: 64)
    private var index = 64

    mutating func next() -> UInt64 {
        if index == buffer.count {
            buffer.withUnsafeMutableBytes { raw in
                if RAND_bytes(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(raw.count)) != 1 {
                    // libcrypto's generator could not seed: the standard library's source fills the buffer.
                    var system = SystemRandomNumberGenerator()
                    for offset in raw.indices { raw[offset] = system.next() }
                }
            }
            index = 0
        }
        defer { index += 1 }
        return buffer[index]
    }
}
