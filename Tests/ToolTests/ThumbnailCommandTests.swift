import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia
import Testing

@Suite("photoledger thumbnail, and the thumbnails import makes")
struct ThumbnailCommandTests {
    /// Writes a JPEG of `width × height` (stored), with an EXIF orientation when given.
    private func photo(_ workspace: Workspace, _ name: String, width: Int, height: Int, orientation: Int? = nil) throws -> String {
        let bytes = try StillEncoder.encode(
            [RGBImage.scene(width: width, height: height, seed: 3)], as: "jpeg", options: .init(orientation: orientation))
        return try workspace.file(name, bytes)
    }

    @Test func thumbnailWritesTheRenditionForTheSizeAndMode() throws {
        let workspace = try Workspace()
        let id = try workspace.importPhotos([try photo(workspace, "wide.jpg", width: 1600, height: 1200)])[0]
        let cases: [(String, String, [String], Int, Int)] = [
            ("fit.jpg", "300", [], 512, 384), ("fill.jpg", "300", ["--mode", "fill"], 683, 512), ("small.jpg", "100", [], 256, 192),
            ("full.jpg", "4000", ["--version", "original"], 1600, 1200),
        ]
        for (name, size, extra, width, height) in cases {
            let destination = workspace.folder.appendingPathComponent(name).path
            let report = try workspace.json(["thumbnail", id, "--size", size, "--to", destination] + extra) as? [String: Any]
            #expect(report?["pixelWidth"] as? Int == width && report?["pixelHeight"] as? Int == height, "\(name)")
            #expect(report?["uniformTypeIdentifier"] as? String == "public.jpeg" && report?["file"] as? String == destination)
            let decoded = try RGBImage.decode(try Data(contentsOf: URL(fileURLWithPath: destination)))
            #expect((decoded.width, decoded.height) == (width, height))
        }
        let text = try workspace.cli(["thumbnail", id, "--size", "256", "--to", workspace.folder.appendingPathComponent("t.jpg").path])
        #expect(text.status == 0 && text.output.contains("256×192 JPEG"))
    }

    @Test func aTurnedPhotoComesOutUprightAndAVideoAsItsFirstFrame() throws {
        let workspace = try Workspace()
        let turned = try photo(workspace, "portrait.jpg", width: 800, height: 600, orientation: 6)
        let movie = try workspace.file("clip.mp4", try SyntheticMedia.movie(width: 320, height: 240, duration: 1))
        let ids = try workspace.importPhotos([turned, movie])
        for (id, width, height) in [(ids[0], 192, 256), (ids[1], 256, 192)] {
            let destination = workspace.folder.appendingPathComponent("\(width).jpg").path
            let report = try workspace.json(["thumbnail", id, "--size", "256", "--to", destination]) as? [String: Any]
            #expect(report?["pixelWidth"] as? Int == width && report?["pixelHeight"] as? Int == height)
        }
    }

    @Test func thumbnailErrorsExplainThemselves() throws {
        let workspace = try Workspace()
        let id = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)])[0]
        let destination = workspace.folder.appendingPathComponent("out.jpg").path
        #expect(try workspace.cli(["thumbnail", id, "--size", "64", "--to", destination]).status == 0)
        let again = try workspace.cli(["thumbnail", id, "--size", "64", "--to", destination])
        #expect(again.status == 1 && again.errors.contains("already exists"))
        let zero = try workspace.cli(["thumbnail", id, "--size", "0", "--to", destination + "2"])
        #expect(zero.status == 64 && zero.errors.contains("--size"))
        let mode = try workspace.cli(["thumbnail", id, "--size", "64", "--mode", "stretch", "--to", destination + "3"])
        #expect(mode.status == 64 && mode.errors.contains("fit, fill"))
        #expect(try workspace.cli(["thumbnail", id, "--to", destination + "4"]).status == 64)
        let unknown = try workspace.cli(["thumbnail", UUID().uuidString, "--size", "64", "--to", destination + "5"])
        #expect(unknown.status == 1 && unknown.errors.contains("identifierNotFound"))
    }

    @Test func importMakesTheCommonThumbnailsAndCountsThem() throws {
        let workspace = try Workspace()
        let paths = try (0..<4).map { try photo(workspace, "p\($0).jpg", width: 1200 + 40 * $0, height: 900) }
        let report = try workspace.json(["import"] + paths) as? [String: Any]
        #expect(report?["thumbnails"] as? Int == 12)
        let keys = Set(report?.keys.map { $0 } ?? [])
        #expect(keys == ["dryRun", "imported", "duplicates", "notMedia", "failed", "skipped", "files", "thumbnails", "thumbnailFailures"])
        #expect((report?["thumbnailFailures"] as? [Any])?.isEmpty == true)
        let renditions = workspace.folder.appendingPathComponent("library.renditions")
        let names = try FileManager.default.subpathsOfDirectory(atPath: renditions.path).filter { $0.hasSuffix(".jpg") }
        #expect(names.filter { $0.hasSuffix("-256-fit.jpg") }.count == 4)
        #expect(names.filter { $0.hasSuffix("-256-fill.jpg") }.count == 4)
        #expect(names.filter { $0.hasSuffix("-1024-fit.jpg") }.count == 4)
        let text = try workspace.cli(["import", try photo(workspace, "more.jpg", width: 640, height: 480)])
        #expect(text.status == 0 && text.output.contains("Made 3 thumbnails"))
        let dryRun =
            try workspace.json(["import", "--dry-run", try photo(workspace, "dry.jpg", width: 640, height: 400)]) as? [String: Any]
        #expect(dryRun?["thumbnails"] as? Int == 0)
    }
}
