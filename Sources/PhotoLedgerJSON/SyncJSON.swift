import Foundation
import PhotoLedger
import PhotoLedgerSync

/// The JSON shapes of sync and of a library's status (`photoledger sync --json`,
/// `photoledger status --json`).
package enum SyncJSON {
    /// The `sync --json` shape of a report.
    package static func json(_ report: SyncReport) -> JSON {
        .object([
            ("pushedEvents", .int(Int64(report.pushedEvents))), ("pulledEvents", .int(Int64(report.pulledEvents))),
            ("uploadedResources", .int(Int64(report.uploadedResources))), ("uploadedBytes", .int(report.uploadedBytes)),
            ("downloadedResources", .int(Int64(report.downloadedResources))), ("downloadedBytes", .int(report.downloadedBytes)),
            ("rejectedEvents", .array(report.rejectedEvents.map { .string($0) })), ("cursor", .int(report.cursor)),
            ("scope", .string(report.scope?.rawValue)), ("quarantinedEvents", .array(report.quarantinedEvents.map { .string($0) })),
            ("changedVerdicts", .int(Int64(report.changedVerdicts))),
            ("unavailableResources", .array(report.unavailableResources.map { .string($0) })),
            ("recordedRenditions", .int(Int64(report.recordedRenditions))), ("uploadedRenditions", .int(Int64(report.uploadedRenditions))),
            ("downloadedRenditions", .int(Int64(report.downloadedRenditions))),
        ])
    }
}

/// What `photoledger status` reports of a library: counts, events not yet synced, the remote
/// and the last sync.
package struct LibraryStatus {
    package let library: String
    package let device: String
    /// Assets not in Recently Deleted (hidden ones included).
    package let assets: Int
    package let hidden: Int
    package let deleted: Int
    package let albums: Int
    package let events: Int
    package let pendingEvents: Int
    package let rejectedEvents: Int
    package let quarantinedEvents: Int
    package let eventsNeedingNewerVersion: Int
    package let sealedEvents: Int
    package let remote: SyncRemote?
    package let lastSync: Date?

    /// Reads the status of `library`, whose file is named `path` in the report.
    package init(of library: PhotoLibrary, path: String) throws {
        let statistics = try library.statistics()
        self.library = path
        device = library.device.rawValue
        assets = statistics.assets - statistics.deleted
        (hidden, deleted, albums) = (statistics.hidden, statistics.deleted, statistics.albums)
        (events, pendingEvents, rejectedEvents) = (statistics.events, statistics.pendingEvents, statistics.rejectedEvents)
        quarantinedEvents = statistics.quarantined[.quarantined] ?? 0
        eventsNeedingNewerVersion = statistics.quarantined[.needsNewerVersion] ?? 0
        sealedEvents = statistics.quarantined[.sealed] ?? 0
        remote = try SyncRemote.saved(in: library)
        lastSync = try remote.map { SyncEngine(library: library, remote: $0) }?.lastSync().map {
            Date(timeIntervalSince1970: Double($0) / 1000)
        }
    }

    /// The `status --json` shape.
    package var json: JSON {
        .object([
            ("library", .string(library)), ("device", .string(device)),
            ("assets", .int(Int64(assets))), ("hidden", .int(Int64(hidden))), ("deleted", .int(Int64(deleted))),
            ("albums", .int(Int64(albums))), ("events", .int(Int64(events))), ("pendingEvents", .int(Int64(pendingEvents))),
            ("remote", .string(remote?.description)), ("lastSync", .string(lastSync.map(Listing.isoDate))),
            ("rejectedEvents", .int(Int64(rejectedEvents))), ("quarantinedEvents", .int(Int64(quarantinedEvents))),
            ("eventsNeedingNewerVersion", .int(Int64(eventsNeedingNewerVersion))), ("sealedEvents", .int(Int64(sealedEvents))),
        ])
    }
}
