import Foundation
import LedgerCore
import LedgerStore
import Synchronization
import TestSupportKit
import Testing

@Suite("photoledger: history, verify, rebuild, compact")
struct AuditTests {
    @Test func historyJSONHasTheDocumentedShape() throws {
        let workspace = try Workspace(device: "anna")
        let ids = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)], album: "Trip")
        #expect(try workspace.cli(["favorite", ids[0]]).status == 0)
        let events = try #require(try workspace.json(["history"]) as? [[String: Any]])
        #expect(events.count >= 4)
        for event in events {
            #expect(Set(event.keys) == ["eventId", "device", "timestamp", "type", "object", "changes"])
            #expect(event["device"] as? String == "anna")
            #expect(UUID(uuidString: event["eventId"] as? String ?? "") != nil)
            #expect(event["changes"] is [[String: Any]])
        }
        let ofAsset = try #require(try workspace.json(["history", ids[0]]) as? [[String: Any]])
        #expect(ofAsset.map { $0["object"] as? String }.allSatisfy { $0 == ids[0] })
        #expect(ofAsset.map { $0["type"] as? String } == ["asset.created", "album.membersChanged", "asset.changed"])
        let favorite = try #require((ofAsset.last?["changes"] as? [[String: Any]])?.first)
        #expect(Set(favorite.keys) == ["field", "oldValue", "newValue", "outcome", "by"])
        #expect(favorite["field"] as? String == "isFavorite")
        #expect(favorite["oldValue"] as? String == "false" && favorite["newValue"] as? String == "true")
        #expect(favorite["outcome"] as? String == "inEffect")
    }

    @Test func historyFiltersByDeviceAndSinceAToken() throws {
        let workspace = try Workspace(device: "anna")
        _ = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)])
        let first = try workspace.cli(["history"])
        let token = try #require(first.output.split(separator: "\n").last?.split(separator: " ").last.map(String.init))
        #expect(try (workspace.json(["history", "--device", "nobody"]) as? [Any])?.isEmpty == true)
        #expect(try (workspace.json(["history", "--since", token]) as? [Any])?.isEmpty == true)
        _ = try workspace.importPhotos([try workspace.photo("b.jpg", seed: 2)])
        #expect(try (workspace.json(["history", "--since", token]) as? [Any])?.count == 1)
        #expect(try workspace.cli(["history", "--since", "yesterday"]).status == 64)
    }

    @Test func verifyPassesAndThenCatchesTampering() throws {
        let workspace = try Workspace()
        _ = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)], album: "Trip")
        let intact = try workspace.cli(["verify"])
        #expect(intact.status == 0 && intact.output.contains("The log is intact"))
        let queue = try DatabaseQueue(path: workspace.library.path)
        try queue.writeWithoutTransaction { db in
            try db.execute("DROP TRIGGER events_are_never_changed")
            try db.execute("UPDATE events SET payload = x'00' WHERE local_seq = 1")
        }
        let damaged = try workspace.cli(["verify"])
        #expect(damaged.status == 3)
        #expect(damaged.errors.hasPrefix("Error: the log is damaged"))
        #expect(damaged.errors.contains("Hint: "))
    }

    @Test func rebuildAndCompactSucceed() throws {
        let workspace = try Workspace()
        let ids = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)], album: "Trip")
        let before = try workspace.albums().map { $0["assetIdentifiers"] as? [String] }
        #expect(try workspace.cli(["rebuild"]).status == 0)
        #expect(try workspace.albums().map { $0["assetIdentifiers"] as? [String] } == before)
        let compact = try #require(try workspace.json(["compact", "--up-to", "0"]) as? [String: Any])
        #expect(compact["removedResources"] as? [String] == [])
        #expect(compact["source"] as? String == "option" && compact["remote"] is NSNull && compact["archivedEvents"] as? Int == 0)
        #expect(ids.count == 1)
    }

    @Test func compactWithoutARemoteOrASequenceIsAUsageError() throws {
        let workspace = try Workspace()
        _ = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)])
        for arguments in [["compact"], ["compact", "--json"]] {
            let result = try workspace.cli(arguments)
            #expect(result.status == 64)
            #expect(result.output.isEmpty)
            #expect(result.errors.contains("no remote to ask for the compaction watermark"))
            #expect(result.errors.contains("photoledger remote set URL --token TOKEN") && result.errors.contains("--up-to SERVER_SEQ"))
        }
        #expect(try workspace.cli(["compact", "--up-to", "-3"]).status == 64)
        #expect(try workspace.cli(["verify"]).status == 0)
    }
}

/// A photoledger-server on a free loopback port, stopped at the end of the test.
final class TestServer {
    let process = ChildProcess()
    let url: String
    let database: String

    init(folder: URL) throws {
        database = folder.appendingPathComponent("server.sqlite").path
        process.executableURL = ToolRunner.binDirectory.appendingPathComponent("photoledger-server")
        process.arguments = ["serve", "--db", database, "--blobs", folder.appendingPathComponent("blobs").path, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        url = String(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).dropFirst("listening on ".count))
        #expect(try ToolRunner.run("photoledger-server", ["admin", "create-library", "family", "--db", database]).status == 0)
    }

    func token(for device: String, scope: String = "readWrite") throws -> String {
        try ToolRunner.run(
            "photoledger-server", ["admin", "issue-token", "--db", database, "--library", "family", "--device", device, "--scope", scope]
        ).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }
}

@Suite("photoledger: remote and sync")
struct SyncCommandTests {
    @Test func remoteSetRejectsMalformedURLsAndTokens() throws {
        let workspace = try Workspace()
        let bad = try workspace.cli(["remote", "set", "ftp://example/v1/libraries/x", "--token", "t"])
        #expect(bad.status == 1 && bad.errors.contains("invalid remote"))
        let noToken = try workspace.cli(["remote", "set", "http://127.0.0.1:1/v1/libraries/x"])
        #expect(noToken.status == 64)
        let none = try #require(try workspace.json(["remote", "show"]) as? [String: Any])
        #expect(none["url"] is NSNull)
    }

    @Test func syncWithoutARemoteFailsWithAHint() throws {
        let workspace = try Workspace()
        let result = try workspace.cli(["sync"])
        #expect(result.status == 1)
        #expect(result.errors.contains("no remote is set"))
    }

    @Test func syncToAnUnreachableServerFails() throws {
        let workspace = try Workspace()
        #expect(try workspace.cli(["remote", "set", "http://127.0.0.1:9/v1/libraries/family", "--token", "abc"]).status == 0)
        let result = try workspace.cli(["sync"])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("Error: "))
    }

    @Test func twoDevicesConvergeThroughTheServer() throws {
        let anna = try Workspace(device: "anna"), ben = try Workspace(device: "ben")
        let server = try TestServer(folder: anna.folder)
        for workspace in [anna, ben] {
            let set = try workspace.cli([
                "remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: workspace.device),
            ])
            #expect(set.status == 0, "\(set.errors)")
        }
        let annaPhotos = try anna.importPhotos([try anna.photo("a.jpg", seed: 1), try anna.photo("b.jpg", seed: 2)], album: "Trip")
        let first = try #require(try anna.json(["sync"]) as? [String: Any])
        #expect((first["pushedEvents"] as? Int ?? 0) > 0)
        #expect(first["uploadedResources"] as? Int == 2)
        let pulled = try ben.cli(["sync"])
        #expect(pulled.status == 0, "\(pulled.errors)")
        #expect(pulled.output.contains("Synced with \(server.url)/v1/libraries/family"))
        #expect(try ben.albums().first?["assetIdentifiers"] as? [String] == annaPhotos)
        #expect(try ben.cli(["favorite", annaPhotos[1]]).status == 0)
        #expect(try ben.cli(["sync"]).status == 0)
        #expect(try anna.cli(["sync"]).status == 0)
        #expect(try anna.assets(["--favorites"]).compactMap { $0["localIdentifier"] as? String } == [annaPhotos[1]])
        let status = try #require(try anna.json(["status"]) as? [String: Any])
        #expect(status["pendingEvents"] as? Int == 0)
        #expect(status["lastSync"] is String)
        let history = try #require(try ben.json(["history"]) as? [[String: Any]])
        #expect(Set(history.compactMap { $0["device"] as? String }) == ["anna", "ben"])
        let compacted = try #require(try anna.json(["compact", "--up-to", "1000"]) as? [String: Any])
        #expect((compacted["archivedEvents"] as? Int ?? 0) > 0)
        #expect(try anna.cli(["verify"]).status == 0)
        #expect(try (anna.json(["history"]) as? [Any])?.count == history.count)
        let exported = ben.folder.appendingPathComponent("a.jpg").path
        #expect(try ben.cli(["export", annaPhotos[0], "--to", exported]).status == 0)
        #expect(
            FileManager.default.contents(atPath: exported)
                == FileManager.default.contents(atPath: anna.folder.appendingPathComponent("photos/a.jpg").path))
    }
}

@Suite("photoledger sync --watch")
struct SyncWatchTests {
    /// The standard output of a running process, read on a thread of its own.
    final class OutputReader: Sendable {
        private final class Buffer: Sendable {
            let text = Mutex("")
        }

        private let buffer = Buffer()

        init(_ pipe: Pipe) {
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread { [buffer] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return }
                    buffer.text.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
                }
            }
        }

        var current: String { buffer.text.withLock { $0 } }

        /// Waits until the output contains `needle`; the deadline only keeps a broken build from
        /// hanging the run.
        func wait(for needle: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            let deadline = Date().addingTimeInterval(600)
            while Date() < deadline {
                if current.contains(needle) { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            Issue.record("no '\(needle)' in the output: \(current)", sourceLocation: sourceLocation)
            return false
        }
    }

    @Test func watchShowsOtherDevicesChangesAsTheyLandAndStopsCleanlyOnInterrupt() throws {
        let anna = try Workspace(device: "anna"), ben = try Workspace(device: "ben")
        let server = try TestServer(folder: anna.folder)
        for workspace in [anna, ben] {
            #expect(
                try workspace.cli([
                    "remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: workspace.device),
                ]).status == 0)
        }
        let photos = try anna.importPhotos([try anna.photo("a.jpg", seed: 1)])
        #expect(try anna.cli(["sync"]).status == 0)

        let process = ChildProcess()
        process.executableURL = ToolRunner.binDirectory.appendingPathComponent("photoledger")
        process.arguments = ["sync", "--watch", "--library", ben.library.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let output = OutputReader(pipe)
        // The photo's creation, and the records of the thumbnails Anna's import made.
        #expect(output.wait(for: "Synced with \(server.url)/v1/libraries/family: pushed 0 events, pulled 4"))
        #expect(output.current.contains("down."))
        #expect(output.wait(for: "Watching \(server.url)/v1/libraries/family live; press Ctrl-C to stop."))

        // Anna's favourite reaches Ben's watching process without Ben asking.
        #expect(try anna.cli(["favorite", photos[0]]).status == 0)
        #expect(try anna.cli(["sync"]).status == 0)
        #expect(output.wait(for: "asset \(photos[0]) updated by anna"))

        // A change made on Ben's device (by another process) is pushed by the watching one.
        let album = try ben.cli(["album", "create", "Trip"])
        #expect(album.status == 0)
        #expect(output.wait(for: "inserted by this device"))
        let deadline = Date().addingTimeInterval(600)  // only ends a broken run
        while Date() < deadline, (try ben.json(["status"]) as? [String: Any])?["pendingEvents"] as? Int != 0 {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(try anna.cli(["sync"]).status == 0)
        let albums = try #require(try anna.json(["albums"]) as? [[String: Any]])
        #expect(albums.contains { $0["title"] as? String == "Trip" })

        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(output.wait(for: "Stopped."))
    }
}

@Suite("photoledger-demo")
struct DemoTests {
    @Test func theDemoRunsEndToEndAndConverges() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("photoledger-demo-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try ToolRunner.run("photoledger-demo", ["--folder", folder.path])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("Identical on both devices: yes"))
        #expect(result.output.contains("The conflicts and how they were resolved"))
        #expect(result.output.contains("The log is intact"))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("anna-phone/library.sqlite").path))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("server/server.log").path))
    }

    @Test func theDemoRejectsUnknownArguments() throws {
        #expect(try ToolRunner.run("photoledger-demo", ["--bogus"]).status == 64)
    }
}

@Suite("photoledger compact: the remote's watermark")
struct CompactWatermarkTests {
    /// The `cursor` of `sync --json`: the server position the device has pulled up to.
    func sync(_ workspace: Workspace) throws -> Int {
        let report = try #require(try workspace.json(["sync"]) as? [String: Any])
        return try #require(report["cursor"] as? Int)
    }

    @Test func compactArchivesWhatEveryDevicePulled() throws {
        let anna = try Workspace(device: "anna"), ben = try Workspace(device: "ben")
        let server = try TestServer(folder: anna.folder)
        for workspace in [anna, ben] {
            let token = try server.token(for: workspace.device)
            #expect(try workspace.cli(["remote", "set", "\(server.url)/v1/libraries/family", "--token", token]).status == 0)
        }
        let photos = try anna.importPhotos([try anna.photo("a.jpg", seed: 1), try anna.photo("b.jpg", seed: 2)], album: "Trip")
        let early = try #require(try anna.cli(["history"]).output.split(separator: "\n").last?.split(separator: " ").last.map(String.init))
        _ = try sync(anna)
        _ = try sync(ben)
        #expect(try ben.cli(["favorite", photos[0]]).status == 0)
        let benPosition = try sync(ben)
        _ = try sync(anna)
        _ = try anna.importPhotos([try anna.photo("c.jpg", seed: 3)])
        let head = try sync(anna)
        #expect(benPosition > 0 && benPosition < head)
        let history = try #require(try anna.json(["history"]) as? [[String: Any]])

        let compacted = try #require(try anna.json(["compact"]) as? [String: Any])
        let keys = ["archivedEvents", "devices", "horizon", "lastServerSeq", "remote", "removedResources", "source", "watermark"]
        #expect(compacted.keys.sorted() == keys)
        #expect(compacted["source"] as? String == "remote")
        #expect(compacted["remote"] as? String == "\(server.url)/v1/libraries/family")
        #expect(compacted["watermark"] as? Int == benPosition, "Ben has pulled the least")
        #expect(compacted["lastServerSeq"] as? Int == head)
        #expect(compacted["devices"] as? Int == 2)
        let archived = try #require(compacted["archivedEvents"] as? Int)
        #expect(archived == benPosition, "Anna's log holds the events up to Ben's position first, in server order")
        #expect(compacted["horizon"] as? Int == archived)

        let verified = try #require(try anna.json(["verify"]) as? [String: Any])
        #expect(verified["intact"] as? Bool == true)
        #expect((verified["local"] as? [String: Any])?["archivedEvents"] as? Int == archived)
        #expect(try (anna.json(["history"]) as? [Any])?.count == history.count)
        let expired = try anna.cli(["history", "--since", early])
        #expect(expired.status == 1 && expired.errors.contains("older than the change history still kept"))
        #expect(expired.errors.hasPrefix("Error: the --since token cannot be used: ") && !expired.errors.contains("currentChangeToken"))
        #expect(expired.errors.contains("Hint: run 'photoledger history' without --since"))

        let text = try anna.cli(["compact"])
        #expect(text.status == 0, "\(text.errors)")
        #expect(
            text.output.contains(
                "Watermark from \(server.url)/v1/libraries/family: server position \(benPosition) of \(head), pulled by all 2 devices"))
        #expect(text.output.contains("nothing to compact below server position \(benPosition)"))
        // An explicit sequence still wins over the remote.
        let explicit = try #require(try anna.json(["compact", "--up-to", "1"]) as? [String: Any])
        #expect(explicit["source"] as? String == "option" && explicit["watermark"] as? Int == 1 && explicit["archivedEvents"] as? Int == 0)
    }

    @Test func compactFailsClearlyWhenTheRemoteCannotAnswer() throws {
        let anna = try Workspace(device: "anna")
        _ = try anna.importPhotos([try anna.photo("a.jpg", seed: 1)])
        #expect(try anna.cli(["remote", "set", "http://127.0.0.1:9/v1/libraries/family", "--token", "plt_x"]).status == 0)
        let offline = try anna.cli(["compact", "--json"])
        #expect(offline.status == 1 && offline.output.isEmpty)
        #expect(offline.errors.hasPrefix("Error: server unreachable"))

        let server = try TestServer(folder: anna.folder)
        #expect(try anna.cli(["remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: "anna")]).status == 0)
        _ = try sync(anna)
        let revoke = ["admin", "revoke-token", "--db", server.database, "--library", "family", "--device", "anna"]
        #expect(try ToolRunner.run("photoledger-server", revoke).status == 0)
        let refused = try anna.cli(["compact"])
        #expect(refused.status == 1 && refused.errors.contains("refused this device's token"))

        let token = try server.token(for: "anna")
        #expect(try anna.cli(["remote", "set", "\(server.url)/v1/libraries/elsewhere", "--token", token]).status == 0)
        let unknown = try anna.cli(["compact"])
        #expect(unknown.status == 1 && unknown.errors.contains("check the library name in the remote URL"))
        let verified = try #require(try anna.json(["verify"]) as? [String: Any])
        #expect((verified["local"] as? [String: Any])?["archivedEvents"] as? Int == 0, "a failed compact archives nothing")
    }
}

@Suite("photoledger: scopes, quarantine and deep verification")
struct TrustCommandTests {
    @Test func anAddOnlyDeviceSyncsAndItsRefusedAlbumIsFoldedOut() throws {
        let kiosk = try Workspace(device: "kiosk"), anna = try Workspace(device: "anna")
        let server = try TestServer(folder: kiosk.folder)
        #expect(
            try kiosk.cli([
                "remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: "kiosk", scope: "addOnly"),
            ]).status == 0)
        #expect(try anna.cli(["remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: "anna")]).status == 0)
        _ = try kiosk.importPhotos([try kiosk.photo("a.jpg", seed: 1)], album: "Kiosk")
        let sync = try kiosk.cli(["sync", "--json"])
        #expect(sync.status == 0, "\(sync.errors)")
        let report = try #require(try sync.json() as? [String: Any])
        #expect(report["scope"] as? String == "addOnly")
        #expect(report["pushedEvents"] as? Int == 1 && report["pulledEvents"] as? Int == 0)
        #expect((report["rejectedEvents"] as? [String])?.count == 2)
        #expect(sync.errors.contains("rejected by the server (folded out here)"))
        let status = try #require(try kiosk.json(["status"]) as? [String: Any])
        #expect(status["rejectedEvents"] as? Int == 2 && status["pendingEvents"] as? Int == 0)
        // Reading is not this device's to do any more; adding still is.
        let albums = try kiosk.cli(["albums"])
        #expect(albums.status == 1 && albums.errors.contains("addOnly"))
        #expect(try anna.cli(["sync"]).status == 0)
        #expect(try anna.assets().count == 1)
        #expect(try anna.albums().isEmpty)
    }

    @Test func quarantineListsWhatADamagedDeviceSentAndVerifyDeepFindsEditedViews() throws {
        let anna = try Workspace(device: "anna")
        _ = try anna.importPhotos([try anna.photo("a.jpg", seed: 1)], album: "Trip")
        // An event that does not decode, appended as a damaged device's sync would have (the log
        // accepts it; the fold quarantines it on rebuild, as on every device).
        let queue = try DatabaseQueue(path: anna.library.path)
        try queue.write { db in
            let template = try #require(try EventLog(db).events(after: 0, limit: 1).first?.event)
            var damaged = template
            damaged.id = UUID()
            damaged.device = "ruined-phone"
            damaged.deviceSequence = 1
            damaged.payload = [1, 2, 3]
            _ = try EventLog(db).append([damaged])
        }
        #expect(try anna.cli(["rebuild"]).status == 0)
        let quarantine = try #require(try anna.json(["quarantine"]) as? [[String: Any]])
        #expect(quarantine.count == 1)
        #expect(Set(quarantine[0].keys) == ["eventId", "device", "timestamp", "type", "object", "kind", "reason"])
        #expect(quarantine[0]["device"] as? String == "ruined-phone" && quarantine[0]["kind"] as? String == "quarantined")
        #expect((quarantine[0]["reason"] as? String)?.contains("payload is invalid") == true)
        let status = try #require(try anna.json(["status"]) as? [String: Any])
        #expect(status["quarantinedEvents"] as? Int == 1)
        let deep = try #require(try anna.json(["verify", "--deep"]) as? [String: Any])
        #expect(deep["intact"] as? Bool == true)
        try queue.writeWithoutTransaction { db in try db.execute("UPDATE albums SET title = 'Edited' WHERE created = 1") }
        #expect(try anna.cli(["verify"]).status == 0, "the chains cover the log, not the views")
        let found = try anna.cli(["verify", "--deep"])
        #expect(found.status == 3)
        #expect(
            found.errors.contains("the view albums differs from the log") && found.errors.contains("title is 'Edited'"), "\(found.errors)")
        #expect(try anna.cli(["rebuild"]).status == 0)
        #expect(try anna.cli(["verify", "--deep"]).status == 0)
    }
}
