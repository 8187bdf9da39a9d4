import Foundation
import Testing

@Suite("photoledger: assets, albums, album changes, asset flags, export")
struct LibraryCommandTests {
    /// A workspace with four photos in album "Trip".
    func trip() throws -> (Workspace, album: String, assets: [String]) {
        let workspace = try Workspace()
        let paths = try (1...4).map {
            try workspace.photo("\($0).jpg", seed: UInt64($0), date: Date(timeIntervalSince1970: 1_700_000_000 + Double($0)))
        }
        let assets = try workspace.importPhotos(paths, album: "Trip")
        let album = try #require(try workspace.albums().first?["localIdentifier"] as? String)
        return (workspace, album, assets)
    }

    func members(_ workspace: Workspace) throws -> [String] {
        try workspace.albums().first?["assetIdentifiers"] as? [String] ?? []
    }

    @Test func assetsJSONHasTheDocumentedShape() throws {
        let (workspace, _, assets) = try trip()
        let listed = try workspace.assets()
        #expect(listed.count == 4)
        let first = try #require(listed.first { $0["localIdentifier"] as? String == assets[0] })
        #expect(
            Set(first.keys) == [
                "localIdentifier", "mediaType", "pixelWidth", "pixelHeight", "creationDate", "isFavorite", "isHidden", "isDeleted",
                "sha256",
            ])
        #expect(first["mediaType"] as? String == "image")
        #expect(first["pixelWidth"] as? Int == 48 && first["pixelHeight"] as? Int == 32)
        #expect(first["creationDate"] as? String == "2023-11-14T22:13:21Z")
        #expect(first["isFavorite"] as? Bool == false && first["isHidden"] as? Bool == false && first["isDeleted"] as? Bool == false)
        #expect((first["sha256"] as? String)?.count == 64)
        let raw = try workspace.cli(["assets", "--json"]).output
        #expect(raw.hasPrefix("[{\"localIdentifier\":"))
    }

    @Test func albumsJSONHasTheDocumentedShape() throws {
        let (workspace, album, assets) = try trip()
        let albums = try workspace.albums()
        #expect(albums.count == 1)
        #expect(Set(albums[0].keys) == ["localIdentifier", "title", "assetIdentifiers"])
        #expect(albums[0]["localIdentifier"] as? String == album)
        #expect(albums[0]["assetIdentifiers"] as? [String] == assets)
    }

    @Test func albumCreateRenameDelete() throws {
        let workspace = try Workspace()
        let created = try #require(try workspace.json(["album", "create", "Summer"]) as? [String: Any])
        let id = try #require(created["localIdentifier"] as? String)
        #expect(try workspace.cli(["album", "rename", id, "Winter"]).status == 0)
        #expect(try workspace.albums().first?["title"] as? String == "Winter")
        let byTitle = try workspace.cli(["album", "delete", "Winter"])
        #expect(byTitle.status == 0)
        #expect(byTitle.output.contains("Deleted album 'Winter'"))
        #expect(try workspace.albums().isEmpty)
    }

    @Test func albumAddInsertRemoveMove() throws {
        let (workspace, album, assets) = try trip()
        #expect(try workspace.cli(["album", "remove", album, assets[0], assets[1]]).status == 0)
        #expect(try members(workspace) == [assets[2], assets[3]])
        #expect(try workspace.cli(["album", "insert", album, assets[0], "--at", "1"]).status == 0)
        #expect(try members(workspace) == [assets[2], assets[0], assets[3]])
        #expect(try workspace.cli(["album", "add", album, assets[1]]).status == 0)
        #expect(try members(workspace) == [assets[2], assets[0], assets[3], assets[1]])
        #expect(try workspace.cli(["album", "move", album, "--from", "0,1", "--to", "2"]).status == 0)
        #expect(try members(workspace) == [assets[3], assets[1], assets[2], assets[0]])
    }

    @Test func identifiersMayBeUniquePrefixesOrUUIDs() throws {
        let (workspace, album, assets) = try trip()
        let uuid = String(assets[0].prefix(36))
        #expect(try workspace.cli(["favorite", uuid]).status == 0)
        // Assets imported together share their creation millisecond, the first 13 characters of
        // a UUIDv7: take the shortest prefix from there on that names assets[1] alone.
        let length = try #require(
            (13...36).first { length in !assets.contains { $0 != assets[1] && $0.hasPrefix(assets[1].prefix(length)) } })
        #expect(try workspace.cli(["album", "remove", String(album.prefix(36)), String(assets[1].prefix(length))]).status == 0)
        #expect(try members(workspace).count == 3)
        let tooShort = try workspace.cli(["favorite", "0"])
        #expect(tooShort.status == 1 && tooShort.errors.contains("no asset matches '0'"))
    }

    @Test func albumErrorsExplainThemselves() throws {
        let (workspace, album, assets) = try trip()
        let outOfRange = try workspace.cli([
            "album", "insert", album, try workspace.importPhotos([try workspace.photo("x.jpg", seed: 9)])[0], "--at", "9",
        ])
        #expect(outOfRange.status == 1)
        #expect(outOfRange.errors.contains("out of range"))
        let badIndex = try workspace.cli(["album", "insert", album, assets[0], "--at", "first"])
        #expect(badIndex.status == 64)
        let missingAt = try workspace.cli(["album", "insert", album, assets[0]])
        #expect(missingAt.status == 64 && missingAt.errors.contains("missing '--at <index>'"))
        let badFrom = try workspace.cli(["album", "move", album, "--from", "a,b", "--to", "0"])
        #expect(badFrom.status == 64)
        let noAlbum = try workspace.cli(["album", "add", "Nonexistent", assets[0]])
        #expect(noAlbum.status == 1 && noAlbum.errors.contains("no album matches 'Nonexistent'"))
        let noAsset = try workspace.cli(["favorite", "00000000-0000-7000-8000-000000000000/L0/001"])
        #expect(noAsset.status == 1 && noAsset.errors.contains("identifierNotFound"))
    }

    @Test func albumMergeUnitesSameNamedAlbums() throws {
        let workspace = try Workspace()
        let a = try workspace.importPhotos([try workspace.photo("a.jpg", seed: 1)])
        let b = try workspace.importPhotos([try workspace.photo("b.jpg", seed: 2)])
        let first = try #require(try workspace.json(["album", "create", "Trip"]) as? [String: Any])["localIdentifier"] as! String
        let second = try #require(try workspace.json(["album", "create", "Trip"]) as? [String: Any])["localIdentifier"] as! String
        #expect(try workspace.cli(["album", "add", first] + a).status == 0)
        #expect(try workspace.cli(["album", "add", second] + b).status == 0)
        let ambiguous = try workspace.cli(["album", "add", "Trip"] + a)
        #expect(ambiguous.status == 1 && ambiguous.errors.contains("2 albums are titled 'Trip'"))
        #expect(try workspace.cli(["album", "merge", first, second]).status == 0)
        let albums = try workspace.albums()
        #expect(albums.count == 1)
        #expect(Set(albums[0]["assetIdentifiers"] as? [String] ?? []) == Set(a + b))
    }

    @Test func favoriteHideDeleteAndTheirOpposites() throws {
        let (workspace, _, assets) = try trip()
        func state(_ id: String) throws -> [String: Any] {
            try (workspace.assets() + workspace.assets(["--deleted"])).first { $0["localIdentifier"] as? String == id } ?? [:]
        }
        #expect(try workspace.cli(["favorite", assets[0], assets[1]]).status == 0)
        #expect(try workspace.assets(["--favorites"]).count == 2)
        #expect(try workspace.cli(["unfavorite", assets[1]]).status == 0)
        #expect(try workspace.assets(["--favorites"]).map { $0["localIdentifier"] as? String } == [assets[0]])
        #expect(try workspace.cli(["hide", assets[2]]).status == 0)
        #expect(try state(assets[2])["isHidden"] as? Bool == true)
        #expect(try workspace.cli(["unhide", assets[2]]).status == 0)
        #expect(try state(assets[2])["isHidden"] as? Bool == false)
        #expect(try workspace.cli(["delete", assets[3]]).status == 0)
        #expect(try workspace.assets(["--deleted"]).map { $0["localIdentifier"] as? String } == [assets[3]])
        #expect(try state(assets[3])["isDeleted"] as? Bool == true)
        #expect(try workspace.cli(["recover", assets[3]]).status == 0)
        #expect(try workspace.assets(["--deleted"]).isEmpty)
    }

    @Test func assetsOfAnAlbumAreInAlbumOrder() throws {
        let (workspace, album, assets) = try trip()
        #expect(try workspace.cli(["album", "move", album, "--from", "3", "--to", "0"]).status == 0)
        let listed = try workspace.assets(["--album", album]).compactMap { $0["localIdentifier"] as? String }
        #expect(listed == [assets[3], assets[0], assets[1], assets[2]])
    }

    @Test func exportWritesTheOriginalBytes() throws {
        let workspace = try Workspace()
        let path = try workspace.photo("a.jpg", seed: 5)
        let id = try workspace.importPhotos([path])[0]
        let destination = workspace.folder.appendingPathComponent("out.jpg").path
        let result = try workspace.cli(["export", id, "--to", destination, "--version", "original"])
        #expect(result.status == 0)
        #expect(FileManager.default.contents(atPath: destination) == FileManager.default.contents(atPath: path))
        let again = try workspace.cli(["export", id, "--to", destination])
        #expect(again.status == 1 && again.errors.contains("already exists"))
        let badVersion = try workspace.cli(["export", id, "--to", destination + "2", "--version", "best"])
        #expect(badVersion.status == 64)
        let noTarget = try workspace.cli(["export", id])
        #expect(noTarget.status == 64)
    }
}
