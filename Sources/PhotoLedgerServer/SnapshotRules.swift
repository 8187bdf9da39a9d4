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

/// How many snapshots the server keeps per library: when a newer one is recorded, older ones
/// beyond this number are deleted with their blobs. Two, so a device that began downloading the
/// previous newest snapshot just before a newer one arrived still finds it.
public enum SnapshotRetention {
    /// The snapshots kept per library, newest first.
    public static let kept = 2
}

/// What ``ServerStore/recordSnapshot(_:libraryID:keeping:)`` did with a snapshot.
public enum SnapshotRecording: Sendable, Hashable {
    /// Recorded (or recorded before, for the same position and blob): the record kept.
    case recorded(SnapshotRecord)
    /// Not recorded: the log holds a purge at `purge`, after the snapshot's position, so the
    /// snapshot may hold the purged asset.
    case precedesPurge(at: Int64)
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
    /// - the log holds no purge after `offer.position` (the snapshot could hold the purged
    ///   asset; see ``PushTransaction/retireSnapshots(before:)``).
    ///
    /// An offer already recorded (same position and blob) is answered with the record kept. Once
    /// recorded, snapshots beyond the ``SnapshotRetention/kept`` newest are retired with their
    /// blobs (see ``retiredBlobs(limit:)``).
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
        switch try recordSnapshot(record, libraryID: credential.libraryID, keeping: SnapshotRetention.kept) {
        case .recorded(let kept):
            return kept
        case .precedesPurge(let purge):
            throw SnapshotRefusal(
                status: 409,
                message: "the snapshot at position \(offer.position) precedes the purge at position \(purge), so it may hold the purged "
                    + "asset: sync the device past position \(purge), then take the snapshot again")
        }
    }

    /// Checks that `header`, read from the start of the blob an offer names, is the header of a
    /// snapshot of the credential's library at the offer's position and chain value.
    ///
    /// - Throws: ``SnapshotRefusal`` (409) otherwise: the blob is not that snapshot (another
    ///   library's, another position's, or not a snapshot at all, such as a photo's blob).
    public func checkSnapshotHeader(_ header: [UInt8], of offer: SnapshotOffer, for credential: Credential) throws {
        guard let parsed = SnapshotHeader.parse(header) else {
            throw SnapshotRefusal(
                status: 409,
                message:
                    "the blob \(Hex.encode(offer.hash)) is not a PhotoLedger snapshot; upload the snapshot's own bytes, then offer them")
        }
        guard parsed.library == credential.libraryUUID, parsed.position == offer.position,
            constantTimeEquals(parsed.chainHash, offer.chainHash)
        else {
            throw SnapshotRefusal(
                status: 409,
                message: "the blob \(Hex.encode(offer.hash)) is a snapshot of library \(parsed.library.uuidString) at position "
                    + "\(parsed.position), not of this library at position \(offer.position) with the offered chain value; "
                    + "offer the snapshot the blob holds")
        }
    }
}
