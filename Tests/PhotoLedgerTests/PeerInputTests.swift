import Foundation
import LedgerCore
import PhotoMedia
import Testing

@testable import PhotoLedger

/// Inputs from other devices that once trapped or hung this one (found by the fuzzers in
/// Tools/Fuzz), each reproduced through the path it took.
@Suite("Hostile input from peers")
struct PeerInputTests {
    /// Events of the album `album` written by another device, as a pull page brings them.
    func pulledPage(_ library: PhotoLibrary, album: UUID, _ changes: [ChangeEvent]) throws {
        var chain = HashChain()
        let events = changes.enumerated().map { index, change in
            let sequence = Int64(index + 1)
            let event = Event(
                id: UUID(), device: "ben-laptop", deviceSequence: sequence,
                timestamp: HLCTimestamp(milliseconds: 1_764_483_790_000, counter: UInt16(index)), changeBlock: album, object: album,
                type: change.type.rawValue, schemaVersion: change.schemaVersion, payload: change.encoded())
            return SequencedEvent(event: event, serverSequence: sequence, serverChainHash: chain.link(event))
        }
        let applied = try library.replica.apply(library.replica.prepare(events, cursor: Int64(events.count), after: nil))
        #expect(applied.quarantined.isEmpty)
    }

    @Test("an insert next to members a peer left without room (one key for two members, a member without a key) lands beside them")
    func insertWithoutRoom() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(4)
        let ids = assets.map { UUID(uuidString: String($0.prefix(36)))! }
        let albumID = UUID()
        try pulledPage(
            library, album: albumID,
            [
                .albumCreated(title: "Trip", subtype: 2),
                .albumMembersChanged(
                    operation: .add,
                    entries: [
                        .init(asset: ids[0], causalLength: 1, position: "V"), .init(asset: ids[1], causalLength: 1, position: "V"),
                        .init(asset: ids[2], causalLength: 1, position: nil),
                    ]),
            ])
        let album = "\(albumID.uuidString)/L0/040"
        let before = try library.members(album)
        #expect(before.count == 3 && before[0] == assets[2])
        // Before the member without a key (there is no key below it), then between the two
        // members that share one (there is none between them).
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).insertAssets([assets[3]], at: [0]) }
        #expect(Set(try library.members(album)) == Set(assets))
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: [0], to: 2) }
        #expect(Set(try library.members(album)) == Set(assets))
    }

    @Test("a position key is made above the lower bound when the upper one is not above it")
    func keyWithoutRoom() {
        for (lower, upper) in [("V", "V"), ("a", "V"), ("V", ""), ("", "")] as [(String?, String?)] + [(nil, "")] {
            let key = FractionalIndex.key(between: lower, and: upper)
            #expect(
                FractionalIndex.isValid(key) && (lower ?? "") < key, "\(String(describing: lower)) … \(String(describing: upper)): \(key)")
        }
        #expect(FractionalIndex.key(between: "V", and: "W") == "V" + "V")
    }

    @Test("media at every bound the inspector keeps makes an asset.created event that other devices fold")
    func mediaAtTheInspectorsBounds() {
        let extremes = [
            MediaInfo(
                format: .mp4, pixelWidth: MediaInfo.largestSide, pixelHeight: MediaInfo.largestFrame / MediaInfo.largestSide,
                duration: MediaInfo.longestDuration, creationDate: Date(timeIntervalSince1970: MediaInfo.dateRange.upperBound),
                location: Location(latitude: -90, longitude: 180, altitude: -.greatestFiniteMagnitude)),
            MediaInfo(
                format: .gif, pixelWidth: 1, pixelHeight: 1, creationDate: Date(timeIntervalSince1970: MediaInfo.dateRange.lowerBound),
                location: Location(latitude: 90, longitude: -180), isAnimated: true),
        ]
        for info in extremes {
            var fold = InMemoryFold(library: nil)
            let event = Event(
                id: UUID(), device: "ben-laptop", deviceSequence: 1, timestamp: HLCTimestamp(milliseconds: 1_764_483_790_000, counter: 0),
                changeBlock: UUID(), object: UUID(), type: EventType.assetCreated.rawValue, schemaVersion: 2,
                payload: InMemoryFold.assetCreatedPayload(primary: info))
            let folded = fold.add(event)
            #expect(folded, "\(info): \(fold.reasonsSetAside)")
        }
    }
}
