import Foundation
import Synchronization

/// The open connections: the deadlines by which each one's next request must have arrived whole,
/// head then body, before the request handler runs (a connection past its deadline is shut
/// down), and the waiting pulls they hold.
///
/// libmicrohttpd's idle timeout restarts with every byte, so without these a client sending a
/// header line every few seconds holds a connection for as long as it likes. Waiting pulls and
/// responses being sent have no deadline here (the idle timeout still covers a stalled reader).
/// libmicrohttpd does not watch a suspended connection, so ``departedWaitingPulls()`` finds the
/// waiting pulls whose client has gone away.
///
/// Connections are keyed by an identity the HTTP layer chooses (the libmicrohttpd connection's
/// address); a key lives from ``opened(_:socket:address:deadline:)`` to ``closed(_:)``.
final class ConnectionDeadlines: Sendable {
    /// What a connection is waiting for.
    enum Phase: String, Sendable {
        /// The head of a request (request line and header fields).
        case head
        /// The body of a request whose head has arrived.
        case body
    }

    /// A connection shut down for missing its deadline.
    struct Expired: Sendable, Equatable {
        /// The client's address.
        var address: String
        /// What had not arrived in time.
        var phase: Phase
    }

    private struct Entry {
        let socket: Int32
        let address: String
        var phase: Phase
        var deadline: UInt64?
        /// The registration of the pull the connection holds while it waits.
        var waiting: EventNotifier.Ticket?
    }

    private let entries = Mutex<[UInt: Entry]>([:])

    /// The number of open connections.
    var count: Int { entries.withLock { $0.count } }

    /// A new connection, whose first request's head is due by `deadline`.
    func opened(_ connection: UInt, socket: Int32, address: String, deadline: UInt64) {
        entries.withLock { $0[connection] = Entry(socket: socket, address: address, phase: .head, deadline: deadline) }
    }

    /// The connection now waits for `phase`, due by `deadline`.
    func arm(_ connection: UInt, _ phase: Phase, deadline: UInt64) {
        entries.withLock { entries in
            entries[connection]?.phase = phase
            entries[connection]?.deadline = deadline
        }
    }

    /// The connection's request has arrived whole: no deadline until the next request.
    func disarm(_ connection: UInt) {
        entries.withLock { $0[connection]?.deadline = nil }
    }

    /// The connection holds a waiting pull, registered as `ticket`.
    func hold(_ connection: UInt, ticket: EventNotifier.Ticket) {
        entries.withLock { $0[connection]?.waiting = ticket }
    }

    /// The connection's waiting pull has been woken.
    func release(_ connection: UInt) {
        entries.withLock { $0[connection]?.waiting = nil }
    }

    /// The waiting pulls whose client has closed or reset its connection, found by polling their
    /// sockets (under the lock that ``closed(_:)`` takes); bytes a client sends ahead do not count.
    func departedWaitingPulls() -> [(connection: UInt, ticket: EventNotifier.Ticket)] {
        entries.withLock { entries in
            let held = entries.compactMap { key, entry in entry.waiting.map { (key, entry.socket, $0) } }
            guard !held.isEmpty else { return [] }
            var polls = held.map { pollfd(fd: $0.1, events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), 0) > 0 else { return [] }
            var departed: [(connection: UInt, ticket: EventNotifier.Ticket)] = []
            var byte: UInt8 = 0
            for (index, (connection, socket, ticket)) in held.enumerated() where polls[index].revents != 0 {
                let hungUp = polls[index].revents & Int16(POLLHUP | POLLERR) != 0
                let peeked = hungUp ? 0 : recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                if peeked == 0 || (peeked < 0 && errno == ECONNRESET) {
                    departed.append((connection, ticket))
                    entries[connection]?.waiting = nil
                }
            }
            return departed
        }
    }

    /// The connection is closed; its socket may be reused from now on.
    func closed(_ connection: UInt) {
        entries.withLock { _ = $0.removeValue(forKey: connection) }
    }

    /// Shuts down, with `shutdown`, the socket of every connection past its deadline at `now`, and
    /// returns them. `shutdown` runs under the lock that ``closed(_:)`` takes, so it never reaches
    /// a socket number the system has already given to another connection.
    func shutDownExpired(now: UInt64, shutdown: (Int32) -> Void) -> [Expired] {
        entries.withLock { entries in
            var expired: [Expired] = []
            for (connection, entry) in entries {
                guard let deadline = entry.deadline, deadline <= now else { continue }
                shutdown(entry.socket)
                entries[connection]?.deadline = nil
                expired.append(Expired(address: entry.address, phase: entry.phase))
            }
            return expired
        }
    }
}

/// A thread that calls `body` every `interval` until ``stop()``.
final class PeriodicThread: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread.
    init(name: String, interval: Duration, body: @escaping @Sendable () -> Void) {
        let microseconds = UInt32(clamping: interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                usleep(microseconds)
                body()
            }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops the thread and waits for its last round to end. Call it once.
    func stop() {
        stopped.store(true, ordering: .releasing)
        finished.wait()
    }
}
