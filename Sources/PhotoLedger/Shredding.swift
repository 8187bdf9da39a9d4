import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore

/// Crypto-shredding: in an encrypted library, purging an asset (emptying Recently Deleted)
/// destroys the asset's key, here and, at the next sync, in the server's key store; every device
/// that folds the purge destroys its copy too. The log is never rewritten: the asset's events
/// stay, sealed with a key no one holds any more, so its payloads and its resource blobs can no
/// longer be decrypted, even with the whole log, every blob and the library key. The chains
/// still verify (they cover the ciphertext).
///
/// The purge itself is sealed with a library key generation, so every device folds it. A purged
/// asset's views are the fold of what can still be read (its purge, its album memberships):
/// the same on a device that read the asset before and on one that never could, and the same
/// after a rebuild. Its events sealed with the destroyed key are not listed as waiting for a
/// key: they never will open.
extension PhotoLibrary {
    /// Destroys the keys of the purged assets among `assets` and folds them again without them.
    /// Runs inside the transaction that folded the purges; returns the destroyed key
    /// identifiers (to drop from the cache after the commit) and the resources the assets held
    /// (to remove from this device when nothing else refers to them).
    ///
    /// A destroyed key that a pack holds (``AssetKeyPack``) leaves it: a queued pack is sealed
    /// again without it; one the server holds is replaced by entries of its other keys when
    /// `publishing` (the purge was made here, and its push carries the replacement).
    func shred(_ assets: Set<UUID>, in db: Database, archive: Database?, publishing: Bool = false) throws -> (
        keys: Set<UUID>, resources: Set<String>
    ) {
        guard encryption.snapshot.enabled, !assets.isEmpty else { return ([], []) }
        var purged: [UUID] = []
        for asset in assets
        where try db.firstRow("SELECT 1 FROM assets WHERE asset_id = ? AND purged = 1", [asset.bytes], { _ in true }) == true {
            purged.append(asset)
        }
        guard !purged.isEmpty else { return ([], []) }
        var destroyed = Set<UUID>()
        var packed: [(asset: UUID, pack: String)] = []
        var resources = Set<String>()
        // Deleted key bytes are overwritten in the database file, not only unlinked.
        try db.execute("PRAGMA secure_delete = ON")
        defer { try? db.execute("PRAGMA secure_delete = OFF") }
        for asset in purged {
            let row = try db.firstRow(
                "SELECT k.key IS NOT NULL, p.name FROM e2e_asset_keys k LEFT JOIN e2e_packs p ON p.id = k.pack WHERE k.asset = ?",
                [asset.bytes]
            ) {
                (held: $0.int64(0) != 0, pack: $0.isNull(1) ? nil : $0.text(1))
            }
            if let pack = row?.pack { packed.append((asset, pack)) }
            if row?.held != false {
                // A row without a key: destroyed here, never taken back from the server.
                var keyID: Int64 = 0
                for store in [archive, db].compactMap({ $0 }) where keyID == 0 {
                    keyID =
                        try store.firstRow("SELECT key_id FROM events WHERE object_id = ? AND key_id % 4 = 2 LIMIT 1", [asset.bytes]) {
                            $0.int64(0)
                        } ?? 0
                }
                try db.execute(
                    """
                    INSERT INTO e2e_asset_keys (asset, key_id, key, blobs) VALUES (?, ?, NULL, x'')
                    ON CONFLICT (asset) DO UPDATE SET key = NULL, blobs = x''
                    """, [asset.bytes, keyID])
                try Self.queue(db, KeyStoreName.asset(asset), nil)
                destroyed.insert(asset)
            }
            resources.formUnion(
                try db.rows(
                    "SELECT sha256 FROM asset_resources WHERE asset_id = ?1 UNION SELECT sha256 FROM asset_renditions WHERE asset_id = ?1",
                    [asset.bytes]
                ) { Hex.encode($0.blob(0)) })
        }
        try Self.settlePacks(ofPurged: packed, publishing: publishing, ring: encryption.snapshot.ring, in: db)
        // Fold the assets again with what can still be read.
        var context = foldContext
        if let keys = context.keys {
            context.keys = keys.removing(destroyed)
        }
        var none: RebuildProgress?
        _ = try Projection(db, archive: archive).refold(Set(purged), context: context, progress: &none)
        try forgetShreddedEvents(of: purged, in: db, archive: archive)
        // Resources another asset still shows stay.
        let kept = Set(
            try resources.compactMap { hash -> String? in
                guard let bytes = Hex.decode(hash) else { return nil }
                let shown = try db.firstRow(
                    """
                    SELECT 1 FROM asset_resources r JOIN assets a ON a.asset_id = r.asset_id WHERE r.sha256 = ?1 AND a.purged = 0
                    UNION ALL SELECT 1 FROM asset_renditions r JOIN assets a ON a.asset_id = r.asset_id WHERE r.sha256 = ?1 AND a.purged = 0
                    """, [bytes]
                ) { _ in true }
                return shown == true ? hash : nil
            })
        for hash in resources.subtracting(kept) {
            guard let bytes = Hex.decode(hash) else { continue }
            try db.execute("DELETE FROM referenced_resources WHERE sha256 = ?", [bytes])
            // The projection snapshot of a compacted library names them too (a rebuild starts from it).
            if archive != nil { try CompactionSnapshot.forgetResource(bytes, in: db) }
        }
        return (destroyed, resources.subtracting(kept))
    }

    /// Removes the "sealed" verdicts of purged assets' events: their key is destroyed, they wait
    /// for nothing.
    func forgetShreddedEvents(of assets: [UUID], in db: Database, archive: Database?) throws {
        for asset in assets {
            for store in [archive, db].compactMap({ $0 }) {
                // Sealed with the asset key, or with the asset key under a generation (both need the asset key).
                let ids = try store.rows("SELECT event_id FROM events WHERE object_id = ? AND key_id % 4 >= 2", [asset.bytes]) {
                    $0.blob(0)
                }
                for id in ids {
                    try db.execute("DELETE FROM quarantine WHERE event_id = ? AND kind = ?", [id, Int64(QuarantineKind.sealed.rawValue)])
                }
            }
        }
    }

    /// After the commit of a shred: the destroyed keys leave the cache, and the resources of the
    /// purged assets leave this device.
    func finishShredding(_ result: (keys: Set<UUID>, resources: Set<String>)) {
        if !result.keys.isEmpty { encryption.remove(assetKeys: result.keys) }
        for hash in result.resources {
            if let file = resources.url(for: hash) { try? FileManager.default.removeItem(at: file) }
        }
    }

    /// Every purged asset of the library (for a rebuild).
    func purgedAssets(_ db: Database) throws -> [UUID] {
        try db.rows("SELECT asset_id FROM assets WHERE purged = 1") { UUID(bytes: $0.blob(0)) }.compactMap { $0 }
    }
}

extension PhotoLibrary {
    /// After a pull page folded: purges among the new events (`events` that were `appended`)
    /// shred their assets, and new events of assets purged already wait for no key (they are
    /// dropped from the page's verdicts).
    func settleShredding(
        _ events: [Event], appended: [UUID: AppendedEvent], applied: inout AppliedPage, db: Database, archive: Database?
    ) throws -> (keys: Set<UUID>, resources: Set<String>) {
        guard encryption.snapshot.enabled else { return ([], []) }
        // The purges among the events appended now, found in the page's array (not by copying
        // every appended event out of the dictionary).
        var purges = Set<UUID>()
        for event in events where event.type == EventType.assetPurged.rawValue && appended[event.id] != nil { purges.insert(event.object) }
        let result = try shred(purges, in: db, archive: archive)
        let sealed = applied.quarantined.filter { $0.kind == .sealed }
        guard !sealed.isEmpty else { return result }
        var forgotten = Set<UUID>()
        for entry in sealed {
            guard try db.firstRow("SELECT 1 FROM assets WHERE asset_id = ? AND purged = 1", [entry.object.bytes], { _ in true }) == true
            else { continue }
            try db.execute(
                "DELETE FROM quarantine WHERE event_id = ? AND kind = ?", [entry.eventID.bytes, Int64(QuarantineKind.sealed.rawValue)])
            forgotten.insert(entry.eventID)
        }
        applied.quarantined.removeAll { forgotten.contains($0.eventID) }
        return result
    }
}
