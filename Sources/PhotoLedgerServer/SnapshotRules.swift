import Foundation
import LedgerCore
import SyncProtocol

/// Why the server refused a snapshot offer: what, and what to do.
public struct SnapshotRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status the refusal is answered with (403, 404 or 409).
    public let status: Int
    /// What went wrong and what to do.
    public let message: String

    public var description: String { message }
}

extension ServerStore {
    /// Records a snapshot offer after the checks the server can make without reading the
    /// snapshot (its bytes may be end-to-end encrypted), the same for every backend:
    ///
    /// - the device's token is `readWrite` (a snapshot is a claim about every object, which an
    ///   `addOnly` or `readOnly` device may not make);
    /// - the log holds `offer.position`, and the chain value after the event there is
    ///   `offer.chainHash` (the snapshot names this log, not a fork of it);
    /// - the library holds the blob `offer.hash`.
    ///
    /// An offer already recorded (same position and blob) is answered with the record kept.
    ///
    /// - Throws: ``SnapshotRefusal`` when a check fails.
    public func offerSnapshot(_ offer: SnapshotOffer, for credential: Credential, at milliseconds: UInt64) throws -> SnapshotRecord {
        guard credential.scope == .readWrite else {
            throw SnapshotRefusal(
                status: 403,
                message: "a \(credential.scope.rawValue) token may not upload snapshots: only a readWrite device's fold is accepted")
        }
        let head = try chainSummary(libraryID: credential.libraryID)
        guard offer.position <= head.lastServerSequence else {
            throw SnapshotRefusal(
                status: 409,
                message: "the snapshot is at position \(offer.position), but this library's log ends at \(head.lastServerSequence); "
                    + "sync the device with this server, then take the snapshot again")
        }
        let stored = try events(library: credential.libraryID, after: offer.position - 1, limit: 1).events.first
        guard let stored, stored.serverSequence == offer.position, constantTimeEquals(stored.chainHash, offer.chainHash) else {
            throw SnapshotRefusal(
                status: 409,
                message: "the snapshot's chain value at position \(offer.position) is not this server's; the device folded another log "
                    + "(another server, or a reset one): sync it with this server, then take the snapshot again")
        }
        guard let size = try blobSize(libraryID: credential.libraryID, hash: offer.hash) else {
            throw SnapshotRefusal(
                status: 404, message: "this library has no blob \(Hex.encode(offer.hash)); upload the snapshot's bytes first, then offer it"
            )
        }
        let record = SnapshotRecord(
            position: offer.position, chainHash: offer.chainHash, hash: offer.hash, size: size, device: credential.device.rawValue,
            recordedAt: milliseconds)
        return try recordSnapshot(record, libraryID: credential.libraryID)
    }
}
