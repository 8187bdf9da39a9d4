import Foundation
import LedgerCore

/// The encodings the projection tables use, named once for the Swift code and the SQL that reads
/// them (Migrations/Library/0002_projections.sql and 0006_album_member_asset_state.sql).
enum CausalLength {
    /// Whether a causal length says "present": odd. An asset's trash causal length is odd while it
    /// is in the library (even: in Recently Deleted); a membership's while the asset is a member.
    static func isPresent(_ length: Int64) -> Bool { length % 2 == 1 }

    /// The SQL condition that `column` holds a present causal length.
    static func present(_ column: String) -> String { "\(column) % 2 = 1" }

    /// The SQL condition that `column` holds an absent (removed, deleted) causal length.
    static func absent(_ column: String) -> String { "\(column) % 2 = 0" }
}

/// What a membership row carries of its asset (`album_members.asset_state`): whether an album
/// shows the asset, so an album is read in order from its membership index alone.
enum MemberAssetState: Int64 {
    /// Not shown: not created yet, purged, or in Recently Deleted.
    case notShown = 0
    /// Shown only to fetches that include hidden assets.
    case hidden = 1
    /// Shown.
    case shown = 2

    /// The state of an asset row with these values.
    static func of(created: Bool, purged: Bool, trashCausalLength: Int64, hidden: Bool) -> MemberAssetState {
        guard created && !purged && CausalLength.isPresent(trashCausalLength) else { return .notShown }
        return hidden ? .hidden : .shown
    }

    /// The same, in SQL, from the asset row's columns with the given prefix (NULL columns, a
    /// missing row, give ``notShown``).
    static func sql(_ prefix: String) -> String {
        "CASE WHEN \(prefix)created = 1 AND \(prefix)purged = 0 AND \(CausalLength.present("\(prefix)trash_cl")) "
            + "THEN \(shown.rawValue) - \(prefix)hidden ELSE \(notShown.rawValue) END"
    }
}

extension ResourceType {
    /// The SQL list of the types whose resource is an asset's original photo or video.
    static let primarySQL = "(\(ResourceType.photo.rawValue), \(ResourceType.video.rawValue))"
}
