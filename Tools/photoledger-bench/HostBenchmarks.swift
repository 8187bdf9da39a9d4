import Foundation
import Glibc
import MediaSynthesis
import PhotoLedger

/// The C interface's cost: the same change blocks through libphotoledger's C functions (loaded
/// with dlopen from beside this executable, called through C function pointers as a host
/// language calls them) and from Swift, alternated so both see the same disk and cache.
struct HostBenchmarks {
    let quick: Bool

    private typealias Open =
        @convention(c) (
            UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafeMutablePointer<OpaquePointer?>?,
            UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        ) -> Int32
    private typealias Close = @convention(c) (OpaquePointer?) -> Void
    private typealias Save =
        @convention(c) (
            OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UInt32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
            UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        ) -> Int32
    private typealias SetFlag =
        @convention(c) (
            OpaquePointer?, UnsafePointer<UnsafePointer<CChar>?>?, Int, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        ) -> Int32
    private typealias StringFree = @convention(c) (UnsafeMutablePointer<CChar>?) -> Void

    /// photoledger_open_options of photoledger.h.
    private struct OpenOptions {
        var size = MemoryLayout<OpenOptions>.stride  // sizeof, padding included
        var device: UnsafePointer<CChar>?
        var preauthorized: Int32 = 1
    }

    /// The functions of libphotoledger the figures call.
    private struct Interface {
        let open: Open, close: Close, save: Save, setFavorite: SetFlag, free: StringFree

        init() throws {
            let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let path = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("libPhotoLedgerC.so").path
            guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
                throw BenchmarkError(
                    "cannot load \(path): \(String(cString: dlerror())); build the PhotoLedgerC product (swift build -c release)")
            }
            func symbol<T>(_ name: String, as type: T.Type) throws -> T {
                guard let address = dlsym(handle, name) else { throw BenchmarkError("\(path) has no \(name)") }
                return unsafeBitCast(address, to: type)
            }
            open = try symbol("photoledger_open", as: Open.self)
            close = try symbol("photoledger_close", as: Close.self)
            save = try symbol("photoledger_save_to_album", as: Save.self)
            setFavorite = try symbol("photoledger_set_favorite", as: SetFlag.self)
            free = try symbol("photoledger_string_free", as: StringFree.self)
        }

        /// Fails with the message of a call that did not return PHOTOLEDGER_OK.
        func check(_ status: Int32, _ message: UnsafeMutablePointer<CChar>?, _ call: String) throws {
            guard status == 0 else {
                defer { free(message) }
                throw BenchmarkError("\(call) failed (\(status)): \(message.map { String(cString: $0) } ?? "")")
            }
        }
    }

    func run() throws -> [Figure] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let c = try Interface()
        let rounds = quick ? 200 : 1000

        // Two libraries, one driven through C and one from Swift, each with one asset to flip.
        var options = PhotoLibrary.Options()
        options.preauthorized = true
        let swift = try PhotoLibrary(url: directory.appendingPathComponent("swift.sqlite"), device: "bench-swift", options: options)
        var handle: OpaquePointer?
        var message: UnsafeMutablePointer<CChar>?
        let cPath = directory.appendingPathComponent("c.sqlite").path
        try "bench-c".withCString { device in
            var openOptions = OpenOptions(device: device)
            try c.check(c.open(cPath, &openOptions, &handle, &message), message, "photoledger_open")
        }
        defer { c.close(handle) }
        let photos = try (0..<(rounds + 1) * 2).map { index in
            let url = directory.appendingPathComponent("photo-\(index).jpg")
            try Data(SyntheticMedia.sample(.jpeg, width: 64, height: 48, seed: UInt64(index))).write(to: url)
            return url
        }

        // The seed flow's block: save a photo file first into an album, found by title.
        var cSave: [Double] = [], swiftSave: [Double] = []
        var cAsset = "", swiftAsset = ""
        for round in 0...rounds {
            let (cPhoto, swiftPhoto) = (photos[2 * round], photos[2 * round + 1])
            func saveThroughC() throws -> Double {
                var identifier: UnsafeMutablePointer<CChar>?
                let time = try seconds {
                    try c.check(c.save(handle, cPhoto.path, "Camera", 0, &identifier, &message), message, "photoledger_save_to_album")
                }
                cAsset = String(cString: identifier!)
                c.free(identifier)
                return time
            }
            func saveFromSwift() throws -> Double {
                try seconds {
                    let staged = swift.stageImport(fromFilesAt: [swiftPhoto])
                    swiftAsset = try swift.performChangesAndWait { changes in
                        guard let created = try changes.importAssets(staged)[0].placeholderForCreatedAsset else {
                            throw BenchmarkError("not saved")
                        }
                        let album = try changes.album(titled: "Camera") ?? changes.createAlbum(title: "Camera")
                        try album.insertAssets([created], at: [0])
                        return created.localIdentifier
                    }
                }
            }
            // Which goes first alternates, so neither always follows the other's background work.
            let (cTime, swiftTime): (Double, Double)
            if round % 2 == 0 {
                cTime = try saveThroughC()
                swiftTime = try saveFromSwift()
            } else {
                swiftTime = try saveFromSwift()
                cTime = try saveThroughC()
            }
            if round > 0 {  // the first round creates the albums
                cSave.append(cTime * 1000)
                swiftSave.append(swiftTime * 1000)
            }
        }

        // A small block: flip one asset's favorite flag.
        var cFavorite: [Double] = [], swiftFavorite: [Double] = []
        try cAsset.withCString { asset in
            var assets: [UnsafePointer<CChar>?] = [asset]
            for round in 0..<rounds {
                let favorite = round % 2 == 0
                func flipThroughC() throws {
                    cFavorite.append(
                        try seconds {
                            try c.check(c.setFavorite(handle, &assets, 1, favorite ? 1 : 0, &message), message, "photoledger_set_favorite")
                        } * 1e6)
                }
                func flipFromSwift() throws {
                    swiftFavorite.append(
                        try seconds {
                            try swift.performChangesAndWait { try $0.assetChangeRequest(for: swiftAsset).setFavorite(favorite) }
                        } * 1e6)
                }
                if round % 4 < 2 {
                    try flipThroughC()
                    try flipFromSwift()
                } else {
                    try flipFromSwift()
                    try flipThroughC()
                }
            }
        }
        // Target: the C call at most 10 % slower than Swift at p50 (baseline ÷ value ≥ 1 / 1.1).
        return [
            Figure(
                name: "host.c.save.p50", value: median(cSave), unit: "ms", baseline: median(swiftSave), higherIsBetter: false,
                target: 1 / 1.1,
                note: "photoledger_save_to_album (a 64×48 JPEG first into an album by title) beside the same block from Swift"),
            Figure(
                name: "host.c.favorite.p50", value: median(cFavorite), unit: "µs", baseline: median(swiftFavorite), higherIsBetter: false,
                target: 1 / 1.1, note: "photoledger_set_favorite on one asset beside the same change block from Swift"),
        ]
    }
}
