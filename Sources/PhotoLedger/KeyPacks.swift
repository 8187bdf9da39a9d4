import Foundation
import LedgerCore
import LedgerCrypto
import LedgerStore

/// Asset keys published in packs (``AssetKeyPack``): a device that holds the key ring sends the
/// keys of the assets a change block made as a few entries of the server's key store
/// (`pack/BLOCK.N`), not one per asset. `e2e_asset_keys.pack` names the pack that holds each
/// key (by its number in `e2e_packs`), here and on the devices that took the key from it.
///
/// Which keys a pack holds is read from the pack's member list (`e2e_packs.members`, the assets
/// it was recorded with), not from an index of `e2e_asset_keys` by pack: a new device writes the
/// rows of a large library's keys before its first pulled page applies, and an index by pack
/// doubled that write. The list may name assets whose key has left the pack since (the row's
/// `pack` says); a pack recorded before the lists (migration 22) is found by reading the table.
///
/// A pack changes only while it waits in the outbox: when the names of its assets' blobs become
/// known (their resources are encrypted for upload) and when one of its assets is purged, it is
/// sealed again. Once the server holds it, it is replaced, never changed: a purge of one of its
/// assets publishes the keys of the others as entries of their own (`asset/UUID`, create-only)
/// and deletes the pack, all carried by the push batch of the purge, so the server stores them
/// in one transaction and never holds the purged key afterwards. Two devices that purge assets
/// of one pack at once each publish the others' keys; the purged key one of them publishes is
/// deleted again by that device when it folds the other's purge, as every device that folds a
/// purge deletes the purged asset's entry.
extension PhotoLibrary {
    /// The number of pack `name` in `e2e_packs`, recorded now when it has none.
    static func packNumber(_ name: String, in db: Database) throws -> Int64 {
        if let id = try db.firstRow("SELECT id FROM e2e_packs WHERE name = ?", [name], { $0.int64(0) }) { return id }
        try db.execute("INSERT INTO e2e_packs (name) VALUES (?)", [name])
        return db.lastInsertedRowID
    }

    /// Records that the keys of `assets` are in pack number `id` (adding to its member list).
    static func addMembers(_ assets: [UUID], toPack id: Int64, in db: Database) throws {
        guard !assets.isEmpty else { return }
        let held = try db.firstRow("SELECT members FROM e2e_packs WHERE id = ?", [id]) { $0.isNull(0) ? nil : $0.blob(0) } ?? nil
        var members = held.map(memberList) ?? []
        members.append(contentsOf: assets)
        members.sort { $0.precedes($1) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(members.count * 16)
        var last: UUID?
        for member in members where member != last {
            bytes.append(contentsOf: member.bytes)
            last = member
        }
        try db.execute("UPDATE e2e_packs SET members = ? WHERE id = ?", [bytes, id])
    }

    /// The assets of a member list.
    static func memberList(_ bytes: [UInt8]) -> [UUID] {
        stride(from: 0, to: bytes.count - bytes.count % 16, by: 16).compactMap { UUID(bytes: Array(bytes[$0..<$0 + 16])) }
    }

    /// The number of pack `name` and its member list (nil: recorded before member lists), when
    /// the pack is recorded.
    static func recordedPack(_ name: String, in db: Database) throws -> (id: Int64, members: [UUID]?)? {
        try db.firstRow("SELECT id, members FROM e2e_packs WHERE name = ?", [name]) { row in
            (row.int64(0), row.isNull(1) ? nil : memberList(row.blob(1)))
        }
    }

    /// Forgets pack `name`: its keys' rows no longer name it, and its number goes.
    static func forgetPack(_ name: String, in db: Database) throws {
        guard let (id, members) = try recordedPack(name, in: db) else { return }
        if let members {
            for asset in members {
                try db.execute("UPDATE e2e_asset_keys SET pack = NULL WHERE asset = ? AND pack = ?", [asset.bytes, id])
            }
        } else {
            try db.execute("UPDATE e2e_asset_keys SET pack = NULL WHERE pack = ?", [id])
        }
        try db.execute("DELETE FROM e2e_packs WHERE id = ?", [id])
    }

    /// The name of the pack that holds `asset`'s key, when one does.
    static func pack(of asset: UUID, in db: Database) throws -> String? {
        try db.firstRow("SELECT p.name FROM e2e_asset_keys k JOIN e2e_packs p ON p.id = k.pack WHERE k.asset = ?", [asset.bytes]) {
            $0.text(0)
        }
    }

    /// The keys of pack `name` this device holds (not destroyed), with their blobs' names.
    static func heldRecords(ofPack name: String, in db: Database) throws -> [WrappedAssetKey] {
        guard let (id, members) = try recordedPack(name, in: db) else { return [] }
        func record(_ row: Statement) -> WrappedAssetKey? {
            guard let asset = UUID(bytes: row.blob(0)), let key = try? SecretKey(bytes: row.blob(2)) else { return nil }
            return WrappedAssetKey(asset: asset, keyID: UInt32(truncatingIfNeeded: row.int64(1)), key: key, blobs: blobMap(row.blob(3)))
        }
        guard let members else {
            return try db.rows(
                "SELECT asset, key_id, key, blobs FROM e2e_asset_keys WHERE pack = ? AND key IS NOT NULL ORDER BY asset", [id], record
            ).compactMap { $0 }
        }
        return try members.compactMap { asset in
            try db.firstRow(
                "SELECT asset, key_id, key, blobs FROM e2e_asset_keys WHERE asset = ? AND pack = ? AND key IS NOT NULL", [asset.bytes, id],
                record
            ) ?? nil
        }
    }

    /// Whether the outbox still holds a write of entry `name` (the server has not taken it).
    static func isQueuedWrite(_ name: String, in db: Database) throws -> Bool {
        try db.firstRow("SELECT 1 FROM e2e_outbox WHERE name = ? AND value IS NOT NULL", [name]) { _ in true } ?? false
    }

    /// Seals queued pack `name` again from the keys this device holds for it (a purge destroyed
    /// one, or blobs were named), under the ring's current generation. Keys that no longer fit
    /// one pack (many blobs) leave it and are queued on their own (`asset/UUID`); a pack left
    /// with no key is queued for deletion (a write of it may have reached the server unanswered).
    static func resealQueuedPack(_ name: String, ring: KeyRing, in db: Database) throws {
        let records = try heldRecords(ofPack: name, in: db)
        guard !records.isEmpty else {
            try queue(db, name, nil)
            return
        }
        let fitting = AssetKeyPack.split(records)[0].records
        for record in records.dropFirst(fitting.count) {
            try db.execute("UPDATE e2e_asset_keys SET pack = NULL WHERE asset = ?", [record.asset.bytes])
            try queue(db, KeyStoreName.asset(record.asset), record.sealed(under: ring.current))
        }
        try queue(db, name, AssetKeyPack(records: fitting).sealed(name: name, under: ring.current))
    }

    /// Replaces pack `name`, which the server holds, by entries of its keys on their own (those
    /// this device holds, which a purge has not destroyed: create-only, an entry made already by
    /// another device counts), and deletes it: all carried by the push batch of `carrier`'s
    /// purge.
    static func replacePublishedPack(_ name: String, carrier: UUID, ring: KeyRing, in db: Database) throws {
        for record in try heldRecords(ofPack: name, in: db) {
            try queue(db, KeyStoreName.asset(record.asset), record.sealed(under: ring.current), createOnly: true, carrier: carrier)
        }
        try forgetPack(name, in: db)
        try queue(db, name, nil, carrier: carrier)
    }

    /// The server refused pack `name` (a server from before key packs does not know the name):
    /// its keys are queued on their own (`asset/UUID`), and the pack forgotten. Returns how many.
    @discardableResult
    func publishKeysOfRefusedPack(_ name: String) throws -> Int {
        guard let ring = encryption.snapshot.ring else { return 0 }
        return try withDatabase { db in
            let records = try Self.heldRecords(ofPack: name, in: db)
            for record in records { try Self.queue(db, KeyStoreName.asset(record.asset), record.sealed(under: ring.current)) }
            try Self.forgetPack(name, in: db)
            return records.count
        }
    }

    /// After the keys of `purged` assets were destroyed (their rows keep `pack`): the packs that
    /// held them are sealed again while queued, and replaced when the server holds them and
    /// `publishing` (this device made the purge: it publishes the replacement with it).
    static func settlePacks(ofPurged purged: [(asset: UUID, pack: String)], publishing: Bool, ring: KeyRing?, in db: Database) throws {
        guard let ring, !purged.isEmpty else { return }
        var settled = Set<String>()
        for (asset, pack) in purged where settled.insert(pack).inserted {
            if try isQueuedWrite(pack, in: db) {
                try resealQueuedPack(pack, ring: ring, in: db)
            } else if publishing {
                try replacePublishedPack(pack, carrier: asset, ring: ring, in: db)
            }
        }
        for (asset, _) in purged { try db.execute("UPDATE e2e_asset_keys SET pack = NULL WHERE asset = ?", [asset.bytes]) }
    }
}
