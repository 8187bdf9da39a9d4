import Foundation
import Synchronization
@_exported import TestSupportKit
import Testing

@testable import SyncTransport

/// A random number generator that returns the given values in a loop.
struct ScriptedRandom: RandomNumberGenerator, Sendable {
    /// `next()` values that `RandomSource` turns into these exact fractions.
    static let half: UInt64 = 1 << 63
    static let quarter: UInt64 = 1 << 62
    static let threeQuarters: UInt64 = 3 << 62

    var values: [UInt64]
    private var index = 0

    init(_ values: [UInt64]) { self.values = values }

    mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[index % values.count]
    }
}

/// Records every delay instead of sleeping.
final class RecordingSleep: Sendable {
    private let delays = Mutex<[Duration]>([])

    var recorded: [Duration] { delays.withLock { $0 } }

    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] delay in
            delays.withLock { $0.append(delay) }
            try Task.checkCancellation()
        }
    }
}

/// An in-memory transport that plays a script of outcomes and records what it was sent.
final class ScriptedTransport: HTTPTransport {
    private let outcomes: Mutex<[Result<HTTPResponse, any Error>]>
    private let sent = Mutex<[HTTPRequest]>([])

    init(_ outcomes: [Result<HTTPResponse, any Error>]) { self.outcomes = Mutex(outcomes) }

    var requests: [HTTPRequest] { sent.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        sent.withLock { $0.append(request) }
        let outcome = outcomes.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
        return try outcome.get()
    }
}

/// Records progress reports from the transfer thread.
final class ProgressLog: Sendable {
    private let reports = Mutex<[TransferProgress]>([])

    var all: [TransferProgress] { reports.withLock { $0 } }

    var handler: @Sendable (TransferProgress) -> Void { { [self] progress in reports.withLock { $0.append(progress) } } }
}

/// Deterministic bytes of the given length (a loop over a raw buffer: debug builds are slow with `map`).
func patternBytes(count: Int, seed: UInt8 = 7) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var value = seed
        for index in 0..<count {
            value = value &* 31 &+ UInt8(truncatingIfNeeded: index >> 10) &+ 1
            buffer[index] = value
        }
        initialized = count
    }
}

/// A port on 127.0.0.1 where nothing listens: bound once, then released.
func closedLoopbackPort() throws -> UInt16 {
    let server = try ScriptedHTTPServer { _ in .closeWithoutAnswer }
    let port = server.port
    server.stop()
    Thread.sleep(forTimeInterval: 0.05)
    return port
}

/// Checks that progress counts never go backwards.
func expectMonotonic(_ reports: [TransferProgress], sourceLocation: SourceLocation = #_sourceLocation) {
    for (previous, next) in zip(reports, reports.dropFirst()) {
        #expect(next.bytesSent >= previous.bytesSent, sourceLocation: sourceLocation)
        #expect(next.bytesReceived >= previous.bytesReceived, sourceLocation: sourceLocation)
    }
}

/// Runs blocking work (a child process, polling) on a thread of its own, so that it does not hold
/// one of the few cooperative threads that timing-sensitive tests share.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
