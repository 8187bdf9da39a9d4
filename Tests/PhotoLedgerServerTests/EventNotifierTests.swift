import Foundation
import PhotoLedgerServer
import SyncProtocol
import Synchronization
import Testing

/// ``EventNotifier`` alone: who is woken, when, and how often, with times given by the test.
@Suite("Event notifier")
struct EventNotifierTests {
    final class Wakes: Sendable {
        private let list = Mutex<[String]>([])
        var all: [String] { list.withLock { $0 } }
        func record(_ name: String) -> @Sendable (EventNotifier.Wake) -> Void {
            { [self] wake in list.withLock { $0.append("\(name):\(wake.rawValue)") } }
        }
    }

    @Test("a commit wakes the library's pulls waiting for earlier events, once each")
    func commitWakes() {
        let notifier = EventNotifier(capacity: 10)
        let wakes = Wakes()
        #expect(notifier.wait(libraryID: 1, since: 4, until: 1000, wake: wakes.record("a")) != .full)
        #expect(notifier.wait(libraryID: 1, since: 5, until: 1000, wake: wakes.record("b")) != .full)
        #expect(notifier.wait(libraryID: 2, since: 0, until: 1000, wake: wakes.record("other")) != .full)
        #expect(notifier.waitingCount == 3)
        notifier.committed(libraryID: 1, through: 5)
        #expect(wakes.all == ["a:events"])
        notifier.committed(libraryID: 1, through: 6)
        #expect(wakes.all == ["a:events", "b:events"])
        notifier.committed(libraryID: 1, through: 7)
        #expect(wakes.all == ["a:events", "b:events"])
        #expect(notifier.waitingCount == 1)
    }

    @Test("a pull that registers after the commit it waits for is told to read at once")
    func commitBeforeWait() {
        let notifier = EventNotifier(capacity: 10)
        notifier.committed(libraryID: 1, through: 8)
        #expect(notifier.wait(libraryID: 1, since: 7, until: 1000, wake: { _ in }) == .alreadyCommitted)
        guard case .waiting = notifier.wait(libraryID: 1, since: 8, until: 1000, wake: { _ in }) else {
            Issue.record("a pull at the last committed sequence waits")
            return
        }
    }

    @Test("the wait's end wakes only the pulls that are due")
    func expiry() {
        let notifier = EventNotifier(capacity: 10)
        let wakes = Wakes()
        _ = notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("early"))
        _ = notifier.wait(libraryID: 3, since: 0, until: 200, wake: wakes.record("late"))
        notifier.expire(now: 99)
        #expect(wakes.all.isEmpty)
        notifier.expire(now: 100)
        #expect(wakes.all == ["early:timeout"])
        notifier.expire(now: 150)
        #expect(wakes.all == ["early:timeout"])
        notifier.expire(now: 500)
        #expect(wakes.all == ["early:timeout", "late:timeout"])
        #expect(notifier.waitingCount == 0)
    }

    @Test("a cancelled pull is never woken; a woken one cannot be cancelled")
    func cancel() throws {
        let notifier = EventNotifier(capacity: 10)
        let wakes = Wakes()
        guard case .waiting(let first) = notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("first")),
            case .waiting(let second) = notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("second"))
        else { throw ServerStoreError("both pulls should wait") }
        #expect(notifier.cancel(first))
        notifier.committed(libraryID: 1, through: 1)
        #expect(wakes.all == ["second:events"])
        #expect(!notifier.cancel(second))
        #expect(!notifier.cancel(first))
    }

    @Test("at capacity a pull is refused; closing wakes everyone and refuses new pulls until reopened")
    func capacityAndClose() {
        let notifier = EventNotifier(capacity: 2)
        let wakes = Wakes()
        _ = notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("a"))
        _ = notifier.wait(libraryID: 2, since: 0, until: 100, wake: wakes.record("b"))
        #expect(notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("c")) == .full)
        notifier.close()
        #expect(Set(wakes.all) == ["a:shutdown", "b:shutdown"])
        #expect(notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("d")) == .closed)
        notifier.reopen()
        guard case .waiting = notifier.wait(libraryID: 1, since: 0, until: 100, wake: wakes.record("e")) else {
            Issue.record("a reopened notifier lets pulls wait")
            return
        }
    }

    @Test("a push response wakes the library up to its last stored event")
    func pushResponse() {
        let notifier = EventNotifier(capacity: 10)
        let wakes = Wakes()
        _ = notifier.wait(libraryID: 1, since: 11, until: 100, wake: wakes.record("a"))
        let id = UUID()
        let stored = PushResponse(
            results: [
                PushResult(id: id, status: .duplicate(serverSequence: 3)), PushResult(id: id, status: .stored(serverSequence: 12)),
                PushResult(id: id, status: .rejected(reason: "x")),
            ], lastDeviceSequence: 3)
        notifier.committed(
            PushResponse(results: [PushResult(id: id, status: .duplicate(serverSequence: 40))], lastDeviceSequence: 1), libraryID: 1)
        #expect(wakes.all.isEmpty)
        notifier.committed(stored, libraryID: 1)
        #expect(wakes.all == ["a:events"])
    }
}
