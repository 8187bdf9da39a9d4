import Foundation
import LedgerCore
import LedgerStore
import PhotoMedia

/// Renditions shared between devices as derived resources.
///
/// A device that made a rendition at one of the synced scales (``ImageManager/syncedScales``)
/// records it when it syncs: its bytes are stored in the resource store under their own SHA-256
/// and an `asset.renditionRecorded` event names the asset, the resource it was made from, its box
/// and mode, and its hash and size. The rendition then travels like a resource of the asset
/// (uploaded with the event; sealed with the asset's key in an encrypted library), but it is
/// never one of the asset's resources: fetches, exports and data requests never see it.
///
/// Another device downloads the renditions of the sources its assets show when it syncs, before
/// (and whether or not) it downloads originals; its image manager answers a request from a
/// recorded rendition when it has none of its own and the original is not on the device. A
/// rendition is named by its source's hash, so an edit or a revert that changes what an asset
/// shows leaves the renditions of the other source unused, and garbage collection removes
/// them from the device.
extension ImageManager {
    /// The scales a device records the renditions of for the others: the sizes a grid and a
    /// detail view show (256 pixels, fit and fill; 1024 pixels, fit).
    static let syncedScales = [
        RenditionScale(size: 256, mode: .fit), RenditionScale(size: 256, mode: .fill), RenditionScale(size: 1024, mode: .fit),
    ]
}

/// A recorded rendition's identity within an asset.
private struct RecordedRendition: Hashable {
    var asset: UUID
    var source: [UInt8]
    var box: Int64
    var fills: Bool
}

extension PhotoLibrary {
    /// The SQL of the sources shown by the assets that are not purged (their originals, and their
    /// current edits), as `(asset_id, source)` rows.
    static let shownSourcesSQL = """
        SELECT a.asset_id, a.content_sha256 FROM assets a WHERE a.created = 1 AND a.purged = 0 AND a.content_sha256 IS NOT NULL
        UNION SELECT r.asset_id, r.sha256 FROM asset_resources r JOIN assets a ON a.asset_id = r.asset_id
            WHERE a.created = 1 AND a.purged = 0 AND r.type IN \(ResourceType.primarySQL)
        """

    /// Records the renditions this device has cached, at the synced scales, of the sources its
    /// assets show, that no device has recorded yet: their bytes are stored as resources and one
    /// `asset.renditionRecorded` event per rendition is committed in one change block. Returns
    /// how many were recorded.
    ///
    /// In an encrypted library, only the renditions of assets whose key this device holds are
    /// recorded (their events and bytes are sealed with it); a device without keys records none.
    @discardableResult
    package func recordRenditions() throws -> Int {
        let keys = encryption.snapshot
        if keys.enabled && keys.ring == nil { return 0 }
        let (shown, recorded) = try readDatabase { db in
            let shown = try db.rows(Self.shownSourcesSQL) { row in (UUID(bytes: row.blob(0)), row.blob(1)) }
            let recorded = Set(
                try db.rows("SELECT asset_id, source_sha256, box, fills FROM asset_renditions") { row in
                    UUID(bytes: row.blob(0)).map {
                        RecordedRendition(asset: $0, source: row.blob(1), box: row.int64(2), fills: row.int64(3) != 0)
                    }
                }.compactMap { $0 })
            return (shown, recorded)
        }
        var records: [(asset: UUID, record: RenditionRecord)] = []
        for case let (asset?, source) in shown {
            if keys.enabled && keys.assetKeys[asset] == nil { continue }
            let hash = Hex.encode(source)
            let unrecorded = ImageManager.syncedScales.filter { scale in
                !recorded.contains(RecordedRendition(asset: asset, source: source, box: Int64(scale.size ?? 0), fills: scale.mode == .fill))
            }
            guard !unrecorded.isEmpty else { continue }
            for scale in renditions.cache.scales(of: hash, among: unrecorded) {
                guard let size = scale.size, let cached = renditions.cache.lookup(RenditionKey(source: hash, scale: scale)) else {
                    continue
                }
                let stored: StoredResource
                do { stored = try resources.ingest(cached.rendition.bytes, name: "rendition") } catch { throw Self.translate(error) }
                guard let digest = Hex.decode(stored.hash) else { continue }
                records.append(
                    (
                        asset,
                        RenditionRecord(
                            source: source, boxSize: size, fills: scale.mode == .fill, sha256: digest, size: stored.size,
                            isPNG: cached.rendition.format == .png)
                    ))
            }
        }
        guard !records.isEmpty else { return 0 }
        try performChangesAndWait { changes in
            for (asset, record) in records { try changes.record(.renditionRecorded(record), object: asset) }
        }
        return records.count
    }

    /// A rendition of `source` at `scale` that a device recorded, when its bytes are on this
    /// device or, with `allowsNetwork`, can be fetched through the library's sync; nil otherwise.
    /// When devices recorded different bytes, the smallest hash is tried first.
    func recordedRendition(of source: String, scale: RenditionScale, allowsNetwork: Bool) -> Rendition? {
        guard let size = scale.size, let digest = Hex.decode(source) else { return nil }
        let candidates =
            (try? readDatabase { db in
                try db.rows(
                    "SELECT DISTINCT sha256 FROM asset_renditions WHERE source_sha256 = ? AND box = ? AND fills = ? ORDER BY sha256",
                    [digest, Int64(size), Int64(scale.mode == .fill ? 1 : 0)]
                ) { Hex.encode($0.blob(0)) }
            }) ?? []
        for hash in candidates {
            if !resources.contains(hash) {
                guard allowsNetwork, resourceFetcher.value != nil, (try? ensureResource(hash)) != nil else { continue }
            }
            guard let bytes = try? resources.read(hash), let rendition = try? Rendition(encoded: Array(bytes), scale: scale) else {
                continue
            }
            return rendition
        }
        return nil
    }

    /// The recorded renditions of the sources the assets show now (their current versions), one
    /// per source and scale (the smallest hash when devices recorded different bytes), with
    /// their sizes, that are not on this device: what a sync downloads before originals.
    /// In an encrypted library they are named by their blobs (those whose name is not known
    /// yet are left for a later sync).
    func missingRecordedRenditions() throws -> [(hash: String, size: Int64)] {
        try readDatabase { db in
            let wanted = try db.rows(
                """
                SELECT min(r.sha256), r.size FROM asset_renditions r JOIN assets a ON a.asset_id = r.asset_id
                WHERE a.created = 1 AND a.purged = 0 AND r.source_sha256 = coalesce(a.content_sha256,
                    (SELECT p.sha256 FROM asset_resources p WHERE p.asset_id = a.asset_id AND p.type IN \(ResourceType.primarySQL)
                     ORDER BY p.resource_index LIMIT 1))
                GROUP BY r.source_sha256, r.box, r.fills ORDER BY 1
                """
            ) { ($0.blob(0), $0.int64(1)) }.filter { !resources.contains(Hex.encode($0.0)) }
            // One download per blob: a square picture's fit and fill are the same bytes.
            var seen = Set<String>()
            guard encryption.snapshot.enabled else {
                return wanted.map { (Hex.encode($0.0), $0.1) }.filter { seen.insert($0.0).inserted }
            }
            var names: [[UInt8]: [UInt8]] = [:]
            try db.forEachRow("SELECT blobs FROM e2e_asset_keys WHERE key IS NOT NULL AND length(blobs) > 0") { row in
                names.merge(Self.blobMap(row.blob(0))) { first, _ in first }
            }
            return wanted.compactMap { plain, size in names[plain].map { (Hex.encode($0), size) } }.filter { seen.insert($0.0).inserted }
        }
    }

    /// The recorded renditions garbage collection keeps: those of the sources assets that are
    /// not purged show (their originals and current edits).
    static func keptRenditions(_ db: Database) throws -> Set<String> {
        Set(
            try db.rows(
                """
                SELECT r.sha256 FROM asset_renditions r JOIN (\(shownSourcesSQL)) s ON s.asset_id = r.asset_id
                    AND s.content_sha256 = r.source_sha256
                """
            ) { Hex.encode($0.blob(0)) })
    }
}
