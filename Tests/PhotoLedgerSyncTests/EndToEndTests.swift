import Foundation
import LedgerCore
import TestSupportKit
import Testing

@testable import PhotoLedger
@testable import PhotoLedgerSync

/// The real `photoledger-server` binary on loopback, two real libraries, real libcurl.
@Suite("End to end")
struct EndToEndTests {
    /// Runs a built tool to completion and returns its standard output.
    func run(_ tool: URL, _ arguments: [String]) throws -> String {
        let process = ChildProcess()
        process.executableURL = tool
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SyncError.invalidResponse("\(arguments.first ?? "") failed") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("two devices sync through the server binary and converge; the server stops cleanly")
    func twoDevicesThroughTheBinary() async throws {
        let directory = try TemporaryDirectory()
        let tool = try builtExecutable("photoledger-server")
        let db = directory.file("server.sqlite").path
        _ = try run(tool, ["admin", "create-library", "family", "--db", db])
        let tokens = try ["anna-phone", "ben-tablet"].map {
            try run(tool, ["admin", "issue-token", "--db", db, "--library", "family", "--device", $0, "--scope", "readWrite"])
        }
        let server = ChildProcess()
        server.executableURL = tool
        server.arguments = ["serve", "--db", db, "--blobs", directory.file("blobs").path, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate() } }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        let address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(address.hasPrefix("listening on http://127.0.0.1:"))
        let origin = String(address.dropFirst("listening on ".count))

        var devices: [PhotoLibrary] = []
        for (index, name) in ["anna-phone", "ben-tablet"].enumerated() {
            var options = PhotoLibrary.Options()
            options.preauthorized = true
            let library = try PhotoLibrary(url: directory.file("\(name).sqlite"), device: DeviceID(name), options: options)
            try SyncRemote(libraryURL: "\(origin)/v1/libraries/family", token: tokens[index]).save(in: library)
            devices.append(library)
        }
        let (anna, ben) = (devices[0], devices[1])
        let album = try anna.performChangesAndWait { changes in
            let album = try changes.createAlbum(title: "Holidays")
            try album.addAssets([try changes.createAsset(from: samplePhoto(1)).placeholderForCreatedAsset])
            return album.localIdentifier
        }
        let benPhoto = try ben.performChangesAndWait { try $0.createAsset(from: samplePhoto(2)).placeholderForCreatedAsset.localIdentifier }
        for library in [anna, ben, anna] { try await SyncEngine(library: library).sync() }
        try ben.performChangesAndWait { try $0.albumChangeRequest(for: album).insertAssets([benPhoto], at: [0]) }
        for library in [ben, anna] { try await SyncEngine(library: library).sync() }
        let annaOrder = try anna.fetchAssets(in: anna.fetchAssetCollections(withLocalIdentifiers: [album])[0]).map(\.localIdentifier)
        let benOrder = try ben.fetchAssets(in: ben.fetchAssetCollections(withLocalIdentifiers: [album])[0]).map(\.localIdentifier)
        #expect(annaOrder == benOrder && annaOrder.first == benPhoto && annaOrder.count == 2)
        #expect(try anna.requestImageData(for: benPhoto) == samplePhoto(2))

        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 0, "SIGTERM stops the server gracefully")
        let stopped = try await #require(throws: SyncError.self) { try await SyncEngine(library: anna).sync() }
        #expect(stopped.description.contains("is the server running"))
    }
}
