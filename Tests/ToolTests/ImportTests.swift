import Foundation
import Testing

@Suite("photoledger import")
struct ImportTests {
    @Test func importsFilesWithOneLinePerFileAndASummary() throws {
        let workspace = try Workspace()
        let a = try workspace.photo("a.jpg", seed: 1), b = try workspace.photo("b.jpg", seed: 2)
        let result = try workspace.cli(["import", a, b])
        #expect(result.status == 0)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("imported \(a) -> ") && lines[0].hasSuffix("/L0/001"))
        #expect(lines[1].hasPrefix("imported \(b) -> "))
        #expect(lines[2].hasPrefix("Imported 2 files in "))
        #expect(lines[2].hasSuffix("skipped 0 duplicates and 0 non-media; 0 failed."))
        #expect(lines[3].hasPrefix("Made 6 thumbnails (256 and 1024 pixels) in "))
        #expect(try workspace.assets().count == 2)
    }

    @Test func duplicatesAreSkippedWithinARunAndAgainstTheLibrary() throws {
        let workspace = try Workspace()
        let original = try workspace.photo("a.jpg", seed: 1)
        let ids = try workspace.importPhotos([original])
        let copy = try workspace.photo("copy-of-a.jpg", seed: 1, in: "other")
        let b = try workspace.photo("b.jpg", seed: 2, in: "other"), bAgain = try workspace.photo("b-again.jpg", seed: 2, in: "other")
        let result = try workspace.cli(["import", copy, b, bAgain])
        #expect(result.status == 0)
        #expect(result.output.contains("skipped duplicate \(copy) (same content as \(ids[0]))"))
        #expect(result.output.contains("skipped duplicate \(bAgain) (same content as \(b))"))
        #expect(result.output.contains("Imported 1 file in"))
        #expect(result.output.contains("skipped 2 duplicates"))
        #expect(try workspace.assets().count == 2)
    }

    @Test func nonMediaFilesAreReportedAndBrokenFilesFailWithoutStoppingTheOthers() throws {
        let workspace = try Workspace()
        let notes = try workspace.file("notes.txt", Array("not a photo".utf8))
        let broken = try workspace.file("broken.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0x42, count: 100))
        let good = try workspace.photo("good.jpg", seed: 3)
        let result = try workspace.cli(["import", notes, broken, good, workspace.folder.appendingPathComponent("missing.jpg").path])
        #expect(result.status == 1)
        #expect(result.output.contains("skipped \(notes): not a photo or video"))
        #expect(result.errors.contains("failed: \(broken): "))
        #expect(result.errors.contains("missing.jpg: no such file or folder"))
        #expect(result.output.contains("imported \(good) -> "))
        #expect(result.output.contains("Imported 1 file in"))
        #expect(result.output.contains("1 non-media; 2 failed."))
        #expect(try workspace.assets().count == 1)
    }

    @Test func foldersNeedRecursiveForSubfolders() throws {
        let workspace = try Workspace()
        try workspace.photo("top.jpg", seed: 1, in: "roll")
        try workspace.photo("deep.jpg", seed: 2, in: "roll/sub")
        let roll = workspace.folder.appendingPathComponent("roll").path
        let flat = try #require(try workspace.json(["import", roll, "--dry-run"]) as? [String: Any])
        #expect((flat["imported"] as? [Any])?.count == 1)
        #expect(flat["dryRun"] as? Bool == true)
        #expect(try workspace.assets().isEmpty)
        let deep = try #require(try workspace.json(["import", roll, "--recursive"]) as? [String: Any])
        #expect((deep["imported"] as? [Any])?.count == 2)
        #expect(try workspace.assets().count == 2)
    }

    @Test func dryRunChangesNothing() throws {
        let workspace = try Workspace()
        let a = try workspace.photo("a.jpg", seed: 1)
        let result = try workspace.cli(["import", a, "--dry-run", "--album", "Trip"])
        #expect(result.status == 0)
        #expect(result.output.contains("would import \(a)"))
        #expect(result.output.contains("Would import 1 file into album 'Trip'"))
        #expect(try workspace.assets().isEmpty && workspace.albums().isEmpty)
    }

    @Test func importIntoAnAlbumCreatesItOnceAndKeepsFileOrder() throws {
        let workspace = try Workspace()
        let first = try workspace.importPhotos(
            [try workspace.photo("1.jpg", seed: 1), try workspace.photo("2.jpg", seed: 2)], album: "Trip")
        let second = try workspace.importPhotos([try workspace.photo("3.jpg", seed: 3)], album: "Trip")
        let albums = try workspace.albums()
        #expect(albums.count == 1)
        #expect(albums[0]["title"] as? String == "Trip")
        #expect(albums[0]["assetIdentifiers"] as? [String] == first + second)
    }

    @Test func moveRemovesTheSourcesAfterImport() throws {
        let workspace = try Workspace()
        let a = try workspace.photo("a.jpg", seed: 1)
        #expect(try workspace.cli(["import", a, "--move"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: a))
        #expect(try workspace.assets().count == 1)
    }

    @Test func manyFilesImportInBlocksWithAPlainLineEach() throws {
        let workspace = try Workspace()
        for index in 0..<520 { try workspace.photo(String(format: "img-%03d.jpg", index), seed: UInt64(1000 + index), in: "many") }
        let result = try workspace.cli(["import", workspace.folder.appendingPathComponent("many").path, "--album", "Many"])
        #expect(result.status == 0)
        let imported = result.output.split(separator: "\n").filter { $0.hasPrefix("imported ") }
        #expect(imported.count == 520, "two blocks")
        #expect(!result.output.contains("\r"))
        let identifiers = imported.map { String($0.split(separator: " ").last!) }
        #expect(try workspace.albums().first?["assetIdentifiers"] as? [String] == identifiers, "the album keeps file order across blocks")
    }

    @Test func quietPrintsNothingOnSuccess() throws {
        let workspace = try Workspace()
        let result = try workspace.cli(["import", try workspace.photo("a.jpg", seed: 1), "--quiet"])
        #expect(result.status == 0)
        #expect(result.output.isEmpty)
    }
}
