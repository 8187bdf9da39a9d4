import CFuzzing
import Foundation

/// What every fuzz target provides. Each target is an executable of `Tools/Fuzz`, built with
/// libFuzzer and AddressSanitizer by `Tools/fuzz.sh`; its type is marked `@main` and conforms to
/// this protocol, whose `main()` hands the process to libFuzzer.
public protocol FuzzTarget {
    /// Inputs made by the project's own encoders: the seed corpus.
    static func seeds() -> [Seed]

    /// Whether the code under test accepts `input` (decodes it, folds it): every seed must be
    /// accepted unless it is marked refused, so that encoders and decoders are seen to agree.
    static func accepts(_ input: [UInt8]) -> Bool

    /// Feeds one input to the code under test. Decoders may refuse it; nothing may trap, hang
    /// or allocate without bound, and what the target checks about the results must hold
    /// (``require(_:_:)``).
    static func run(_ input: [UInt8])
}

/// One input of a seed corpus.
public struct Seed {
    /// The file name.
    public var name: String
    /// The input.
    public var bytes: [UInt8]
    /// Whether the code under test must refuse it (a limit, a field that is invalid on purpose).
    public var refused: Bool

    /// A seed named `name`.
    public init(name: String, bytes: [UInt8], refused: Bool = false) {
        self.name = name
        self.bytes = bytes
        self.refused = refused
    }
}

extension FuzzTarget {
    /// The process's entry point. With `PHOTOLEDGER_FUZZ_WRITE_SEEDS=DIR` in the environment the
    /// target writes its seed corpus into `DIR` and exits, failing when the code under test does
    /// not accept a seed as expected; otherwise libFuzzer reads the command line and fuzzes
    /// ``run(_:)``.
    public static func main() {
        if let directory = ProcessInfo.processInfo.environment["PHOTOLEDGER_FUZZ_WRITE_SEEDS"] {
            exit(writeSeeds(to: directory) ? 0 : 1)
        }
        FuzzerEntry.run = run
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(
            LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                FuzzerEntry.run?(size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : [])
                return 0
            })
    }

    /// Writes the seed corpus into `directory`; false when a seed is not accepted as expected or
    /// cannot be written (said on standard error).
    private static func writeSeeds(to directory: String) -> Bool {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var agreed = true
            for seed in seeds() {
                try Data(seed.bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(seed.name))
                if accepts(seed.bytes) == seed.refused {
                    FileHandle.standardError.write(Data("the seed \(seed.name) is \(seed.refused ? "accepted" : "refused")\n".utf8))
                    agreed = false
                }
            }
            return agreed
        } catch {
            FileHandle.standardError.write(Data("cannot write the seeds to \(directory): \(error)\n".utf8))
            return false
        }
    }
}

/// The target libFuzzer calls back: its callback is a C function, which captures nothing.
private enum FuzzerEntry {
    /// Set once by `main()` before libFuzzer starts; libFuzzer runs inputs on one thread.
    nonisolated(unsafe) static var run: (([UInt8]) -> Void)?
}

/// Ends the process when `condition` is false, so that libFuzzer keeps the input as a crash.
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    FileHandle.standardError.write(Data("fuzz check failed: \(message())\n".utf8))
    abort()
}

/// Reads a fuzzer's input as the fields of a structure. Every read succeeds (zeros past the
/// end), so any input is some structure and mutations stay meaningful.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    /// A reader at the start of `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 past the end.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next two bytes as a big-endian integer.
    public mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// The next eight bytes as a big-endian integer.
    public mutating func uint64() -> UInt64 { (0..<8).reduce(UInt64(0)) { value, _ in value << 8 | UInt64(byte()) } }

    /// The next bytes, as many as the two bytes before them say (fewer at the end): what
    /// ``FuzzInputWriter/counted(_:)`` writes.
    public mutating func counted() -> [UInt8] { bytes(upTo: Int(uint16())) }

    /// The bytes not read yet.
    public mutating func rest() -> [UInt8] { bytes(upTo: bytes.count) }

    /// The next `count` bytes, fewer at the end.
    public mutating func bytes(upTo count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }
}

/// Writes the fields `FuzzInput` reads, for seeds.
public struct FuzzInputWriter {
    /// The bytes written.
    public private(set) var bytes: [UInt8] = []

    /// An empty writer.
    public init() {}

    /// One byte.
    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// Two bytes, big-endian.
    public mutating func uint16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// Eight bytes, big-endian.
    public mutating func uint64(_ value: UInt64) { bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }

    /// Bytes as they are.
    public mutating func raw(_ value: [UInt8]) { bytes += value }

    /// `value` preceded by its length as two bytes.
    public mutating func counted(_ value: [UInt8]) {
        precondition(value.count <= Int(UInt16.max), "a counted field holds at most 65535 bytes")
        uint16(UInt16(value.count))
        bytes += value
    }
}
