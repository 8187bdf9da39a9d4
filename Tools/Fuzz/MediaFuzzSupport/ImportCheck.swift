import Foundation
import FuzzSupport
import LedgerCore
import PhotoLedger
import PhotoMedia

/// The check both media targets make of what the media code read: the `asset.created` event an
/// import of it would write must fold on other devices (judged by `InMemoryFold`). A value beyond
/// what an event may record would show the asset on the importing device only.
public enum ImportCheck {
    /// Checks an inspected file.
    public static func check(_ info: MediaInfo) {
        var fold = InMemoryFold(library: nil)
        let event = Event(
            id: SampleEvents.identifier(1), device: "anna-phone", deviceSequence: 1, timestamp: HLCTimestamp(milliseconds: 1, counter: 0),
            changeBlock: SampleEvents.identifier(2), object: SampleEvents.identifier(3), type: EventType.assetCreated.rawValue,
            schemaVersion: 2, payload: InMemoryFold.assetCreatedPayload(primary: info))
        require(fold.add(event), "an import of \(info) writes an event other devices set aside: \(fold.reasonsSetAside)")
    }

    /// Checks metadata read on its own, as a photo of one pixel would carry it.
    public static func check(creationDate: Date?, location: Location?) {
        check(MediaInfo(format: .jpeg, pixelWidth: 1, pixelHeight: 1, creationDate: creationDate, location: location))
    }
}
