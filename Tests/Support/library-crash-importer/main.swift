import Foundation
import MediaSynthesis
import PhotoLedger
import PhotoMedia

// library-crash-importer LIBRARY_PATH [--batch COUNT]
// Creates an asset from a generated photo inside a change block (with --batch, COUNT assets from
// generated photo files through importAssets), prints "stored" once the bytes are in the resource
// store, then waits inside the block (before its commit) until it is killed. The crash tests
// SIGKILL it there.
let arguments = CommandLine.arguments
guard arguments.count == 2 || (arguments.count == 4 && arguments[2] == "--batch"),
    let count = Int(arguments.count == 4 ? arguments[3] : "1")
else {
    FileHandle.standardError.write(Data("usage: library-crash-importer LIBRARY_PATH [--batch COUNT]\n".utf8))
    exit(64)
}
do {
    var options = PhotoLibrary.Options()
    options.preauthorized = true
    let libraryURL = URL(fileURLWithPath: arguments[1])
    let library = try PhotoLibrary(url: libraryURL, device: "crash-device", options: options)
    if arguments.count == 2 {
        let photo = SyntheticMedia.sample(.jpeg, width: 64, height: 48, seed: UInt64(getpid()))
        try library.performChangesAndWait { changes in
            _ = try changes.createAsset(from: Data(photo))
            print("stored")
            fflush(nil)
            while true { sleep(1) }
        }
    }
    let folder = libraryURL.deletingLastPathComponent().appendingPathComponent("crash-import-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let files = try (0..<count).map { index in
        let url = folder.appendingPathComponent("IMG_\(index).jpg")
        try Data(SyntheticMedia.sample(.jpeg, width: 64, height: 48, seed: UInt64(getpid()) << 16 + UInt64(index))).write(to: url)
        return url
    }
    try library.performChangesAndWait { changes in
        let results = try changes.importAssets(fromFilesAt: files)
        guard results.allSatisfy({ $0.placeholderForCreatedAsset != nil }) else { throw CocoaError(.fileWriteUnknown) }
        print("stored")
        fflush(nil)
        while true { sleep(1) }
    }
} catch {
    FileHandle.standardError.write(Data("library-crash-importer: \(error)\n".utf8))
    exit(1)
}
