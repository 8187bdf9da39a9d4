import Foundation
import LedgerCore
import MediaSynthesis
import PhotoMedia

// PhotoLedger's main job, end to end, with the real tools: a local sync server, two devices
// that capture photos offline and make conflicting album edits, sync, and converge.
//
// Usage: photoledger-demo [--folder PATH]   (default: ./photoledger-demo-<date>-<time>)

/// One device: its library file and its camera roll folder.
struct Device {
    let name: String
    let person: String
    let library: URL
    let camera: URL
}

/// The demo's steps, in order.
final class Demo {
    let tools: Tools
    let folder: URL
    let anna: Device
    let ben: Device
    /// Photo names by asset identifier, for readable output.
    var names: [String: String] = [:]
    var server: ServerProcess?
    /// The identifiers of the same-named albums that were merged.
    var mergedAlbums: [String] = []

    init(tools: Tools, folder: URL) {
        self.tools = tools
        self.folder = folder
        anna = Device(
            name: "anna-phone", person: "Anna", library: folder.appendingPathComponent("anna-phone/library.sqlite"),
            camera: folder.appendingPathComponent("anna-phone/camera"))
        ben = Device(
            name: "ben-laptop", person: "Ben", library: folder.appendingPathComponent("ben-laptop/library.sqlite"),
            camera: folder.appendingPathComponent("ben-laptop/camera"))
    }

    func run() throws {
        try tools.check()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        print("PhotoLedger demo — every file it makes is in \(folder.path)")
        defer { stopServer() }

        heading("1. Anna and Ben take photos offline, each into an album called \"Trip\"")
        for device in [anna, ben] { try photoledger(device, ["init", "--device", device.name]) }
        let lisbon = Location(latitude: 38.7139, longitude: -9.1334)
        let porto = Location(latitude: 41.1406, longitude: -8.6110)
        try capture(anna, ["tram", "alfama", "belem", "sunset"], at: lisbon, day: 1, seed: 100)
        try capture(ben, ["ribeira", "bridge", "port-cellar"], at: porto, day: 2, seed: 200)
        for device in [anna, ben] { try importCamera(device, album: "Trip") }

        heading("2. A sync server starts; each device gets a token and syncs")
        let serverFolder = folder.appendingPathComponent("server")
        try FileManager.default.createDirectory(at: serverFolder, withIntermediateDirectories: true)
        let server = try ServerProcess(tools: tools, folder: serverFolder)
        self.server = server
        print("photoledger-server listening on \(server.url)")
        let database = serverFolder.appendingPathComponent("server.sqlite").path
        try tools.run("photoledger-server", ["admin", "create-library", "family", "--db", database])
        for device in [anna, ben] {
            let token = try tools.run(
                "photoledger-server",
                ["admin", "issue-token", "--db", database, "--library", "family", "--device", device.name, "--scope", "readWrite"]
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            try photoledger(device, ["remote", "set", "\(server.url)/v1/libraries/family", "--token", token])
            print("\(device.name): remote set to \(server.url)/v1/libraries/family")
        }
        try syncAll()
        let trips = try albums(anna)
        print("After sync both devices have \(trips.count) albums titled \"Trip\" — one made by each device.")

        heading("3. Same-named albums: Anna merges them")
        let tripIDs = trips.map(\.identifier)
        mergedAlbums = tripIDs
        try photoledger(anna, ["album", "merge"] + tripIDs)
        try syncAll()
        let merged = try albums(ben)
        print(
            "Ben now sees \(merged.count) album \"\(merged[0].title)\" with \(merged[0].assets.count) photos; both old identifiers name it."
        )
        let album = merged[0].identifier
        let favoriteBoth = try identifier(of: "alfama"), removed = try identifier(of: "belem"), deletedPhoto = try identifier(of: "bridge")

        heading("4. Offline again, both edit the album and its photos")
        try capture(anna, ["miradouro"], at: lisbon, day: 3, seed: 300)
        try capture(ben, ["livraria"], at: porto, day: 3, seed: 400)
        let annaNew = try importFiles(anna, [anna.camera.appendingPathComponent("miradouro.jpg").path])
        let benNew = try importFiles(ben, [ben.camera.appendingPathComponent("livraria.jpg").path])
        try edit(anna, "renames the album to \"Portugal 2024\"", ["album", "rename", album, "Portugal 2024"])
        try edit(anna, "marks \(name(favoriteBoth)) as a favorite", ["favorite", favoriteBoth])
        try edit(anna, "removes \(name(removed)) from the album", ["album", "remove", album, removed])
        try edit(anna, "puts her new photo \(name(annaNew)) first", ["album", "insert", album, annaNew, "--at", "0"])
        try edit(anna, "deletes \(name(deletedPhoto))", ["delete", deletedPhoto])
        try edit(ben, "renames the album to \"Summer in Portugal\"", ["album", "rename", album, "Summer in Portugal"])
        try edit(ben, "marks \(name(favoriteBoth)) as a favorite", ["favorite", favoriteBoth])
        try edit(ben, "removes \(name(removed)) and adds it back at the end", ["album", "remove", album, removed])
        try photoledger(ben, ["album", "add", album, removed])
        try edit(ben, "puts his new photo \(name(benNew)) first", ["album", "insert", album, benNew, "--at", "0"])
        try edit(ben, "hides \(name(deletedPhoto)), which Anna deleted", ["hide", deletedPhoto])

        heading("5. Both sync")
        try syncAll()

        heading("6. The converged album")
        let annaView = try albums(anna), benView = try albums(ben)
        for (device, view) in [(anna, annaView), (ben, benView)] {
            for album in view {
                print("\(device.name): \"\(album.title)\" — \(album.assets.map(name).joined(separator: ", "))")
            }
        }
        guard annaView == benView else { throw DemoError(description: "the devices did not converge") }
        print("Identical on both devices: yes")

        heading("7. The conflicts and how they were resolved")
        try explain(final: annaView[0], favoriteBoth: favoriteBoth, removed: removed, deletedPhoto: deletedPhoto)

        heading("8. The audit trail of the album (on Ben's device)")
        for line in try photoledger(ben, ["history", album, "--quiet"]).split(separator: "\n") where !line.contains(" position: ") {
            print(readable(String(line), album: album))
        }
        print("(position keys left out; 'photoledger history' shows everything)")
        for photo in [favoriteBoth, deletedPhoto] {
            print("\nThe audit trail of \(name(photo)), leaving out its creation and albums:")
            try printAssetTrail(photo)
        }
        print("")
        for device in [anna, ben] {
            for line in try photoledger(device, ["verify"]).split(separator: "\n") { print("\(device.name): \(line)") }
        }

        heading("9. Live: Ben's laptop watches while Anna changes a photo")
        let watch = try WatchProcess(tools: tools, library: ben.library)
        print("ben: " + (try watch.line(containing: "Watching")))
        let live = try identifier(of: "tram")
        try edit(anna, "marks \(name(live)) as a favorite and syncs", ["favorite", live])
        let sent = Date()
        try photoledger(anna, ["sync", "--quiet"])
        let arrived = try watch.line(containing: "asset \(live) updated by \(anna.name)")
        let after = Date().timeIntervalSince(sent)
        print("ben: " + arrived.replacingOccurrences(of: live, with: name(live)))
        print(
            "It arrived \(Int((after * 1000).rounded())) ms after Anna's sync began: Ben's waiting pull was answered as her push committed."
        )
        let status = watch.interrupt()
        print("ben: Ctrl-C ends the watch (exit status \(status)).")

        heading("10. Done")
        stopServer()
        print("The server stopped. Libraries, photos, server database and log are in \(folder.path)")
    }

    // MARK: Steps

    /// Writes real JPEGs with EXIF dates and places into a device's camera folder.
    func capture(_ device: Device, _ shots: [String], at place: Location, day: Int, seed: UInt64) throws {
        try FileManager.default.createDirectory(at: device.camera, withIntermediateDirectories: true)
        let start = Date(timeIntervalSince1970: 1_717_236_000 + Double(day) * 86_400)  // June 2024
        for (index, shot) in shots.enumerated() {
            let image = RGBImage.scene(width: 320, height: 240, seed: seed + UInt64(index))
            let location = Location(latitude: place.latitude + Double(index) * 0.002, longitude: place.longitude + Double(index) * 0.002)
            let bytes = JPEGEncoder(quality: 80).encode(
                image, creationDate: start.addingTimeInterval(Double(index) * 1800), location: location)
            try Data(bytes).write(to: device.camera.appendingPathComponent("\(shot).jpg"))
        }
        print("\(device.name): took \(shots.count) photo\(shots.count == 1 ? "" : "s") (\(shots.joined(separator: ", ")))")
    }

    func importCamera(_ device: Device, album: String) throws {
        let output = try photoledger(device, ["import", device.camera.path, "--album", album])
        for line in output.split(separator: "\n") { print("\(device.name): \(line)") }
        try learnNames(device)
    }

    /// Imports files and returns the identifier of the first.
    func importFiles(_ device: Device, _ paths: [String]) throws -> String {
        let result = try tools.json(device, ["import"] + paths) as? [String: Any]
        guard let imported = result?["imported"] as? [[String: Any]], let first = imported.first?["localIdentifier"] as? String else {
            throw DemoError(description: "import printed no identifier")
        }
        try learnNames(device)
        return first
    }

    func edit(_ device: Device, _ what: String, _ arguments: [String]) throws {
        try photoledger(device, arguments)
        print("\(device.person) \(what)")
    }

    func syncAll() throws {
        for device in [anna, ben, anna] {
            let output = try photoledger(device, ["sync"]).split(separator: "\n").last.map(String.init) ?? ""
            print("\(device.name): \(output)")
        }
    }

    func explain(final: AlbumView, favoriteBoth: String, removed: String, deletedPhoto: String) throws {
        let assets = try assetStates(ben)
        print("• Same title on both devices: two \"Trip\" albums after the first sync; merging keeps one album with every photo,")
        print("  and changes addressed to either old identifier land in it.")
        let winner = final.title == "Summer in Portugal" ? "Ben's" : "Anna's"
        print(
            "• Rename vs rename: the album is called \"\(final.title)\" — \(winner) rename was later (hybrid logical clock), last writer wins."
        )
        print(
            "• Favorite on both: \(name(favoriteBoth)) is \(assets[favoriteBoth]?.isFavorite == true ? "a favorite once" : "not a favorite"):"
        )
        print("  each property is its own last-writer-wins register, so equal edits agree.")
        let kept = final.assets.contains(removed)
        print("• Remove vs remove-and-add-back: \(name(removed)) is \(kept ? "in" : "not in") the album — Ben's re-add saw one more")
        print("  add/remove than Anna's removal (causal length 3 > 2), so it wins.")
        let front = final.assets.prefix(2).map(name).joined(separator: ", ")
        print("• Concurrent prepends: both new photos are first (\(front)); their order comes from position keys,")
        print("  the same on every device. Every other photo keeps its place.")
        let deleted = assets[deletedPhoto]
        print(
            "• Delete vs edit: \(name(deletedPhoto)) is \(deleted?.isDeleted == true ? "in Recently Deleted" : "not deleted")"
                + " and \(deleted?.isHidden == true ? "hidden" : "not hidden"): the deletion and Ben's edit both")
        print("  apply; recovering the photo brings it back with Ben's change.")
    }

    // MARK: Reading state through the tool

    struct AlbumView: Equatable {
        let identifier: String
        let title: String
        let assets: [String]
    }

    struct AssetState {
        let isFavorite: Bool
        let isHidden: Bool
        let isDeleted: Bool
    }

    func albums(_ device: Device) throws -> [AlbumView] {
        guard let list = try tools.json(device, ["albums"]) as? [[String: Any]] else {
            throw DemoError(description: "albums printed no list")
        }
        return list.map {
            AlbumView(
                identifier: $0["localIdentifier"] as? String ?? "", title: $0["title"] as? String ?? "",
                assets: $0["assetIdentifiers"] as? [String] ?? [])
        }
    }

    func assetStates(_ device: Device) throws -> [String: AssetState] {
        var states: [String: AssetState] = [:]
        for arguments in [["assets"], ["assets", "--deleted"]] {
            for asset in (try tools.json(device, arguments) as? [[String: Any]]) ?? [] {
                guard let id = asset["localIdentifier"] as? String else { continue }
                states[id] = AssetState(
                    isFavorite: asset["isFavorite"] as? Bool ?? false, isHidden: asset["isHidden"] as? Bool ?? false,
                    isDeleted: asset["isDeleted"] as? Bool ?? false)
            }
        }
        return states
    }

    /// Names a device's assets after the camera files they came from, matching SHA-256 hashes.
    func learnNames(_ device: Device) throws {
        guard let assets = try tools.json(device, ["assets"]) as? [[String: Any]] else { return }
        var byHash: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: device.camera.path) {
            let data = try Data(contentsOf: device.camera.appendingPathComponent(file))
            byHash[Demo.sha256(data)] = (file as NSString).deletingPathExtension
        }
        for asset in assets {
            if let id = asset["localIdentifier"] as? String, let hash = asset["sha256"] as? String, let name = byHash[hash] {
                names[id] = name
            }
        }
    }

    func identifier(of photo: String) throws -> String {
        guard let id = names.first(where: { $0.value == photo })?.key else { throw DemoError(description: "no photo named \(photo)") }
        return id
    }

    func name(_ identifier: String) -> String { names[identifier] ?? String(identifier.prefix(8)) }

    /// Prints the changes of an asset's own properties, from `history --json` on Ben's device.
    func printAssetTrail(_ asset: String) throws {
        let events = (try tools.json(ben, ["history", asset]) as? [[String: Any]]) ?? []
        let devices = Dictionary(
            events.map { ($0["eventId"] as? String ?? "", $0["device"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        for event in events {
            guard let type = event["type"] as? String, type.hasPrefix("asset."), type != "asset.created" else { continue }
            print(
                "\(event["timestamp"] as? String ?? "")  \((event["device"] as? String ?? "").padding(12))  \(type.padding(22))  \(name(asset))"
            )
            for change in (event["changes"] as? [[String: Any]]) ?? [] {
                let by = devices[change["by"] as? String ?? ""] ?? "another device"
                let outcome = [
                    "inEffect": "in effect", "replaced": "replaced later by \(by)",
                    "overruled": "overruled by a concurrent change from \(by)",
                ]
                print(
                    "    \(change["field"] as? String ?? ""): \(change["oldValue"] as? String ?? "none") → \(change["newValue"] as? String ?? "none")"
                        + "  (\(outcome[change["outcome"] as? String ?? ""] ?? ""))")
            }
        }
    }

    /// A line of tool output with identifiers replaced by photo and album names.
    func readable(_ line: String, album: String) -> String {
        var text = line.replacingOccurrences(of: album, with: "the album")
        for other in mergedAlbums where other != album { text = text.replacingOccurrences(of: other, with: "the other \"Trip\" album") }
        for (identifier, name) in names { text = text.replacingOccurrences(of: identifier, with: name) }
        return text
    }

    @discardableResult
    func photoledger(_ device: Device, _ arguments: [String]) throws -> String {
        try tools.run("photoledger", arguments + ["--library", device.library.path])
    }

    func heading(_ text: String) { print("\n== \(text)\n") }

    func stopServer() {
        guard let server else { return }
        let log = server.stop()
        try? log.write(to: folder.appendingPathComponent("server/server.log"), atomically: true, encoding: .utf8)
        self.server = nil
    }

    static func sha256(_ data: Data) -> String { Hex.encode(SHA256.hash(Array(data))) }
}

// MARK: main

var folder: URL
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count == 2, arguments[0] == "--folder" {
    folder = URL(fileURLWithPath: arguments[1])
} else if arguments.isEmpty {
    let stamp = Date().ISO8601Format().replacingOccurrences(of: ":", with: "").replacingOccurrences(of: "-", with: "")
    folder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("photoledger-demo-\(stamp.prefix(15))")
} else {
    FileHandle.standardError.write(Data("Error: unexpected arguments\nUsage: photoledger-demo [--folder <path>]\n".utf8))
    exit(64)
}
do {
    try Demo(tools: .beside(), folder: folder).run()
} catch {
    FileHandle.standardError.write(Data("\nThe demo failed: \(error)\nIts files are in \(folder.path)\n".utf8))
    exit(1)
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
