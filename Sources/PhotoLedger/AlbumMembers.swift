import Foundation
import LedgerCore
import LedgerStore

/// Reads album membership from the projections, following merges: the members of an album are
/// the union of its own membership rows and those of every album merged into it; a member's
/// position is the most recent position written to any of those rows.
enum AlbumMembers {
    /// Follows merges to the live album `id` now belongs to; nil when there is none.
    static func resolve(_ id: UUID, in db: Database) throws -> UUID? {
        var current = id
        for _ in 0..<64 {
            guard
                let (created, deleted, mergedInto) = try db.firstRow(
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

    /// A member of an album, as a fetch or a change request reads it.
    struct Member {
        var asset: UUID
        var position: String
        /// The asset's modification clock value (its version).
        var version: Int64
    }

    /// The member assets of `album` (and of every album merged into it) in album order.
    ///
    /// - Parameters:
    ///   - includeHidden: whether hidden assets count as members (assets not created yet, purged
    ///     or in Recently Deleted never do). Read from the membership rows, with no asset lookup.
    ///   - condition: an SQL condition on the asset row (alias `a`) that members must also meet,
    ///     with its bound `values`; only then is each member's asset row read.
    static func ordered(
        _ album: UUID, in db: Database, includeHidden: Bool = false, condition: String? = nil, values: [any SQLBindable] = []
    ) throws -> [Member] {
        try ordered(group: try group(of: album, in: db), in: db, includeHidden: includeHidden, condition: condition, values: values)
    }

    /// The members' identifiers and versions only, in album order (what a fetch reads).
    static func identifiers(
        group: [UUID], in db: Database, includeHidden: Bool, condition: String?, values: [any SQLBindable]
    ) throws -> (identifiers: [UUID], versions: [Int64]) {
        guard group.count == 1 else {
            let members = try ordered(group: group, in: db, includeHidden: includeHidden, condition: condition, values: values)
            return (members.map(\.asset), members.map(\.version))
        }
        var identifiers: [UUID] = [], versions: [Int64] = []
        try db.forEachRow(
            """
            SELECT m.asset_id, m.asset_version FROM album_members m\(join(condition))
            WHERE m.album_id = ? AND \(CausalLength.present("m.cl")) AND \(filter(includeHidden, condition)) ORDER BY m.position, m.asset_id
            """, [group[0].bytes] + values
        ) { row in
            identifiers.append(row.withBlob(0) { UUID(bytes: $0) }!)
            versions.append(row.int64(1))
        }
        return (identifiers, versions)
    }

    /// The join to the asset rows that `condition` needs (none without one).
    static func join(_ condition: String?) -> String {
        condition == nil ? "" : " JOIN assets a ON a.asset_id = m.asset_id"
    }

    /// The condition on membership rows (alias `m`) and, with `condition`, asset rows (alias `a`)
    /// that members meet.
    static func filter(_ includeHidden: Bool, _ condition: String?) -> String {
        "m.asset_state >= \(includeHidden ? 1 : 2)" + (condition.map { " AND " + $0 } ?? "")
    }

    static func ordered(
        group: [UUID], in db: Database, includeHidden: Bool, condition: String?, values: [any SQLBindable]
    ) throws -> [Member] {
        let join = join(condition), filter = filter(includeHidden, condition)
        if group.count == 1 {
            return try db.rows(
                """
                SELECT m.asset_id, m.position, m.asset_version FROM album_members m\(join)
                WHERE m.album_id = ? AND \(CausalLength.present("m.cl")) AND \(filter) ORDER BY m.position, m.asset_id
                """, [group[0].bytes] + values
            ) { Member(asset: $0.withBlob(0) { UUID(bytes: $0) }!, position: $0.text(1), version: $0.int64(2)) }
        }
        struct Merged { var present = false; var position = ""; var stamp: (Int64, String) = (0, ""); var version: Int64 = 0 }
        var members: [UUID: Merged] = [:]
        let placeholders = group.map { _ in "?" }.joined(separator: ", ")
        try db.forEachRow(
            """
            SELECT m.asset_id, m.cl, m.position, m.position_hlc, m.position_device, m.asset_version FROM album_members m\(join)
            WHERE m.album_id IN (\(placeholders)) AND \(filter)
            """, group.map { $0.bytes } + values
        ) { row in
            let asset = UUID(bytes: row.blob(0))!
            var member = members[asset] ?? Merged()
            member.present = member.present || CausalLength.isPresent(row.int64(1))
            member.version = row.int64(5)
            let stamp = (row.int64(3), row.text(4))
            if stamp > member.stamp {
                member.stamp = stamp
                member.position = row.text(2)
            }
            members[asset] = member
        }
        return members.filter(\.value.present)
            .map { Member(asset: $0.key, position: $0.value.position, version: $0.value.version) }
            .sorted { ($0.position, $0.asset.bytes) < ($1.position, $1.asset.bytes) }
    }

    /// The membership causal length of `asset` in each album of `group` where it is a member.
    static func memberRows(of asset: UUID, in group: [UUID], db: Database) throws -> [(album: UUID, causalLength: Int64)] {
        try group.compactMap { album in
            let cl =
                try db.firstRow(
                    "SELECT cl FROM album_members WHERE album_id = ? AND asset_id = ?", [album.bytes, asset.bytes]
                ) { $0.int64(0) } ?? 0
            return CausalLength.isPresent(cl) ? (album, cl) : nil
        }
    }

    /// The positions of the visible members of `album` (one not merged with others) from index
    /// `offset` in album order, at most `limit` of them: the neighbours an insertion at an index
    /// needs, read through the index in album order rather than with every member.
    static func positions(of album: UUID, from offset: Int, limit: Int, in db: Database) throws -> [String] {
        try db.rows(
            """
            SELECT m.position FROM album_members m
            WHERE m.album_id = ? AND \(CausalLength.present("m.cl")) AND \(filter(false, nil)) ORDER BY m.position, m.asset_id
            LIMIT ? OFFSET ?
            """, [album.bytes, Int64(limit), Int64(offset)]
        ) { $0.text(0) }
    }

    /// Whether `asset` is a visible member of `album` (one not merged with others).
    static func isVisibleMember(_ asset: UUID, of album: UUID, in db: Database) throws -> Bool {
        try db.firstRow(
            "SELECT 1 FROM album_members m WHERE m.asset_id = ? AND m.album_id = ? AND \(CausalLength.present("m.cl")) AND \(filter(false, nil))",
            [asset.bytes, album.bytes]
        ) { _ in true } ?? false
    }

    /// The position of the last visible member of `album` (one not merged with others), nil when
    /// it has none.
    static func lastPosition(of album: UUID, in db: Database) throws -> String? {
        try db.firstRow(
            """
            SELECT m.position FROM album_members m
            WHERE m.album_id = ? AND \(CausalLength.present("m.cl")) AND \(filter(false, nil))
            ORDER BY m.position DESC, m.asset_id DESC LIMIT 1
            """, [album.bytes]
        ) { $0.text(0) }
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
