import Foundation
import Testing

@Suite("photoledger: album indexes, what album changes report, errors in the command's words")
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

    @Test func indexesOutOfRangeAreExplainedWithTheHiddenMembers() throws {
        let (workspace, album, _) = try tripWithAHiddenMember()
        let from = try workspace.cli(["album", "move", album, "--from", "3", "--to", "0"])
        #expect(from.status == 1)
        #expect(from.errors.hasPrefix("Error: --from 3 is out of range: 'Trip' has 3 assets with an index, so --from takes 0 to 2\n"))
        #expect(from.errors.contains("hidden assets have none (1 in 'Trip')"))
        let to = try workspace.cli(["album", "move", album, "--from", "0,1", "--to", "2"])
        #expect(to.status == 1)
        #expect(
            to.errors.hasPrefix(
                "Error: --to 2 is out of range: with the 2 moved assets taken out, 'Trip' has 1 other, so --to goes from 0 to 1\n"))
    }

    @Test func removeReportsWhatItRemovedAndNamesTheAssetsThatWereNotMembers() throws {
        let workspace = try Workspace()
        let assets = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1), try workspace.photo("b.jpg", seed: 2)])
        let album = try #require(try workspace.json(["album", "create", "Trip"]) as? [String: Any])["localIdentifier"] as! String
        #expect(try workspace.cli(["album", "add", album, assets[0]]).status == 0)
        let text = try workspace.cli(["album", "remove", album, assets[0], assets[1]])
        #expect(text.status == 0)
        #expect(text.output == "Removed 1 asset from 'Trip': \(album)\nNot in 'Trip', nothing to remove: \(assets[1])\n")
        let none = try #require(try workspace.json(["album", "remove", album, assets[1]]) as? [String: Any])
        #expect(none["removed"] as? [String] == [] && none["notInAlbum"] as? [String] == [assets[1]])
        #expect(none["localIdentifier"] as? String == album)
        #expect(try workspace.cli(["album", "remove", album, assets[1]]).output.hasPrefix("Removed 0 assets from 'Trip'"))
    }

    @Test func addReportsTheAssetsAlreadyInTheAlbum() throws {
        let (workspace, album, assets) = try tripWithAHiddenMember()
        let extra = try workspace.importPhotos([try workspace.photo("extra.jpg", seed: 99)])[0]
        let added = try #require(try workspace.json(["album", "add", album, assets[0], assets[1], extra]) as? [String: Any])
        #expect(added["added"] as? [String] == [extra])
        #expect(added["alreadyInAlbum"] as? [String] == [assets[0], assets[1]])
        let text = try workspace.cli(["album", "add", album, extra])
        #expect(text.output == "Added 0 assets to 'Trip': \(album)\nAlready in 'Trip', left where they are: \(extra)\n")
    }

    @Test func errorsSpeakInCommandsAndOptionsNotLibraryFunctions() throws {
        let (workspace, album, assets) = try tripWithAHiddenMember()
        let member = try workspace.cli(["album", "insert", album, assets[2], "--at", "0"])
        #expect(member.status == 1)
        #expect(member.errors.contains("asset \(assets[2]) is already in 'Trip' at index 1"))
        #expect(member.errors.contains("Hint: change its place with 'photoledger album move --from 1 --to <index>'"))
        let twice = try workspace.cli(["album", "insert", album, assets[1], assets[1], "--at", "0"])
        #expect(twice.status == 1 && twice.errors.contains("is given twice"))
        let at = try workspace.cli(["album", "insert", album, assets[1], "--at", "4"])
        #expect(at.errors.hasPrefix("Error: --at 4 is out of range: 'Trip' has 3 assets with an index, so --at goes from 0 to 3"))
        let negative = try workspace.cli(["album", "move", album, "--from", "0", "--to", "-1"])
        #expect(negative.status == 64 && negative.errors.hasPrefix("Error: --to must be an index of 0 or more, not -1"))
        for result in [member, twice, at, negative] {
            for libraryWord in ["moveAssets", "insertAssets", "(at:", "performChanges"] {
                #expect(!result.errors.contains(libraryWord), "\(result.errors)")
            }
        }
    }
}

@Suite("photoledger import --album with a title that several albums have")
struct ImportAlbumTests {
    @Test func anAmbiguousTitleIsRefusedAndAnIdentifierChoosesTheAlbum() throws {
        let workspace = try Workspace()
        let first = try #require(try workspace.json(["album", "create", "Trip"]) as? [String: Any])["localIdentifier"] as! String
        let second = try #require(try workspace.json(["album", "create", "Trip"]) as? [String: Any])["localIdentifier"] as! String
        let photo = try workspace.photo("a.jpg", seed: 1)
        let refused = try workspace.cli(["import", photo, "--album", "Trip"])
        #expect(refused.status == 1)
        #expect(refused.errors.hasPrefix("Error: 2 albums are titled 'Trip': "))
        #expect(refused.errors.contains(first) && refused.errors.contains(second))
        #expect(refused.errors.contains("Hint: pass one of them by its identifier: --album <identifier>"))
        #expect(try workspace.assets().isEmpty, "nothing is imported")

        let chosen = try workspace.cli(["import", photo, "--album", second])
        #expect(chosen.status == 0, "\(chosen.errors)")
        #expect(chosen.output.contains("Imported 1 file into album 'Trip'"))
        let albums = try workspace.albums()
        let members = Dictionary(
            uniqueKeysWithValues: albums.map { ($0["localIdentifier"] as! String, $0["assetIdentifiers"] as! [String]) })
        #expect(members[first] == [] && members[second]?.count == 1)
    }

    @Test func aTitleNoAlbumHasCreatesTheAlbumOnce() throws {
        let workspace = try Workspace()
        let ids = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)], album: "New")
        let more = try workspace.importPhotos([try workspace.photo("b.jpg", seed: 2)], album: "New")
        let albums = try workspace.albums()
        #expect(albums.count == 1 && albums[0]["assetIdentifiers"] as? [String] == ids + more)
    }
}
