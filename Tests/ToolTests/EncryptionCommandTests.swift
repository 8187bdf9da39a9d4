import Foundation
import Testing

/// The CLI of an end-to-end encrypted library: init shows the recovery key once, a new device
/// enrols by comparing codes, purge destroys keys, a wrong code or recovery key changes nothing.
@Suite("photoledger: encrypted libraries")
struct EncryptionCommandTests {
    @Test func initEnrollApproveSyncPurge() throws {
        let anna = try Workspace(device: "anna", initialize: false)
        let created = try anna.cli(["init", "--device", "anna", "--encrypt"])
        #expect(created.status == 0, "\(created.errors)")
        #expect(created.output.contains("Recovery key (shown only now"))
        let recovery = try #require(created.output.split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(recovery.count == 69)
        #expect(try anna.cli(["status"]).output.contains("Encryption:     end to end; this device holds the keys"))

        let ben = try Workspace(device: "ben")
        let server = try TestServer(folder: anna.folder)
        for workspace in [anna, ben] {
            let set = try workspace.cli([
                "remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: workspace.device),
            ])
            #expect(set.status == 0, "\(set.errors)")
        }
        let ids = try anna.importPhotos(
            [try anna.photo("secret-a.jpg", seed: 1), try anna.photo("secret-b.jpg", seed: 2)], album: "Hidden Trip")
        #expect(try anna.cli(["sync"]).status == 0)

        // Ben asks to join and shows a code; Anna sees the same code, and a wrong one approves nothing.
        let enroll = try #require(try ben.json(["device", "enroll"]) as? [String: Any])
        let code = try #require(enroll["code"] as? String)
        #expect(enroll["enrolled"] as? Bool == false)
        let shown = try anna.cli(["device", "approve", "ben"])
        #expect(shown.status == 0 && shown.output.contains(code))
        let wrong = try anna.cli(["device", "approve", "ben", "--code", "0000 0000"])
        #expect(wrong.status != 0 && wrong.errors.contains("nothing was approved"))
        #expect(try anna.cli(["device", "list"]).output.contains("ben  waiting, code \(code)"))
        #expect(try anna.cli(["device", "approve", "ben", "--code", code]).status == 0)
        let synced = try ben.cli(["sync"])
        #expect(synced.status == 0, "\(synced.errors)")
        #expect(try ben.albums().first?["title"] as? String == "Hidden Trip")
        #expect(try ben.assets().count == 2)

        // Purge through Recently Deleted; the other device folds it.
        #expect(try anna.cli(["delete", ids[0]]).status == 0)
        #expect(try anna.cli(["purge", ids[0]]).status == 0)
        #expect(try anna.cli(["sync"]).status == 0)
        #expect(try ben.cli(["sync"]).status == 0)
        #expect(try ben.assets().count == 1)
        #expect(try ben.cli(["verify"]).status == 0)

        // A mistyped recovery key is refused and changes nothing; the right one restores a new device.
        let cara = try Workspace(device: "cara")
        #expect(try cara.cli(["remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: "cara")]).status == 0)
        let typo = try cara.cli(["device", "restore", "--recovery-key", String(recovery.dropLast()) + (recovery.last == "0" ? "1" : "0")])
        #expect(typo.status != 0 && typo.errors.contains("a character is mistyped"))
        #expect(try cara.cli(["status"]).output.contains("Encryption:     none"))
        let restored = try cara.cli(["device", "restore", "--recovery-key", recovery])
        #expect(restored.status == 0, "\(restored.errors)")
        #expect(try cara.assets().count == 1)
        #expect(try cara.albums().first?["title"] as? String == "Hidden Trip")
    }

    @Test func addOnlyDeviceAddsWithoutReading() throws {
        let anna = try Workspace(device: "anna", initialize: false)
        #expect(try anna.cli(["init", "--device", "anna", "--encrypt"]).status == 0)
        let camera = try Workspace(device: "camera")
        let server = try TestServer(folder: anna.folder)
        #expect(try anna.cli(["remote", "set", "\(server.url)/v1/libraries/family", "--token", try server.token(for: "anna")]).status == 0)
        let token = try server.token(for: "camera", scope: "addOnly")
        #expect(try camera.cli(["remote", "set", "\(server.url)/v1/libraries/family", "--token", token]).status == 0)
        _ = try anna.importPhotos([try anna.photo("kept.jpg", seed: 1)], album: "Family")
        #expect(try anna.cli(["sync"]).status == 0)

        // The camera asks to join as an add-only device; Anna sees it as such, with the same code.
        let enroll = try #require(try camera.json(["device", "enroll"]) as? [String: Any])
        let code = try #require(enroll["code"] as? String)
        #expect(enroll["enrolled"] as? Bool == false)
        let early = try camera.cli(["import", try camera.photo("early.jpg", seed: 2)])
        #expect(early.status != 0 && early.errors.contains("has not been approved yet"))
        #expect(try anna.cli(["device", "list"]).output.contains("camera  waiting (add-only: it will add, not read), code \(code)"))
        let approved = try anna.cli(["device", "approve", "camera", "--code", code])
        #expect(approved.status == 0 && approved.output.contains("as an add-only device"), "\(approved.errors)")
        let joined = try #require(try camera.json(["device", "enroll"]) as? [String: Any])
        #expect(joined["enrolled"] as? Bool == true && joined["addOnly"] as? Bool == true)
        #expect(try camera.cli(["status"]).output.contains("this add-only device seals what it adds and reads nothing"))

        // It imports (no album) and syncs; Anna reads the photos; the camera still reads nothing.
        let added = try camera.importPhotos([try camera.photo("beach.jpg", seed: 3), try camera.photo("dunes.jpg", seed: 4)])
        #expect(added.count == 2)
        let synced = try camera.cli(["sync"])
        #expect(synced.status == 0, "\(synced.errors)")
        #expect(try anna.cli(["sync"]).status == 0)
        #expect(try anna.assets().count == 3)
        #expect(try camera.cli(["assets"]).status != 0)
        #expect(try anna.cli(["verify"]).status == 0)
    }
}
