import Foundation
import LedgerStore

/// Reads album membership from the projections, following merges: the members of an album are
/// the union of its own membership rows and those of every album merged into it; a member's
/// position is the most recent position written to any of those rows.
enum AlbumMembers {
    /// Follows merges to the live album `id` now belongs to; nil when there is none.
    static func resolve(_ id: UUID, in db: Database) throws -> UUID? {
        var current = id
        for _ in 0..<64 {
            guard let (created, deleted, mergedInto) = try db.firstRow(
                "SELECT created, deleted, merged_into FROM albums WHERE album_id = ?", [current.bytes],
                { ($0.int64(0) == 1, $0.int64(1) == 1, $0.isNull(2) ? nil : UUID(bytes: $0.blob(2))) })
            else { return nil }
            if let mergedInto {
                current = mergedInto
                continue
            }
            return created && !deleted ? current : nil
        }
        return nil
    }

    /// `album` and every album merged into it, directly or through others.
    static func group(of album: UUID, in db: Database) throws -> [UUID] {
        try db.rows(
            """
            WITH RECURSIVE merged(id) AS (
                SELECT ? UNION SELECT albums.album_id FROM albums JOIN merged ON albums.merged_into = merged.id
            ) SELECT id FROM merged
            """, [album.bytes]
        ) { UUID(bytes: $0.blob(0))! }
    }

    /// The member assets of `album` in album order, with their position keys. `visible` is an SQL
    /// condition on the assets table (alias `a`) that members must meet.
    static func ordered(_ album: UUID, in db: Database, visible: String, values: [any SQLBindable] = []) throws -> [(asset: UUID, position: String)] {
        let group = try group(of: album, in: db)
        if group.count == 1 {
            return try db.rows(
                """
                SELECT m.asset_id, m.position FROM album_members m JOIN assets a ON a.asset_id = m.asset_id
                WHERE m.album_id = ? AND m.cl % 2 = 1 AND \(visible) ORDER BY m.position, m.asset_id
                """, [album.bytes] + values
            ) { (UUID(bytes: $0.blob(0))!, $0.text(1)) }
        }
        struct Member { var present = false; var position = ""; var stamp: (Int64, String) = (0, "") }
        var members: [UUID: Member] = [:]
        let placeholders = group.map { _ in "?" }.joined(separator: ", ")
        try db.forEachRow(
            """
            SELECT m.asset_id, m.cl, m.position, m.position_hlc, m.position_device FROM album_members m
            JOIN assets a ON a.asset_id = m.asset_id WHERE m.album_id IN (\(placeholders)) AND \(visible)
            """, group.map { $0.bytes } + values
        ) { row in
            let asset = UUID(bytes: row.blob(0))!
            var member = members[asset] ?? Member()
            member.present = member.present || row.int64(1) % 2 == 1
            let stamp = (row.int64(3), row.text(4))
            if stamp > member.stamp {
                member.stamp = stamp
                member.position = row.text(2)
            }
            members[asset] = member
        }
        return members.filter(\.value.present)
            .map { (asset: $0.key, position: $0.value.position) }
            .sorted { ($0.position, $0.asset.bytes) < ($1.position, $1.asset.bytes) }
    }

    /// The membership causal length of `asset` in each album of `group` where it is a member.
    static func memberRows(of asset: UUID, in group: [UUID], db: Database) throws -> [(album: UUID, causalLength: Int64)] {
        try group.compactMap { album in
            let cl = try db.firstRow(
                "SELECT cl FROM album_members WHERE album_id = ? AND asset_id = ?", [album.bytes, asset.bytes]) { $0.int64(0) } ?? 0
            return cl % 2 == 1 ? (album, cl) : nil
        }
    }

    /// The causal length of (album, asset), 0 when never touched.
    static func causalLength(album: UUID, asset: UUID, db: Database) throws -> Int64 {
        try db.firstRow("SELECT cl FROM album_members WHERE album_id = ? AND asset_id = ?", [album.bytes, asset.bytes]) { $0.int64(0) } ?? 0
    }
}

extension Array where Element == UInt8 {
    static func < (lhs: [UInt8], rhs: [UInt8]) -> Bool { lhs.lexicographicallyPrecedes(rhs) }
}

func < (lhs: (String, [UInt8]), rhs: (String, [UInt8])) -> Bool {
    lhs.0 != rhs.0 ? lhs.0 < rhs.0 : lhs.1 < rhs.1
}
