import Dispatch
import Foundation
import Glibc
import Synchronization

/// A thread of its own that runs jobs one at a time in the order they were submitted: where the
/// C interface runs its asynchronous calls and calls their completions.
final class SerialWorker: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        var thread: pthread_t?
    }

    private let state = Mutex(State())
    /// Signalled once per job submitted, and once more to stop.
    private let wakeUps = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name` (at most 15 bytes: the kernel's limit).
    init(name: String) {
        let thread = Thread { [self] in
            Self.nameCurrentThread(name)
            run()
        }
        thread.name = name
        thread.start()
    }

    /// Gives the calling thread the kernel name debuggers and `ps -L` show (what
    /// `pthread_setname_np` does; Swift does not import it), through `/proc/thread-self/comm`.
    private static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// Whether the caller is this worker's thread.
    var isCurrentThread: Bool {
        state.withLock { $0.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Queues a job; false when the worker is stopping and takes no more.
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wakeUps.signal() }
        return accepted
    }

    /// Stops the thread once the jobs queued so far have run. Waits for that unless called from
    /// the worker's own thread (from a job), which cannot wait for itself.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wakeUps.signal()
        if !isCurrentThread { stopped.wait() }
    }

    private func run() {
        state.withLock { $0.thread = pthread_self() }
        while true {
            wakeUps.wait()
            let job = state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
            guard let job else { break }
            job()
        }
        stopped.signal()
    }
}
