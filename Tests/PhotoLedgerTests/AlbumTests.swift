import Foundation
import Testing

@testable import PhotoLedger

@Suite("Albums and PhotoKit's index rules")
struct AlbumTests {
    /// A library with an album holding assets a0…a(n-1) in order.
    func setUp(_ count: Int = 5) throws -> (TemporaryDirectory, PhotoLibrary, album: String, assets: [String]) {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(count)
        let album = try library.createAlbum("Trip", assets: assets)
        return (directory, library, album, assets)
    }

    @Test("a created album's placeholder identifier is <UUID>/L0/040 and final")
    func createAlbum() throws {
        let (_, library, album, assets) = try setUp(3)
        #expect(album.hasSuffix("/L0/040") && LocalIdentifier(album) != nil)
        let fetched = try library.album(album)
        #expect(fetched.title == "Trip" && fetched.collectionType == .album && fetched.subtype == .albumRegular)
        #expect(fetched.estimatedAssetCount == 3)
        #expect(try library.members(album) == assets)
    }

    @Test("insertAssets at 0 puts the asset first (the cover); indexes refer to the final order")
    func insertAtZero() throws {
        let (_, library, album, assets) = try setUp(3)
        let new = try library.createAssets(2)
        try library.performChangesAndWait { changes in
            try changes.albumChangeRequest(for: album).insertAssets([new[0]], at: [0])
        }
        #expect(try library.members(album) == [new[0]] + assets)
        try library.performChangesAndWait { changes in
            try changes.albumChangeRequest(for: album).insertAssets([new[1]], at: [2])
        }
        #expect(try library.members(album) == [new[0], assets[0], new[1], assets[1], assets[2]])
    }

    @Test("insertions and appends that read only the rows they need record what reading every member records")
    func fewRowsAsEveryMember() throws {
        // Two libraries made alike (same seed, same clock); in one, each request first reads every member.
        func run(readingEveryMember: Bool) throws -> (members: [String], errors: [String], payloads: [[UInt8]]) {
            let directory = try TemporaryDirectory()
            let library = try makeLibrary(directory)
            let assets = try library.createAssets(40)
            let hidden = try library.createAssets(3, hidden: true)
            let album = try library.createAlbum("Big", assets: Array(assets[0..<30]) + hidden)
            let operations: [(AlbumChangeRequest) throws -> Void] = [
                { try $0.insertAssets([assets[30]], at: [0]) },
                { try $0.insertAssets([assets[31], assets[32]], at: [5, 6]) },
                { try $0.insertAssets([assets[33]], at: [33]) },  // at the end: 33 visible members
                { try $0.insertAssets([assets[34]], at: [35]) },  // past the end
                { try $0.insertAssets([assets[1]], at: [2]) },  // already a member
                { try $0.insertAssets([hidden[0]], at: [1]) },  // a hidden member: not one the indexes see
                { try $0.addAssets([assets[35], assets[2], hidden[1], assets[35]]) },
                { try $0.insertAssets([assets[36], assets[37]], at: [1, 3]) },  // two runs: every member is read
                { try $0.insertAssets([assets[38], assets[38]], at: [0, 1]) },  // twice
            ]
            var errors: [String] = []
            for operation in operations {
                do {
                    try library.performChangesAndWait { changes in
                        let request = try changes.albumChangeRequest(for: album)
                        if readingEveryMember { _ = try request.assetCount }
                        try operation(request)
                    }
                } catch let error as PhotoLibraryError {
                    errors.append(error.message)
                }
            }
            return (try library.members(album), errors, try library.allEvents().map(\.payload))
        }
        let few = try run(readingEveryMember: false)
        let every = try run(readingEveryMember: true)
        #expect(few.members == every.members)
        #expect(few.members.count == 37)  // 30, 7 added (the hidden asset inserted stays hidden)
        #expect(few.errors == every.errors)
        #expect(few.errors.count == 3, "\(few.errors)")
        #expect(few.payloads == every.payloads)
    }

    @Test("insertAssets with several indexes places assets[k] at the k-th smallest index")
    func insertSeveral() throws {
        let (_, library, album, assets) = try setUp(3)
        let new = try library.createAssets(3)
        try library.performChangesAndWait { changes in
            try changes.albumChangeRequest(for: album).insertAssets(new, at: IndexSet([0, 2, 5]))
        }
        #expect(try library.members(album) == [new[0], assets[0], new[1], assets[1], assets[2], new[2]])
    }

    @Test("insert errors: count mismatch, out of range, already a member, deleted and unknown assets — nothing written")
    func insertErrors() throws {
        let (_, library, album, assets) = try setUp(2)
        let new = try library.createAssets(2)
        let before = try library.allEvents().count
        func failure(_ body: @escaping (AlbumChangeRequest) throws -> Void) throws -> PhotoLibraryError {
            try #require(throws: PhotoLibraryError.self) {
                try library.performChangesAndWait { changes in try body(try changes.albumChangeRequest(for: album)) }
            }
        }
        #expect(try failure { try $0.insertAssets(new, at: [0]) }.message.contains("2 assets but 1 indexes"))
        #expect(try failure { try $0.insertAssets([new[0]], at: [3]) }.message.contains("out of range"))
        #expect(try failure { try $0.insertAssets([assets[0]], at: [0]) }.message.contains("already in the album"))
        #expect(try failure { try $0.insertAssets([new[0], new[0]], at: [0, 1]) }.message.contains("twice"))
        let unknown = LocalIdentifier(uuid: UUID(), kind: .asset).description
        #expect(try failure { try $0.insertAssets([unknown], at: [0]) }.code == .identifierNotFound)
        #expect(try failure { try $0.insertAssets(["not-an-id"], at: [0]) }.code == .identifierNotFound)
        try library.performChangesAndWait { try $0.deleteAssets([new[1]]) }
        #expect(try failure { try $0.insertAssets([new[1]], at: [0]) }.message.contains("Recently Deleted"))
        #expect(try library.allEvents().count == before + 1)
        #expect(try library.members(album) == assets)
    }

    @Test("a caught failure inside a block writes nothing for that operation; the rest of the block commits")
    func caughtFailure() throws {
        let (_, library, album, assets) = try setUp(2)
        let new = try library.createAssets(1)
        try library.performChangesAndWait { changes in
            let request = try changes.albumChangeRequest(for: album)
            #expect(throws: PhotoLibraryError.self) { try request.insertAssets([new[0]], at: [9]) }
            try request.insertAssets([new[0]], at: [1])
        }
        #expect(try library.members(album) == [assets[0], new[0], assets[1]])
    }

    @Test("removeAssets by asset and by index; assets stay in the library")
    func remove() throws {
        let (_, library, album, assets) = try setUp(5)
        try library.performChangesAndWait { changes in
            let request = try changes.albumChangeRequest(for: album)
            try request.removeAssets([assets[1]])
            try request.removeAssets(at: IndexSet([0, 2]))
        }
        #expect(try library.members(album) == [assets[2], assets[4]])
        #expect(try library.fetchAssets().count == 5)
        let error = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).removeAssets(at: [2]) }
        }
        #expect(error.code == .operationInterrupted && error.message.contains("the album has 2 assets"))
    }

    @Test("replaceAssets swaps the assets at the indexes")
    func replace() throws {
        let (_, library, album, assets) = try setUp(4)
        let new = try library.createAssets(2)
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).replaceAssets(at: IndexSet([1, 3]), withAssets: new) }
        #expect(try library.members(album) == [assets[0], new[0], assets[2], new[1]])
    }

    @Test("moveAssets removes first, then inserts at the destination in the shortened list")
    func move() throws {
        let (_, library, album, a) = try setUp(6)
        // PhotoKit example: move indexes {1, 3} to 4 → [a0 a2 a4 a5] then insert at 4 → [a0 a2 a4 a5 a1 a3]
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: IndexSet([1, 3]), to: 4) }
        #expect(try library.members(album) == [a[0], a[2], a[4], a[5], a[1], a[3]])
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: IndexSet([5]), to: 0) }
        #expect(try library.members(album) == [a[3], a[0], a[2], a[4], a[5], a[1]])
        let error = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { try $0.albumChangeRequest(for: album).moveAssets(at: IndexSet([0, 1]), to: 5) }
        }
        #expect(error.message.contains("after removing the moved assets the album has 4"))
    }

    @Test("addAssets appends and skips assets already in the album")
    func add() throws {
        let (_, library, album, assets) = try setUp(2)
        let new = try library.createAssets(1)
        try library.performChangesAndWait { try $0.albumChangeRequest(for: album).addAssets([assets[0], new[0]]) }
        #expect(try library.members(album) == assets + new)
    }

    @Test("operations in one block see each other")
    func sequentialInBlock() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let album = try library.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Block")
            let first = try changes.createAsset(imageCreation()).placeholderForCreatedAsset
            let second = try changes.createAsset(imageCreation()).placeholderForCreatedAsset
            try album.insertAssets([first], at: [0])
            try album.insertAssets([second], at: [0])
            try album.moveAssets(at: [1], to: 0)
            #expect(try album.assetCount == 2)
            return album.placeholderForCreatedAssetCollection.localIdentifier
        }
        #expect(try library.fetchAssets(in: library.album(album)).count == 2)
    }

    @Test("rename and delete; titles are not unique; album(titled:) finds the oldest")
    func renameDeleteAndTitles() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let first = try library.createAlbum("Trip")
        let second = try library.createAlbum("Trip")
        #expect(first != second)
        let found = try library.performChangesAndWait { try $0.album(titled: "Trip")?.localIdentifier }
        #expect(found == first)
        try library.performChangesAndWait { try $0.albumChangeRequest(for: first).setTitle("Trip 2026") }
        #expect(try library.album(first).title == "Trip 2026")
        try library.performChangesAndWait { try $0.deleteAlbums([second]) }
        #expect(try library.fetchAssetCollections(with: .album).map(\.localIdentifier) == [first])
        #expect(throws: PhotoLibraryError.self) { try library.performChangesAndWait { _ = try $0.albumChangeRequest(for: second) } }
    }

    @Test("merging same-title albums unites members, keeps the smallest identifier, and redirects the others")
    func merge() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let assets = try library.createAssets(4)
        let a = try library.createAlbum("Trip", assets: [assets[0], assets[1]])
        let b = try library.createAlbum("Trip", assets: [assets[1], assets[2]])
        let winner = try library.performChangesAndWait { try $0.mergeAlbums([a, b]).localIdentifier }
        let smallest = [a, b].min { LocalIdentifier($0)!.uuid.bytes.lexicographicallyPrecedes(LocalIdentifier($1)!.uuid.bytes) }!
        #expect(winner == smallest)
        #expect(try library.fetchAssetCollections(with: .album).map(\.localIdentifier) == [winner])
        #expect(Set(try library.members(winner)) == Set(assets[0...2]))
        // The loser's identifier resolves to the merged album; changes addressed to it land there.
        let loser = winner == a ? b : a
        try library.performChangesAndWait { try $0.albumChangeRequest(for: loser).addAssets([assets[3]]) }
        #expect(Set(try library.members(winner)) == Set(assets))
        try library.performChangesAndWait { try $0.albumChangeRequest(for: winner).removeAssets([assets[1]]) }
        #expect(Set(try library.members(winner)) == Set([assets[0], assets[2], assets[3]]))
        #expect(try library.fetchAssetCollections(withLocalIdentifiers: [loser]).first?.localIdentifier == winner)
    }

    @Test("a stable key makes concurrent creation on two devices converge on one album")
    func stableKey() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone")
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2)
        let a = try anna.performChangesAndWait { try $0.createAlbum(title: "Camera", stableKey: "app.camera").localIdentifier }
        let b = try ben.performChangesAndWait { try $0.createAlbum(title: "Camera", stableKey: "app.camera").localIdentifier }
        #expect(a == b)
    }
}
