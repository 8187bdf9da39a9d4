import Foundation
import LedgerCore

/// Events in every envelope form, for the seeds of the targets that read envelopes: format 1,
/// and format 2 unbound, bound to a library, and sealed. Payloads are opaque to those readers.
public enum SampleEvents {
    /// A fixed identifier whose last byte is `index`.
    public static func identifier(_ index: UInt8) -> UUID {
        UUID(uuid: (0x01, 0x93, 0x7A, 0x10, 0x00, 0x00, 0x70, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, index))
    }

    /// The library the bound events name.
    public static let library = identifier(0xF0)

    /// Four events, one of each envelope form.
    public static let all: [Event] = [
        Event(
            id: identifier(1), device: "anna-phone", deviceSequence: 1,
            timestamp: HLCTimestamp(milliseconds: 1_764_483_790_000, counter: 0),
            changeBlock: identifier(100), object: identifier(200), type: EventType.assetCreated.rawValue, schemaVersion: 1,
            payload: [1, 4, 0xC0, 0x1F, 0xE0, 0x17], format: .v1),
        Event(
            id: identifier(2), device: "anna-phone", deviceSequence: 2,
            timestamp: HLCTimestamp(milliseconds: 1_764_483_790_001, counter: 3),
            changeBlock: identifier(101), object: identifier(201), type: EventType.albumRenamed.rawValue, schemaVersion: 2,
            payload: Array("\u{04}Trip\u{00}".utf8)),
        Event(
            id: identifier(3), library: library, device: "ben-laptop", deviceSequence: 7,
            timestamp: HLCTimestamp(milliseconds: 1_764_483_791_000, counter: 0xFFFF), changeBlock: identifier(102),
            object: identifier(202),
            type: EventType.albumMembersChanged.rawValue, schemaVersion: 2, payload: [2, 1] + identifier(203).bytes + [1, 1, 0x56, 0]),
        Event(
            id: identifier(4), library: library, device: "cleo_tablet.2", deviceSequence: Int64.max,
            timestamp: HLCTimestamp(rawValue: UInt64.max), changeBlock: identifier(103), object: identifier(204), type: "asset.rotated",
            schemaVersion: Int(Int32.max), seal: Event.Seal(keyID: UInt32.max, nonce: [UInt8](repeating: 0x5A, count: 24)),
            payload: [UInt8](repeating: 0xC3, count: 48)),
    ]
}
