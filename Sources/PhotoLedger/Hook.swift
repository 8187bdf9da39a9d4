import Synchronization

/// A settable hook, safe to share.
package final class Hook<Value: Sendable>: Sendable {
    private let stored = Mutex<Value?>(nil)

    /// The hook's value (nil when unset).
    package var value: Value? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
