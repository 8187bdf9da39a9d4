import Foundation

/// What every fuzz target provides. Each target is one file of `Tools/Fuzz` compiled with this
/// folder's files into a libFuzzer executable by `Tools/fuzz.sh`; the file declares
/// `enum Target: FuzzTarget`.
protocol FuzzTarget {
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
struct Seed {
    /// The file name.
    var name: String
    /// The input.
    var bytes: [UInt8]
    /// Whether the code under test must refuse it (a limit, a field that is invalid on purpose).
    var refused = false
}

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Target.run(size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : [])
    return 0
}

/// libFuzzer's set-up hook. With `PHOTOLEDGER_FUZZ_WRITE_SEEDS=DIR` in the environment the
/// target writes its seed corpus into `DIR` and exits instead of fuzzing; it fails when the
/// code under test does not accept a seed as expected.
@_cdecl("LLVMFuzzerInitialize")
func initialize(
    _ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> CInt {
    guard let directory = ProcessInfo.processInfo.environment["PHOTOLEDGER_FUZZ_WRITE_SEEDS"] else { return 0 }
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var failed = false
        for seed in Target.seeds() {
            try Data(seed.bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(seed.name))
            if Target.accepts(seed.bytes) == seed.refused {
                FileHandle.standardError.write(Data("the seed \(seed.name) is \(seed.refused ? "accepted" : "refused")\n".utf8))
                failed = true
            }
        }
        exit(failed ? 1 : 0)
    } catch {
        FileHandle.standardError.write(Data("cannot write the seeds to \(directory): \(error)\n".utf8))
        exit(1)
    }
}

/// Ends the process when `condition` is false, so that libFuzzer keeps the input as a crash.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    FileHandle.standardError.write(Data("fuzz check failed: \(message())\n".utf8))
    abort()
}

/// Reads a fuzzer's input as the fields of a structure. Every read succeeds (zeros past the
/// end), so any input is some structure and mutations stay meaningful.
struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte has been read.
    var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next two bytes as a big-endian integer.
    mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// The next `count` bytes, fewer at the end.
    mutating func bytes(upTo count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }
}

/// Writes the fields `FuzzInput` reads, for seeds.
struct FuzzInputWriter {
    /// The bytes written.
    private(set) var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func uint16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// `value` preceded by its length as two bytes.
    mutating func counted(_ value: [UInt8]) {
        precondition(value.count <= Int(UInt16.max), "a counted field holds at most 65535 bytes")
        uint16(UInt16(value.count))
        bytes += value
    }
}
