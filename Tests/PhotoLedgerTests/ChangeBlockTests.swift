import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Change blocks")
struct ChangeBlockTests {
    @Test("a block's changes commit together as one group of events sharing a change-block id")
    func oneBlockOneGroup() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        try library.performChangesAndWait { changes in
            let asset = try changes.createAsset(imageCreation())
            let album = try changes.createAlbum(title: "Trip")
            try album.insertAssets([asset.placeholderForCreatedAsset], at: [0])
        }
        let events = try library.allEvents()
        #expect(events.map(\.type) == ["asset.created", "album.created", "album.membersChanged"])
        #expect(Set(events.map(\.changeBlock)).count == 1)
        #expect(events.map(\.deviceSequence) == [1, 2, 3])
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp < $1.timestamp })
    }

    @Test("a block that throws changes nothing")
    func throwingBlockChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        struct Abandoned: Error {}
        #expect(throws: Abandoned.self) {
            try library.performChangesAndWait { changes in
                _ = try changes.createAsset(imageCreation())
                _ = try changes.createAlbum(title: "Never")
                throw Abandoned()
            }
        }
        #expect(try library.allEvents().isEmpty)
        #expect(try library.fetchAssets().count == 0)
        #expect(try library.fetchAssetCollections(with: .album).count == 0)
    }

    @Test("a change request used after its block ended is a clear error")
    func requestOutsideBlock() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let (album, changes) = try library.performChangesAndWait { changes in (try changes.createAlbum(title: "Kept"), changes) }
        let error = try #require(throws: PhotoLibraryError.self) { try album.setTitle("Late") }
        #expect(error.code == .changeNotSupported)
        #expect(error.message.contains("inside the performChanges"))
        #expect(throws: PhotoLibraryError.self) { _ = try changes.createAlbum(title: "Late") }
        #expect(try library.allEvents().count == 1)
    }

    @Test("a nested performChangesAndWait is a thrown error, never a deadlock")
    func nestedBlock() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let error = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { _ in
                try library.performChangesAndWait { changes in _ = try changes.createAlbum(title: "Inner") }
            }
        }
        #expect(error.code == .changeNotSupported)
        #expect(error.message.contains("cannot be nested"))
        #expect(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { _ in _ = try library.fetchAssets() }
        }
    }

    @Test("blocks from many tasks at once are serialized: no lost or interleaved events")
    func concurrentBlocks() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for step in 0..<10 {
                        try await library.performChanges { changes in
                            let album = try changes.createAlbum(title: "task \(task) step \(step)")
                            let asset = try changes.createAsset(imageCreation())
                            try album.addAssets([asset.placeholderForCreatedAsset])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let events = try library.allEvents()
        #expect(events.count == 240)
        #expect(events.map(\.deviceSequence) == Array(1...240))
        // Each block's three events are contiguous in the log.
        for start in stride(from: 0, to: 240, by: 3) {
            #expect(Set(events[start..<start + 3].map(\.changeBlock)).count == 1)
        }
        #expect(try library.fetchAssetCollections(with: .album).count == 80)
        #expect(try library.verify().intactCount == 240)
    }

    @Test("the async form returns the block's result after commit")
    func asyncForm() async throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let placeholder = try await library.performChanges { changes in
            try changes.createAsset(imageCreation()).placeholderForCreatedAsset
        }
        #expect(LocalIdentifier(placeholder.localIdentifier)?.kind == .asset)
        #expect(try library.fetchAssets(withLocalIdentifiers: [placeholder.localIdentifier]).count == 1)
    }

    @Test("an invalid device name is refused when opening")
    func invalidDevice() throws {
        let directory = try TemporaryDirectory()
        let error = try #require(throws: PhotoLibraryError.self) {
            try PhotoLibrary(url: directory.file("x.sqlite"), device: "anna phone/1")
        }
        #expect(error.message.contains("invalid device name"))
    }

    @Test("a file that is not a library gives a clear error")
    func notALibrary() throws {
        let directory = try TemporaryDirectory()
        try Data(repeating: 7, count: 5000).write(to: directory.file("notes.txt"))
        let error = try #require(throws: PhotoLibraryError.self) {
            try PhotoLibrary(url: directory.file("notes.txt"), device: "anna-phone")
        }
        #expect(error.code == .internalError)
        #expect(error.message.contains("does not name a PhotoLedger database"))
    }
}
