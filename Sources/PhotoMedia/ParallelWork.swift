import Foundation
import Synchronization

/// Runs blocking work (file copies, fsyncs) on a few dedicated threads. Dispatch's pool is sized
/// to the CPU count, which leaves the disk idle while every worker waits in `fsync`.
enum ParallelWork {
    /// `body` applied to every element on up to `concurrency` threads, results in input order.
    static func map<Input: Sendable, Output: Sendable>(
        _ inputs: [Input], concurrency: Int, _ body: @escaping @Sendable (Input) throws(MediaError) -> Output
    ) -> [Result<Output, MediaError>] {
        map(inputs, concurrency: concurrency, state: {}) { (_: Void, input: Input) throws(MediaError) in try body(input) }
    }

    /// `body` applied to every element on up to `concurrency` threads, results in input order;
    /// each thread makes one `State` with `makeState` (a buffer, for example) and passes it to
    /// every call it runs.
    static func map<Input: Sendable, Output: Sendable, State>(
        _ inputs: [Input], concurrency: Int, state makeState: @escaping @Sendable () -> State,
        _ body: @escaping @Sendable (State, Input) throws(MediaError) -> Output
    ) -> [Result<Output, MediaError>] {
        let results = Mutex<[Result<Output, MediaError>?]>(Array(repeating: nil, count: inputs.count))
        let next = Atomic<Int>(0)
        let workers = max(1, min(concurrency, inputs.count))
        let finished = DispatchSemaphore(value: 0)
        for _ in 0..<workers {
            let thread = Thread {
                let state = makeState()
                while case let index = next.add(1, ordering: .relaxed).oldValue, index < inputs.count {
                    let result: Result<Output, MediaError>
                    do throws(MediaError) { result = .success(try body(state, inputs[index])) } catch { result = .failure(error) }
                    results.withLock { $0[index] = result }
                }
                finished.signal()
            }
            thread.start()
        }
        for _ in 0..<workers { finished.wait() }
        return results.withLock { $0.map { $0! } }
    }
}
