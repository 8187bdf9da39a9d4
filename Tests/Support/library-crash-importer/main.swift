import Foundation
import PhotoLedger
import PhotoMedia

// library-crash-importer LIBRARY_PATH
// Creates an asset from a generated photo inside a change block, prints "stored" once the photo's
// bytes are in the resource store, then waits inside the block (before its commit) until it is
// killed. The crash tests SIGKILL it there.
let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: library-crash-importer LIBRARY_PATH\n".utf8))
    exit(64)
}
do {
    var options = PhotoLibrary.Options()
    options.preauthorized = true
    let library = try PhotoLibrary(url: URL(fileURLWithPath: arguments[1]), device: "crash-device", options: options)
    let photo = SyntheticMedia.sample(.jpeg, width: 64, height: 48, seed: UInt64(getpid()))
    try library.performChangesAndWait { changes in
        _ = try changes.createAsset(from: Data(photo))
        print("stored")
        fflush(nil)
        while true { sleep(1) }
    }
} catch {
    FileHandle.standardError.write(Data("library-crash-importer: \(error)\n".utf8))
    exit(1)
}
