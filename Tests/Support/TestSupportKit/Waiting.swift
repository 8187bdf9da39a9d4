import Dispatch
import Foundation
import Synchronization

/// How long a test waits for something a working program does in a moment (a rendition made, a
/// notification delivered, a process started): a bound that only ends a broken run, never one
/// a slow or busy machine reaches. Tests wait on the event itself; this is the safety net.
public enum TestPatience {
    /// Ten minutes.
    public static let limit: Duration = .seconds(600)

    /// ``limit`` from now, for Dispatch waits.
    public static var dispatchDeadline: DispatchTime { .now() + .seconds(Int(limit.components.seconds)) }

    /// ``limit`` from now, for waits on `Date`.
    public static var dateDeadline: Date { Date().addingTimeInterval(TimeInterval(limit.components.seconds)) }
}

/// A count of events one side signals, from any thread, and the other awaits: waiting suspends
/// the task instead of blocking a thread of Swift's cooperative pool, so the work being waited
/// for can run even when the tests run in parallel on a small machine.
public final class TestSignal: Sendable {
    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Bool, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var count = 0
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = Mutex(State())

    /// A signal not yet signalled.
    public init() {}

    /// Signals once: wakes the longest waiting task, or the next one to wait.
    public func signal() {
        let waiter = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.count += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.timer?.cancel()
        waiter?.continuation.resume(returning: true)
    }

    /// Waits for one signal; false when none came within `limit` (a broken run).
    @discardableResult
    public func wait(atMost limit: Duration = TestPatience.limit) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> Int? in
                if state.count > 0 {
                    state.count -= 1
                    return nil
                }
                state.nextID += 1
                state.waiters.append(Waiter(id: state.nextID, continuation: continuation))
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            let timer = Task { [self] in
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                expire(id)
            }
            // The signal may have come meanwhile: then the timer is no longer wanted.
            let attached = state.withLock { state -> Bool in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return false }
                state.waiters[index].timer = timer
                return true
            }
            if !attached { timer.cancel() }
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(returning: false)
    }
}

/// A wait that ended without what it waited for: the process's output ended first, or the
/// safety net of ``TestPatience`` ran out.
public struct TestWaitError: Error, CustomStringConvertible {
    /// What was waited for, and why the wait ended.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// What a child process writes to a pipe, read on a thread of its own as it comes (so the
/// process never blocks on a full pipe), until the process and its children close it. A test
/// waits for the line that says the process is ready (its port, a log line), not for a time.
public final class ProcessOutput: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var ended = false
    }

    private let state = Mutex(State())
    private let end = DispatchSemaphore(value: 0)

    /// Starts reading `handle` (the reading end of the process's pipe).
    public init(_ handle: FileHandle) {
        let reader = Thread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                state.withLock { $0.bytes += data }
            }
            state.withLock { $0.ended = true }
            end.signal()
        }
        reader.name = "process output"
        reader.start()
    }

    /// What arrived so far, as text.
    public var text: String { String(decoding: state.withLock { $0.bytes }, as: UTF8.self) }

    /// Waits, suspending, until `parse` finds what it looks for in the output so far, and
    /// returns it; throws when the output ends without it, or after `limit` (a broken run).
    public func value<T>(_ what: String, atMost limit: Duration = TestPatience.limit, _ parse: (String) -> T?) async throws -> T {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while true {
            let (bytes, ended) = state.withLock { ($0.bytes, $0.ended) }
            let text = String(decoding: bytes, as: UTF8.self)
            if let value = parse(text) { return value }
            if ended { throw TestWaitError("the output ended before \(what): \(text)") }
            if clock.now >= deadline { throw TestWaitError("no \(what) within \(limit): \(text)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits, suspending, until the output contains `needle`.
    public func wait(for needle: String, atMost limit: Duration = TestPatience.limit) async throws {
        try await value("'\(needle)'", atMost: limit) { $0.contains(needle) ? () : nil }
    }

    /// Waits (blocking) for the end of the output and returns all of it.
    public func waitForEnd() -> String {
        end.wait()
        end.signal()
        return text
    }
}

/// Runs `body` on a thread of its own and returns what it returns: for a sequence of steps that
/// must follow each other within a bound the program under test sets (a pull's longest wait, say),
/// which a task could miss while it waits its turn on Swift's cooperative pool, whose few threads
/// other tests running in parallel may hold with long computations.
public func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result(catching: body)) }
        thread.name = "test steps"
        thread.start()
    }
}

/// Checks `condition` every millisecond on the calling thread until it holds; throws
/// ``TestWaitError`` after ``TestPatience/limit``.
public func blockUntil(_ what: String, _ condition: () throws -> Bool) throws {
    let deadline = TestPatience.dateDeadline
    while try !condition() {
        guard Date() < deadline else { throw TestWaitError("timed out waiting until \(what)") }
        usleep(1000)
    }
}
