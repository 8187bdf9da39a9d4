import Foundation
import LedgerCore
import PhotoMedia

/// Events judged and folded in memory exactly as a pulled page is before it is written
/// (``ProjectionBatch``), with no library behind them: for tools that feed the fold events from
/// outside. The payload fuzzer (`Tools/Fuzz`, target `payloads`) drives it with hostile events,
/// none of which may trap, hang or allocate without bound.
package struct InMemoryFold: Sendable {
    private var batch = ProjectionBatch()
    private let context: FoldContext

    /// An empty fold for the library `library` (nil: a library without an identifier yet),
    /// reading payloads with `schema`.
    package init(library: UUID?, schema: EventSchema = .standard) {
        context = FoldContext(schema: schema, library: library)
    }

    /// Judges `event` and folds it when it is valid.
    ///
    /// - Returns: Whether the event was folded; false when it was quarantined, kept for a newer
    ///   build or sealed.
    @discardableResult
    package mutating func add(_ event: Event) -> Bool {
        let setAside = batch.quarantined.count
        batch.add(event, context: context)
        return batch.quarantined.count == setAside
    }

    /// Whether judging `event` with its writer's claims kept (as an object's history does) and
    /// with them only checked (as a fold does) gives one verdict: the same change folded, or the
    /// same reason to set it aside.
    package func claimReadingsAgree(on event: Event) -> Bool {
        let stamp = WriterStamp(hlc: Int64(bitPattern: event.timestamp.rawValue), device: event.device.rawValue)
        let kept = context.verdict(on: event, stamp: stamp, keepingClaims: true)
        let checked = context.verdict(on: event, stamp: stamp, keepingClaims: false)
        switch (kept, checked) {
        case (.fold(let change, _), .fold(let same, nil)): return change == same
        case (.fold, _), (_, .fold): return false
        default: return kept.stored?.kind == checked.stored?.kind && kept.stored?.reason == checked.stored?.reason
        }
    }

    /// The number of events judged.
    package var eventCount: Int { batch.eventCount }

    /// The reasons of the events not folded, in the order they were judged.
    package var reasonsSetAside: [String] { batch.quarantined.map(\.reason) }

    /// The objects the folded events touched: assets, then albums.
    package var touchedObjects: (assets: Set<UUID>, albums: Set<UUID>) {
        let touched = batch.touched
        return (touched.assets, touched.albums)
    }

    /// For every album with folded memberships, the position keys an insertion would take at
    /// each place among its members (before the first, between neighbours, after the last),
    /// made as an album change request makes them from the members' positions.
    ///
    /// - Parameter random: The source of the keys' random sub-intervals.
    package func insertionKeys(using random: inout some RandomNumberGenerator) -> [UUID: [String]] {
        var albums: [UUID: [(asset: UUID, position: String)]] = [:]
        for (key, row) in batch.memberships where row.causalLength % 2 == 1 {
            albums[key.album, default: []].append((key.asset, row.position.value))
        }
        return albums.mapValues { members in
            // The order AlbumMembers reads members in: by position, then by asset identifier.
            let positions = members.sorted { ($0.position, $0.asset.bytes) < ($1.position, $1.asset.bytes) }.map(\.position)
            return (0...positions.count).flatMap { index in
                FractionalIndex.keys(
                    count: 2, between: index > 0 ? positions[index - 1] : nil, and: index < positions.count ? positions[index] : nil,
                    using: &random)
            }
        }
    }

    /// The payload of the `asset.created` event that importing media described by `info` writes
    /// (schema version 2), with one resource of its kind.
    package static func assetCreatedPayload(primary info: MediaInfo) -> [UInt8] {
        let resource = ResourceRecord(
            type: info.mediaType == .video ? .video : .photo, sha256: [UInt8](repeating: 0xA5, count: 32), size: 1 << 20,
            uniformType: info.format.uniformTypeIdentifier, filename: "IMG_0001.\(info.format.preferredFilenameExtension)")
        return ChangeEvent.assetCreated(.init(primary: info, resources: [resource], isLivePhoto: false)).encoded()
    }

    /// A valid payload of every event type in every schema version this build reads, as its
    /// encoder writes them: version 2 with and without causal claims, and version 1 (version 2
    /// without the claims that follow its fields); burst changes in version 3, with and without. Claims name writes at clock values below
    /// `claimsBefore`, so the payloads fold in an event stamped at or after it.
    package static func samplePayloads(claimsBefore: Int64) -> [(type: EventType, version: Int, payload: [UInt8])] {
        let hash = [UInt8](repeating: 0xA5, count: 32)
        let photo = ResourceRecord(type: .photo, sha256: hash, size: 2_048_576, uniformType: "public.jpeg", filename: "IMG_0001.JPG")
        let adjustment = ResourceRecord(type: .adjustmentData, sha256: hash, size: 120, uniformType: "public.data", filename: "edit.plist")
        let place = Location(latitude: 48.8566, longitude: 2.3522, altitude: 35)
        let asset = UUID(uuid: (1, 2, 3, 4, 5, 6, 0x70, 8, 0x80, 10, 11, 12, 13, 14, 15, 16))
        let another = UUID(uuid: (1, 2, 3, 4, 5, 6, 0x70, 8, 0x80, 10, 11, 12, 13, 14, 15, 17))
        let changes: [ChangeEvent] = [
            .assetCreated(
                .init(
                    mediaType: .image, mediaSubtypes: [.photoHDR], pixelWidth: 4032, pixelHeight: 3024, duration: 0,
                    creationDate: Date(timeIntervalSince1970: 1_700_000_000), location: place, isFavorite: true, isHidden: false,
                    resources: [photo])),
            .assetCreated(
                .init(
                    mediaType: .video, mediaSubtypes: [], pixelWidth: 1920, pixelHeight: 1080, duration: 12.5, creationDate: nil,
                    location: nil, isFavorite: false, isHidden: true, resources: [])),
            .assetChanged(
                .init(creationDate: .some(Date(timeIntervalSince1970: 86_400)), location: .some(place), isFavorite: true, isHidden: false)),
            .assetChanged(.init(creationDate: .some(nil), location: .some(nil))),
            .assetDeleted(causalLength: 2), .assetRecovered(causalLength: 3), .assetPurged,
            .assetContentEdited(.init(rendered: photo, adjustment: adjustment, adjustmentFormat: "com.example.filters")),
            .assetContentEdited(.init(rendered: nil, adjustment: nil, adjustmentFormat: nil)),
            .renditionRecorded(
                .init(source: photo.sha256, boxSize: 256, fills: true, sha256: adjustment.sha256, size: 18_000, isPNG: false)),
            .albumCreated(title: "Trip", subtype: 2), .albumRenamed(title: "Trip to Paris"), .albumDeleted,
            .albumMembersChanged(
                operation: .insert,
                entries: [.init(asset: asset, causalLength: 1, position: "V"), .init(asset: another, causalLength: 0, position: "Vk")]),
            .albumMembersChanged(operation: .remove, entries: [.init(asset: asset, causalLength: 2, position: nil)]),
            .albumMerged(winner: asset),
            .assetCreated(
                .init(
                    mediaType: .image, mediaSubtypes: [], pixelWidth: 4032, pixelHeight: 3024, duration: 0, creationDate: nil,
                    location: nil,
                    isFavorite: false, isHidden: false, resources: [photo], burstIdentifier: "2F1A0C4E-5B7D-4E58-9D64-4B2C8A1E0F33",
                    burstSelectionTypes: [.autoPick])),
            .assetChanged(.init(burstUserPick: true)),
        ]
        let stamp = WriterStamp(hlc: max(0, claimsBefore - 1), device: "anna-phone")
        return changes.flatMap { change -> [(EventType, Int, [UInt8])] in
            let unclaimed = change.encoded()
            var claims = CausalClaims()
            for field in change.registers { claims.overwritten[field] = stamp }
            // A burst change exists from version 3 (and is written in it); the others in 2 and 1.
            guard change.schemaVersion == 2 else {
                return [
                    (change.type, change.schemaVersion, unclaimed), (change.type, change.schemaVersion, change.encoded(claims: claims)),
                ]
            }
            return [
                (change.type, 2, unclaimed), (change.type, 2, change.encoded(claims: claims)),
                (change.type, 1, Array(unclaimed.dropLast(change.registers.count))),
            ]
        }
    }
}
