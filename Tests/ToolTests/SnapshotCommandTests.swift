import Foundation
import TestSupportKit
import Testing

@Suite("photoledger: snapshot")
struct SnapshotCommandTests {
    @Test func aNewDeviceStartsFromAnUploadedSnapshotAndVerifiesIt() throws {
        let anna = try Workspace(device: "anna"), frame = try Workspace(device: "frame")
        let cara = try Workspace(device: "cara"), dana = try Workspace(device: "dana")
        let server = try TestServer(folder: anna.folder)
        for (workspace, scope) in [(anna, "readWrite"), (frame, "readOnly"), (cara, "readWrite"), (dana, "readWrite")] {
            let set = try workspace.cli([
                "remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: workspace.device, scope: scope),
            ])
            #expect(set.status == 0, "\(set.errors)")
        }
        // A library that did not start from a snapshot says so.
        let none = try anna.cli(["snapshot", "--status"])
        #expect(none.status == 0 && none.output.contains("not started from a snapshot"), "\(none.output)")
        let photos = try anna.importPhotos([try anna.photo("a.jpg", seed: 1), try anna.photo("b.jpg", seed: 2)], album: "Trip")
        let upload = try #require(try anna.json(["snapshot"]) as? [String: Any])
        #expect((upload["position"] as? Int ?? 0) > 0)
        #expect((upload["hash"] as? String)?.count == 64)
        #expect(upload["uploaded"] as? Bool == true)
        #expect(try anna.cli(["favorite", photos[0]]).status == 0)
        #expect(try anna.cli(["sync"]).status == 0)

        // A readOnly device may not upload one.
        let refused = try frame.cli(["snapshot"])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("only a readWrite device may upload snapshots"), "\(refused.errors)")

        // A new device starts from it, fetches the history and verifies the snapshot.
        let started = try cara.cli(["sync"])
        #expect(started.status == 0, "\(started.errors)")
        let status = try #require(try cara.json(["snapshot", "--status"]) as? [String: Any])
        #expect(status["position"] as? Int == upload["position"] as? Int)
        #expect(status["sourceDevice"] as? String == "anna")
        #expect(status["verified"] as? Bool == true)
        #expect((status["differences"] as? [Any])?.isEmpty == true)
        let text = try cara.cli(["snapshot", "--status"])
        #expect(text.output.contains("verified: the refold of the history equals the snapshot"), "\(text.output)")
        // The same views and the same history as a device that replayed everything.
        #expect(try dana.cli(["sync", "--no-snapshot"]).status == 0)
        #expect(try dana.json(["snapshot", "--status"]) as? [String: Any] != nil)
        #expect(try cara.albums().first?["assetIdentifiers"] as? [String] == photos)
        #expect(try cara.cli(["history", "--json"]).output == dana.cli(["history", "--json"]).output)
        #expect(try cara.cli(["verify"]).status == 0)
    }

    @Test func watchOnANewDeviceGoesLiveFromTheSnapshotAndVerifiesInTheBackground() throws {
        let anna = try Workspace(device: "anna"), ben = try Workspace(device: "ben")
        let server = try TestServer(folder: anna.folder)
        for workspace in [anna, ben] {
            let set = try workspace.cli([
                "remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: workspace.device),
            ])
            #expect(set.status == 0, "\(set.errors)")
        }
        let photos = try anna.importPhotos([try anna.photo("a.jpg", seed: 1), try anna.photo("b.jpg", seed: 2)], album: "Trip")
        let upload = try #require(try anna.json(["snapshot"]) as? [String: Any])
        let position = try #require(upload["position"] as? Int)
        #expect(try anna.cli(["favorite", photos[0]]).status == 0)
        #expect(try anna.cli(["sync"]).status == 0)

        let process = ChildProcess()
        process.executableURL = ToolRunner.binDirectory.appendingPathComponent("photoledger")
        process.arguments = ["sync", "--watch", "--library", ben.library.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let output = SyncWatchTests.OutputReader(pipe)
        #expect(output.wait(for: "Watching \(server.url)/v1/libraries/family live; press Ctrl-C to stop."))
        // The verification comes after going live, from the history fetched while watching.
        #expect(output.wait(for: "Snapshot: started from a snapshot at server position \(position) made by anna; verified"))
        let text = output.current
        let live = try #require(text.range(of: "Watching"))
        let verified = try #require(text.range(of: "Snapshot: started from a snapshot"))
        #expect(live.lowerBound < verified.lowerBound, "\(text)")
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(try ben.cli(["history", "--json"]).output == anna.cli(["history", "--json"]).output)
    }
}
