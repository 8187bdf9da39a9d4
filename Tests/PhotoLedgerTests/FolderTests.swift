import Foundation
import LedgerCore
import Testing

@testable import PhotoLedger

@Suite("Folders (collection lists)")
struct FolderTests {
    func titles(_ result: FetchResult<PhotoCollection>) -> [String] { result.map(\.title) }

    @Test("folders nest; the top level holds what no folder holds; a deleted folder's contents move up")
    func nesting() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let trip = try library.createAlbum("Trip")
        let pets = try library.createAlbum("Pets")
        let (travel, europe) = try library.performChangesAndWait { changes in
            let travel = try changes.createCollectionList(title: "Travel")
            let europe = try changes.createCollectionList(title: "Europe")
            try travel.addChildCollections([europe.placeholderForCreatedCollectionList])
            try europe.addChildCollections([trip])
            return (travel.localIdentifier, europe.localIdentifier)
        }
        #expect(titles(try library.fetchTopLevelUserCollections()) == ["Pets", "Travel"])
        let travelFolder = try #require(try library.fetchCollectionLists(withLocalIdentifiers: [travel]).first)
        #expect(titles(try library.fetchCollections(in: travelFolder)) == ["Europe"])
        let europeFolder = try #require(try library.fetchCollectionLists(withLocalIdentifiers: [europe]).first)
        #expect(try library.fetchCollections(in: europeFolder).map(\.localIdentifier) == [trip])
        #expect(europeFolder.parentIdentifier == travel)
        #expect(try library.fetchCollectionListsContaining(trip).map(\.localIdentifier) == [europe])
        #expect(try library.fetchCollectionListsContaining(pets).isEmpty)
        #expect(
            try library.fetchCollectionLists(options: FetchOptions(sortDescriptors: [SortDescriptor(.title)])).map(\.title) == [
                "Europe", "Travel",
            ])
        // Moving a folder into itself, or into a folder it holds, is refused and records nothing.
        let events = try library.allEvents().count
        for (folder, target) in [(travel, travel), (travel, europe)] {
            let error = try #require(throws: PhotoLibraryError.self) {
                try library.performChangesAndWait { try $0.collectionListChangeRequest(for: target).addChildCollections([folder]) }
            }
            #expect(error.code == .operationInterrupted && error.message.contains("inside itself"))
        }
        #expect(try library.allEvents().count == events)
        try library.performChangesAndWait { changes in
            try changes.collectionListChangeRequest(for: europe).setTitle("Europe 2026")
            try changes.deleteCollectionLists([travel])
        }
        #expect(titles(try library.fetchTopLevelUserCollections()) == ["Pets", "Europe 2026"], "a deleted folder's folder moves up")
        try library.performChangesAndWait { try $0.collectionListChangeRequest(for: europe).removeChildCollections([trip]) }
        #expect(titles(try library.fetchTopLevelUserCollections()) == ["Trip", "Pets", "Europe 2026"])
        expectError(.identifierNotFound) {
            try library.performChangesAndWait { try $0.collectionListChangeRequest(for: travel).setTitle("x") }
        }
    }

    @Test(
        "a folder moved into itself on another device: every device reads the same tree, the folder moved last at the top",
        arguments: [true, false])
    func concurrentCycle(annaFirst: Bool) throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let (a, b, c) = try anna.performChangesAndWait { changes in
            (
                try changes.createCollectionList(title: "A").localIdentifier, try changes.createCollectionList(title: "B").localIdentifier,
                try changes.createCollectionList(title: "C").localIdentifier
            )
        }
        let shared = try anna.allEvents()
        try ben.applyRemoteEvents(shared)
        // Offline: anna puts A in B, then B in C; ben, later, puts C in A. Together: A → B → C → A.
        try anna.performChangesAndWait { try $0.collectionListChangeRequest(for: b).addChildCollections([a]) }
        try anna.performChangesAndWait { try $0.collectionListChangeRequest(for: c).addChildCollections([b]) }
        clock.advance(milliseconds: 10)
        try ben.performChangesAndWait { try $0.collectionListChangeRequest(for: a).addChildCollections([c]) }
        let fromAnna = try anna.allEvents().filter { event in !shared.contains { $0.id == event.id } }
        let fromBen = try ben.allEvents().filter { event in !shared.contains { $0.id == event.id } }
        if annaFirst {
            try ben.applyRemoteEvents(fromAnna)
            try anna.applyRemoteEvents(fromBen)
        } else {
            try anna.applyRemoteEvents(fromBen)
            try ben.applyRemoteEvents(fromAnna)
        }
        for library in [anna, ben] {
            // C's move was the last: C is at the top, holding B, which holds A.
            #expect(try library.fetchTopLevelUserCollections().map(\.localIdentifier) == [c], "\(library.device)")
            #expect(try library.fetchCollectionListsContaining(b).map(\.localIdentifier) == [c])
            #expect(try library.fetchCollectionListsContaining(a).map(\.localIdentifier) == [b])
            #expect(try library.fetchCollectionListsContaining(c).isEmpty)
        }
        #expect(try anna.projectionDump() == ben.projectionDump())
        // The folder that holds C by its register (A) is not its folder in the tree: moving C out of
        // A is ignored; a new move of C wins as any later write does.
        try anna.performChangesAndWait { try $0.collectionListChangeRequest(for: a).removeChildCollections([c]) }
        #expect(try anna.fetchTopLevelUserCollections().map(\.localIdentifier) == [c])
        let error = try #require(throws: PhotoLibraryError.self) {
            try anna.performChangesAndWait { try $0.collectionListChangeRequest(for: a).addChildCollections([c]) }
        }
        #expect(error.code == .operationInterrupted, "C holds A in the tree each device reads")
    }

    @Test("a peer's event that moves a folder into itself is quarantined; the rest of the page applies")
    func hostileMove() throws {
        let directory = try TemporaryDirectory()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2)
        let (outer, inner) = try anna.performChangesAndWait { changes in
            let outer = try changes.createCollectionList(title: "Outer"), inner = try changes.createCollectionList(title: "Inner")
            try outer.addChildCollections([inner.placeholderForCreatedCollectionList])
            return (outer.localIdentifier, inner.localIdentifier)
        }
        var events = try anna.allEvents()
        let move = try #require(events.last { $0.type == EventType.collectionListMoved.rawValue })
        var itself = move
        itself.id = UUID()
        itself.deviceSequence = 50
        itself.payload = ChangeEvent.listMoved(parent: move.object).encoded()
        var garbage = move
        garbage.id = UUID()
        garbage.deviceSequence = 51
        garbage.payload = [1, 2, 3]
        events += [itself, garbage]
        try ben.applyRemoteEvents(events)
        let quarantine = Dictionary(uniqueKeysWithValues: try ben.quarantine().map { ($0.eventID, $0.reason) })
        #expect(quarantine[itself.id]?.contains("moves the folder into itself") == true)
        #expect(quarantine[garbage.id]?.contains("payload is invalid") == true)
        #expect(try ben.fetchCollectionListsContaining(inner).map(\.localIdentifier) == [outer])
    }

    @Test("a folder's changes reach observers with the top level's change details")
    func changeDetails() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let album = try library.createAlbum("Trip")
        let folder = try library.performChangesAndWait { try $0.createCollectionList(title: "Travel").localIdentifier }
        let top = try library.fetchTopLevelUserCollections()
        let list = try #require(try library.fetchCollectionLists().first)
        let observer = RecordingObserver()
        library.register(observer)
        try library.performChangesAndWait { changes in
            let request = try changes.collectionListChangeRequest(for: folder)
            try request.addChildCollections([album])
            try request.setTitle("Voyages")
        }
        let change = try #require(observer.next())
        let details = try #require(change.changeDetails(for: top))
        #expect(details.removedIndexes == [0] && details.changedIndexes == [0])
        #expect(details.fetchResultAfterChanges.map(\.title) == ["Voyages"])
        #expect(change.changeDetails(for: list)?.objectAfterChanges?.title == "Voyages")
        #expect(change.changedCollectionListIdentifiers == [folder])
    }

    @Test("persistent changes report folders: created, renamed, moved and deleted, with the albums moved into them")
    func persistentChanges() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let album = try library.createAlbum("Trip")
        let start = try library.currentChangeToken
        let (outer, inner) = try library.performChangesAndWait { changes in
            (
                try changes.createCollectionList(title: "Travel").localIdentifier,
                try changes.createCollectionList(title: "2025").localIdentifier
            )
        }
        try library.performChangesAndWait { changes in
            let request = try changes.collectionListChangeRequest(for: outer)
            try request.setTitle("Voyages")
            try request.addChildCollections([inner, album])
        }
        try library.performChangesAndWait { try $0.deleteCollectionLists([inner]) }
        let changes = Array(try library.fetchPersistentChanges(since: start))
        #expect(changes.count == 3)
        #expect(changes[0].changeDetails(for: .collectionList).insertedLocalIdentifiers == [outer, inner])
        #expect(changes[0].changeDetails(for: .assetCollection).insertedLocalIdentifiers.isEmpty)
        #expect(changes[1].changeDetails(for: .collectionList).updatedLocalIdentifiers == [outer, inner])
        #expect(changes[1].changeDetails(for: .assetCollection).updatedLocalIdentifiers == [album])
        #expect(changes[2].changeDetails(for: .collectionList).deletedLocalIdentifiers == [inner])
        #expect(changes[2].changeDetails(for: .collectionList).updatedLocalIdentifiers.isEmpty)
    }

    @Test(
        "a folder created twice, or on an asset's identifier, by a peer: the earliest creation wins on every device, the others are quarantined"
    )
    func conflictingCreations() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let folder = try anna.performChangesAndWait { try $0.createCollectionList(title: "Family").localIdentifier }
        let asset = try anna.createAssets(1)[0]
        let shared = try anna.allEvents()
        let creation = try #require(shared.first { $0.type == EventType.collectionListCreated.rawValue })
        // A damaged peer creates the folder again under another title, and a folder with the asset's identifier.
        var again = creation
        again.id = UUID()
        again.device = "mallory-pc"
        again.deviceSequence = 1
        again.timestamp = HLCTimestamp(milliseconds: creation.timestamp.milliseconds + 5, counter: 0)
        again.payload = ChangeEvent.listCreated(title: "Hijacked").encoded()
        var onAsset = again
        onAsset.id = UUID()
        onAsset.deviceSequence = 2
        onAsset.object = LocalIdentifier(asset)!.uuid
        for (library, events) in [(anna, [again, onAsset]), (ben, [onAsset, again] + shared.reversed())] {
            try library.applyRemoteEvents(events)
            #expect(try library.fetchCollectionLists().map(\.title) == ["Family"], "\(library.device)")
            #expect(try library.fetchAssets(withLocalIdentifiers: [asset]).count == 1)
            let reasons = Dictionary(uniqueKeysWithValues: try library.quarantine().map { ($0.eventID, $0.reason) })
            #expect(reasons[again.id]?.contains("folder \(folder) was created before") == true, "\(reasons)")
            #expect(reasons[again.id]?.contains("a folder is created once") == true)
            #expect(reasons[onAsset.id]?.contains("its identifier names asset") == true, "\(reasons)")
        }
        #expect(try anna.projectionDump() == ben.projectionDump())
    }

    @Test("a folder keeps a manual order: insert, move and remove at indexes, as PhotoKit's collection list change request")
    func manualOrder() throws {
        let directory = try TemporaryDirectory()
        let library = try makeLibrary(directory)
        let (a, b, c, d) = (
            try library.createAlbum("A"), try library.createAlbum("B"), try library.createAlbum("C"), try library.createAlbum("D")
        )
        let (folder, sub) = try library.performChangesAndWait { changes in
            let folder = try changes.createCollectionList(title: "Travel"), sub = try changes.createCollectionList(title: "Sub")
            try folder.addChildCollections([a, b])
            return (folder.localIdentifier, sub.localIdentifier)
        }
        func order() throws -> [String] {
            try library.fetchCollections(in: #require(library.fetchCollectionLists(withLocalIdentifiers: [folder]).firstObject)).map(
                \.title)
        }
        #expect(try order() == ["A", "B"])
        try library.performChangesAndWait { try $0.collectionListChangeRequest(for: folder).insertChildCollections([c, sub], at: [0, 2]) }
        #expect(try order() == ["C", "A", "Sub", "B"])
        try library.performChangesAndWait { try $0.collectionListChangeRequest(for: folder).moveChildCollections(at: [0, 3], to: 2) }
        #expect(try order() == ["A", "Sub", "C", "B"])
        try library.performChangesAndWait { try $0.collectionListChangeRequest(for: folder).addChildCollections([d]) }
        #expect(try order() == ["A", "Sub", "C", "B", "D"])
        try library.performChangesAndWait { try $0.collectionListChangeRequest(for: folder).removeChildCollections(at: [1, 4]) }
        #expect(try order() == ["A", "C", "B"])
        #expect(try library.fetchTopLevelUserCollections().map(\.title) == ["D", "Travel", "Sub"], "the top level is in creation order")
        let sorted = try library.fetchCollections(
            in: #require(library.fetchCollectionLists(withLocalIdentifiers: [folder]).firstObject),
            options: FetchOptions(sortDescriptors: [SortDescriptor(.title)]))
        #expect(sorted.map(\.title) == ["A", "B", "C"])
        let cases: [(String, (CollectionListChangeRequest) throws -> Void)] = [
            ("2 collections but 1 indexes", { try $0.insertChildCollections([d, sub], at: [0]) }),
            ("is already in the folder or given twice", { try $0.insertChildCollections([a], at: [0]) }),
            ("index 9 is out of range", { try $0.insertChildCollections([d], at: [9]) }),
            ("index 3 is out of range: the folder holds 3 collections", { try $0.moveChildCollections(at: [3], to: 0) }),
            ("destination 3 is out of range", { try $0.moveChildCollections(at: [0], to: 3) }),
            ("index 5 is out of range", { try $0.removeChildCollections(at: [5]) }),
        ]
        for (message, body) in cases {
            let events = try library.allEvents().count
            let error = try #require(throws: PhotoLibraryError.self) {
                try library.performChangesAndWait { try body(try $0.collectionListChangeRequest(for: folder)) }
            }
            #expect(error.code == .operationInterrupted && error.message.contains(message), "\(error.message)")
            #expect(try library.allEvents().count == events, "nothing recorded")
        }
    }

    @Test("concurrent reorders of one folder on two devices: each collection's place is a register; every device reads one order")
    func concurrentReorders() throws {
        let directory = try TemporaryDirectory()
        let clock = TestClock()
        let anna = try makeLibrary(directory, device: "anna-phone", seed: 1, clock: clock)
        let ben = try makeLibrary(directory, device: "ben-tablet", seed: 2, clock: clock)
        let folder = try anna.performChangesAndWait { changes in
            let folder = try changes.createCollectionList(title: "Travel")
            for title in ["A", "B", "C"] {
                try folder.addChildCollections([try changes.createAlbum(title: title).placeholderForCreatedAssetCollection])
            }
            return folder.localIdentifier
        }
        let shared = try anna.allEvents()
        try ben.applyRemoteEvents(shared)
        // Offline: anna moves A to the end; ben, later, moves C to the front and inserts a new album D at 1.
        try anna.performChangesAndWait { try $0.collectionListChangeRequest(for: folder).moveChildCollections(at: [0], to: 2) }
        clock.advance(milliseconds: 10)
        try ben.performChangesAndWait { changes in
            let request = try changes.collectionListChangeRequest(for: folder)
            try request.moveChildCollections(at: [2], to: 0)
            try request.insertChildCollections([try changes.createAlbum(title: "D").placeholderForCreatedAssetCollection], at: [1])
        }
        let fromAnna = try anna.allEvents().filter { event in !shared.contains { $0.id == event.id } }
        let fromBen = try ben.allEvents().filter { event in !shared.contains { $0.id == event.id } }
        try ben.applyRemoteEvents(fromAnna)
        try anna.applyRemoteEvents(fromBen)
        var orders: [[String]] = []
        for library in [anna, ben] {
            let list = try #require(try library.fetchCollectionLists(withLocalIdentifiers: [folder]).firstObject)
            orders.append(try library.fetchCollections(in: list).map(\.title))
        }
        #expect(orders[0] == orders[1])
        #expect(orders[0] == ["C", "D", "B", "A"], "each device's moves land: C first, D after it, A last")
        #expect(try anna.projectionDump() == ben.projectionDump())
    }

    @Test("position payloads round-trip; an invalid position key does not decode")
    func positionPayloads() throws {
        let change = ChangeEvent.listPositioned(position: "V")
        #expect(try ChangeEvent.decode(type: .collectionListPositioned, version: 2, payload: change.encoded()).0 == change)
        let bad = ChangeEvent.albumPositioned(position: "V0").encoded()
        let error = try #require(throws: PayloadError.self) { try ChangeEvent.decode(type: .albumPositioned, version: 2, payload: bad) }
        #expect(error.message.contains("an invalid position key 'V0'"))
    }
}
