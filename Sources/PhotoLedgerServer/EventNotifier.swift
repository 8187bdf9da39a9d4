import Foundation
import SyncProtocol
import Synchronization

/// Wakes the pulls that wait for a library's next events (`GET …/events?since=N&wait=S`).
///
/// Per library it keeps the last server sequence committed through this process and the pulls
/// waiting for events after their cursor. A push that stored events calls
/// ``committed(libraryID:through:)`` once its transaction has committed; every pull of that
/// library waiting for events before that sequence is then woken, once, outside the lock. A pull
/// that registers after the commit it waits for (its page was read just before the commit) is
/// told so at once, so no wake-up is lost between reading a page and starting to wait.
///
/// The server tells it of its own pushes; the commits of other server processes in front of
/// the same store come through the store's ``ServerStore/watchCommits(_:)`` (PostgreSQL's
/// `LISTEN`/`NOTIFY`).
public final class EventNotifier: Sendable {
    /// What ``wait(libraryID:since:until:wake:)`` did.
    public enum Registration: Sendable, Equatable {
        /// The pull waits; `ticket` cancels it.
        case waiting(Ticket)
        /// Events after `since` were committed before the pull registered: read them now.
        case alreadyCommitted
        /// As many pulls wait as the notifier allows: answer this one another way.
        case full
        /// The notifier is closed (the server is stopping): answer the pull now.
        case closed
    }

    /// A waiting pull's registration.
    public struct Ticket: Sendable, Hashable {
        let libraryID: Int64
        let id: UInt64
    }

    /// Why a waiting pull was woken.
    public enum Wake: String, Sendable {
        /// Events after its cursor were committed.
        case events
        /// Its wait ended.
        case timeout
        /// The server is stopping.
        case shutdown
    }

    private struct Waiter {
        let since: Int64
        let deadline: UInt64
        let wake: @Sendable (Wake) -> Void
    }

    private struct Library {
        var lastCommitted: Int64 = 0
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct State {
        var libraries: [Int64: Library] = [:]
        var count = 0
        var nextID: UInt64 = 1
        var closed = false
        /// No waiter's deadline is earlier than this (it may be later after removals).
        var earliestDeadline = UInt64.max
    }

    /// The most pulls that may wait at once.
    public let capacity: Int
    private let state = Mutex(State())

    /// A notifier that lets at most `capacity` pulls wait at once.
    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The number of pulls waiting now.
    public var waitingCount: Int { state.withLock { $0.count } }

    /// Registers a pull of `libraryID` that found no events after `since`: `wake` is called once,
    /// from another thread, when events after `since` are committed, when the monotonic clock
    /// (``MonotonicClock``) passes `deadline` (milliseconds) in ``expire(now:)``, or when the
    /// notifier closes. It is not called when the answer is other than ``Registration/waiting(_:)``,
    /// nor after ``cancel(_:)`` returned true.
    public func wait(libraryID: Int64, since: Int64, until deadline: UInt64, wake: @escaping @Sendable (Wake) -> Void) -> Registration {
        state.withLock { state in
            if state.closed { return .closed }
            if let library = state.libraries[libraryID], library.lastCommitted > since { return .alreadyCommitted }
            guard state.count < capacity else { return .full }
            let id = state.nextID
            state.nextID += 1
            state.libraries[libraryID, default: Library()].waiters[id] = Waiter(since: since, deadline: deadline, wake: wake)
            state.count += 1
            state.earliestDeadline = min(state.earliestDeadline, deadline)
            return .waiting(Ticket(libraryID: libraryID, id: id))
        }
    }

    /// Records that the library's events up to `sequence` are committed, and wakes the pulls
    /// waiting for events before it.
    public func committed(libraryID: Int64, through sequence: Int64) {
        let woken: [Waiter] = state.withLock { state in
            let previous = state.libraries[libraryID]?.lastCommitted ?? 0
            state.libraries[libraryID, default: Library()].lastCommitted = max(previous, sequence)
            guard let waiters = state.libraries[libraryID]?.waiters, !waiters.isEmpty else { return [] }
            var woken: [Waiter] = []
            var remaining: [UInt64: Waiter] = [:]
            for (id, waiter) in waiters {
                if waiter.since < sequence { woken.append(waiter) } else { remaining[id] = waiter }
            }
            state.libraries[libraryID]!.waiters = remaining
            state.count -= woken.count
            return woken
        }
        for waiter in woken { waiter.wake(.events) }
    }

    /// Records the events a push stored, once its transaction has committed: wakes the library's
    /// waiting pulls when it stored any.
    public func committed(_ response: PushResponse, libraryID: Int64) {
        var last: Int64 = 0
        for result in response.results {
            if case .stored(let sequence) = result.status { last = max(last, sequence) }
        }
        if last > 0 { committed(libraryID: libraryID, through: last) }
    }

    /// Removes a waiting pull without waking it; returns false when it was woken already (its
    /// `wake` has been or is being called).
    public func cancel(_ ticket: Ticket) -> Bool {
        state.withLock { state in
            guard state.libraries[ticket.libraryID]?.waiters.removeValue(forKey: ticket.id) != nil else { return false }
            state.count -= 1
            return true
        }
    }

    /// Wakes the pulls whose deadline is at or before `now` (monotonic milliseconds).
    public func expire(now: UInt64) {
        let woken: [Waiter] = state.withLock { state in
            guard now >= state.earliestDeadline else { return [] }
            var woken: [Waiter] = []
            var earliest = UInt64.max
            for libraryID in Array(state.libraries.keys) {
                state.libraries[libraryID]!.waiters = state.libraries[libraryID]!.waiters.filter { _, waiter in
                    if waiter.deadline <= now {
                        woken.append(waiter)
                        return false
                    }
                    earliest = min(earliest, waiter.deadline)
                    return true
                }
            }
            state.count -= woken.count
            state.earliestDeadline = earliest
            return woken
        }
        for waiter in woken { waiter.wake(.timeout) }
    }

    /// Wakes every waiting pull to look for events again, without closing: commits may have
    /// been missed (the store's commit subscription was lost and is back).
    public func wakeAll() {
        let woken: [Waiter] = state.withLock { state in
            let woken = state.libraries.values.flatMap { $0.waiters.values }
            for libraryID in Array(state.libraries.keys) { state.libraries[libraryID]!.waiters = [:] }
            state.count = 0
            state.earliestDeadline = .max
            return woken
        }
        for waiter in woken { waiter.wake(.events) }
    }

    /// Lets pulls wait again after ``close()`` (the server starts again).
    public func reopen() {
        state.withLock { $0.closed = false }
    }

    /// Wakes every waiting pull and refuses new ones (the server is stopping).
    public func close() {
        let woken: [Waiter] = state.withLock { state in
            state.closed = true
            let woken = state.libraries.values.flatMap { $0.waiters.values }
            for libraryID in Array(state.libraries.keys) { state.libraries[libraryID]!.waiters = [:] }
            state.count = 0
            state.earliestDeadline = .max
            return woken
        }
        for waiter in woken { waiter.wake(.shutdown) }
    }
}

/// Milliseconds of the system's monotonic clock (`CLOCK_MONOTONIC`): deadlines that wall-clock
/// changes do not move.
public enum MonotonicClock {
    /// The current reading.
    public static func milliseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
    }
}
