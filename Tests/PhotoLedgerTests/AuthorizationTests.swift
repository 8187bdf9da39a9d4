import Foundation
import Testing

@testable import PhotoLedger

@Suite("Authorization")
struct AuthorizationTests {
    func library(_ directory: TemporaryDirectory, answer: AuthorizationStatus?) throws -> PhotoLibrary {
        var options = PhotoLibrary.Options()
        options.randomSeed = 1
        if let answer { options.promptHandler = { _ in answer } }
        return try PhotoLibrary(url: directory.file("library.sqlite"), device: "anna-phone", options: options)
    }

    @Test("not determined → request → authorized, persisted across reopen")
    func authorized() async throws {
        let directory = try TemporaryDirectory()
        let first = try library(directory, answer: .authorized)
        #expect(first.authorizationStatus(for: .readWrite) == .notDetermined)
        #expect(await first.requestAuthorization(for: .readWrite) == .authorized)
        let reopened = try library(directory, answer: .denied)
        #expect(await reopened.requestAuthorization(for: .readWrite) == .authorized, "the stored answer is not asked again")
        try reopened.createAssets(1)
        #expect(try reopened.fetchAssets().count == 1)
    }

    @Test("under denied every call fails with accessUserDenied and writes nothing")
    func denied() async throws {
        let directory = try TemporaryDirectory()
        let library = try library(directory, answer: .denied)
        #expect(await library.requestAuthorization(for: .readWrite) == .denied)
        let write = try #require(throws: PhotoLibraryError.self) { try library.createAssets(1) }
        #expect(write.code == .accessUserDenied && write.message.contains("denied"))
        expectError(.accessUserDenied) { try library.fetchAssets() }
        expectError(.accessUserDenied) { try library.fetchAssetCollections(with: .album) }
        #expect(try library.readDatabase { try $0.firstRow("SELECT count(*) FROM events") { $0.int64(0) } } == 0)
    }

    @Test("restricted is reported as accessRestricted without prompting")
    func restricted() async throws {
        let directory = try TemporaryDirectory()
        let library = try library(directory, answer: .authorized)
        try library.setAuthorizationStatus(.restricted, for: .readWrite)
        #expect(await library.requestAuthorization(for: .readWrite) == .restricted)
        expectError(.accessRestricted) { try library.createAssets(1) }
    }

    @Test("without any grant, calls fail and say to request authorization")
    func notDetermined() throws {
        let directory = try TemporaryDirectory()
        let library = try library(directory, answer: nil)
        let error = try #require(throws: PhotoLibraryError.self) { try library.fetchAssets() }
        #expect(error.code == .accessUserDenied && error.message.contains("requestAuthorization"))
    }

    @Test("a readWrite grant also authorizes addOnly, as in PhotoKit, without asking again")
    func readWriteAuthorizesAddOnly() async throws {
        let directory = try TemporaryDirectory()
        let library = try library(directory, answer: .authorized)
        #expect(library.authorizationStatus(for: .addOnly) == .notDetermined)
        #expect(await library.requestAuthorization(for: .readWrite) == .authorized)
        #expect(library.authorizationStatus(for: .addOnly) == .authorized)
        let reopened = try self.library(directory, answer: .denied)
        #expect(await reopened.requestAuthorization(for: .addOnly) == .authorized, "not asked: the readWrite grant covers it")
        #expect(reopened.authorizationStatus(for: .addOnly) == .authorized)
        try library.setAuthorizationStatus(.limited, for: .readWrite)
        #expect(library.authorizationStatus(for: .addOnly) == .authorized)
        try library.setAuthorizationStatus(.denied, for: .readWrite)
        #expect(library.authorizationStatus(for: .addOnly) == .notDetermined)
    }

    @Test("add-only access creates assets but cannot fetch, read or change albums")
    func addOnly() async throws {
        let directory = try TemporaryDirectory()
        let library = try library(directory, answer: .authorized)
        #expect(await library.requestAuthorization(for: .addOnly) == .authorized)
        #expect(library.authorizationStatus(for: .readWrite) == .notDetermined)
        let created = try library.createAssets(2)
        #expect(created.count == 2)
        expectError(.accessUserDenied) { try library.fetchAssets() }
        expectError(.accessUserDenied) { try library.resources(for: created[0]) }
        let album = try #require(throws: PhotoLibraryError.self) {
            try library.performChangesAndWait { _ = try $0.createAlbum(title: "Nope") }
        }
        #expect(album.message.contains("add-only"))
    }

    @Test("limited access sees only the selected assets and the ones it created")
    func limited() async throws {
        let directory = try TemporaryDirectory()
        let setup = try makeLibrary(directory, name: "library.sqlite")
        let existing = try setup.createAssets(3)
        let album = try setup.createAlbum("Trip", assets: existing)
        try setup.setAuthorizationStatus(.notDetermined, for: .readWrite)
        let library = try library(directory, answer: .limited)
        #expect(await library.requestAuthorization(for: .readWrite) == .limited)
        #expect(try library.fetchAssets().isEmpty)
        try library.addToLimitedSelection([existing[1]])
        let mine = try library.createAssets(1)
        #expect(Set(try library.fetchAssets().map(\.localIdentifier)) == Set([existing[1]] + mine))
        #expect(try library.members(album) == [existing[1]])
        expectError(.identifierNotFound) {
            try library.performChangesAndWait { _ = try $0.assetChangeRequest(for: existing[0]) }
        }
    }
}
