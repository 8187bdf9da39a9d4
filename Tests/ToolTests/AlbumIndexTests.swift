import Foundation
import Testing

@Suite("photoledger: album indexes, errors in the command's words")
struct AlbumIndexTests {
    /// A workspace with four photos in album "Trip", the second one hidden.
    func tripWithAHiddenMember() throws -> (Workspace, album: String, assets: [String]) {
        let workspace = try Workspace()
        let paths = try (1...4).map { try workspace.photo("\($0).jpg", seed: UInt64($0)) }
        let assets = try workspace.importPhotos(paths, album: "Trip")
        let album = try #require(try workspace.albums().first?["localIdentifier"] as? String)
        #expect(try workspace.cli(["hide", assets[1]]).status == 0)
        return (workspace, album, assets)
    }

    func members(_ workspace: Workspace) throws -> [String] {
        try workspace.albums().first?["assetIdentifiers"] as? [String] ?? []
    }

    @Test func albumsNumbersTheMembersAsTheIndexCommandsCountThem() throws {
        let (workspace, album, assets) = try tripWithAHiddenMember()
        let listing = try workspace.cli(["albums"])
        #expect(listing.status == 0)
        let lines = listing.output.split(separator: "\n").map(String.init)
        #expect(lines[0] == "\(album)  Trip  (4 assets, 1 hidden)")
        #expect(
            Array(lines[1...4]) == ["    0  \(assets[0])", "    -  \(assets[1])  hidden", "    1  \(assets[2])", "    2  \(assets[3])"])
    }

    @Test func moveActsOnTheAssetAtTheListedIndex() throws {
        let (workspace, album, assets) = try tripWithAHiddenMember()
        // 'albums' lists assets[2] at index 1: moving index 1 to the front moves assets[2].
        let moved = try workspace.cli(["album", "move", album, "--from", "1", "--to", "0"])
        #expect(moved.status == 0, "\(moved.errors)")
        #expect(try members(workspace) == [assets[2], assets[0], assets[1], assets[3]])
        let listing = try workspace.cli(["albums"]).output
        #expect(listing.contains("    0  \(assets[2])\n    1  \(assets[0])\n    -  \(assets[1])  hidden\n    2  \(assets[3])\n"))
    }

    @Test func insertPlacesTheAssetAtTheListedIndex() throws {
        let (workspace, album, assets) = try tripWithAHiddenMember()
        let extra = try workspace.importPhotos([try workspace.photo("extra.jpg", seed: 99)])[0]
        #expect(try workspace.cli(["album", "insert", album, extra, "--at", "2"]).status == 0)
        let listing = try workspace.cli(["albums"]).output
        let indexed = listing.split(separator: "\n").dropFirst().filter { !$0.hasSuffix("hidden") && $0.hasPrefix("    ") }
        #expect(indexed == ["    0  \(assets[0])", "    1  \(assets[2])", "    2  \(extra)", "    3  \(assets[3])"])
    }
}
