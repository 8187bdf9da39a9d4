import Foundation
import LedgerCore

/// An event as stored in a device's log.
public struct StoredEvent: Sendable, Hashable {
    /// The event.
    public var event: Event
    /// Its position in this device's log (1, 2, 3, …).
    public var localSequence: Int64
    /// Its position in the server's log, once the server has acknowledged it.
    public var serverSequence: Int64?
    /// The hash chain value after this event.
    public var hash: [UInt8]
}
