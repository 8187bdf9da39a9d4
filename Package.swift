// swift-tools-version: 6.0
import PackageDescription

/// Every target compiles in the Swift 6 language mode; tools and tests are checked with
/// `-warnings-as-errors` by `Tools/test.sh`.
let package = Package(
    name: "PhotoLedger",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LedgerCore", targets: ["LedgerCore"]),
        .library(name: "LedgerStore", targets: ["LedgerStore"]),
        .library(name: "LedgerCrypto", targets: ["LedgerCrypto"]),
        .library(name: "PhotoLedger", targets: ["PhotoLedger"]),
        .library(name: "PhotoLedgerSync", targets: ["PhotoLedgerSync"]),
        .library(name: "PhotoLedgerServer", targets: ["PhotoLedgerServer"]),
        .library(name: "PhotoLedgerWeb", targets: ["PhotoLedgerWeb"]),
        .executable(name: "photoledger-server", targets: ["photoledger-server"]),
        .executable(name: "photoledger-bench", targets: ["photoledger-bench"]),
        .executable(name: "photoledger-demo", targets: ["photoledger-demo"]),
        .executable(name: "photoledger", targets: ["photoledger"]),
        // libphotoledger for C, C++, Lua, Python and other hosts: the C interface of photoledger.h
        // (`Sources/CPhotoLedger/include`). SwiftPM names the file libPhotoLedgerC.so; its SONAME is
        // libphotoledger.so.1, the name to install it under (the README says how).
        .library(name: "PhotoLedgerC", type: .dynamic, targets: ["PhotoLedgerC"]),
    ],
    targets: [
        // C libraries from Debian packages.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CExif", pkgConfig: "libexif", providers: [.apt(["libexif-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev"])]),

        // libvips' loaders behind one non-variadic call per file, and its shared error buffer
        // behind a lock, so that media validation can run on several threads; libjpeg itself for
        // the JPEG structure check (header and tables, first rows).
        .target(name: "CMediaDecoding", dependencies: ["CVips"], linkerSettings: [.linkedLibrary("jpeg")]),

        // EXIF blocks that libexif cannot read whole (past 64 KB), re-encoded by libexiv2.
        .target(name: "CExifRecovery", linkerSettings: [.linkedLibrary("exiv2")]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // One Linux call Swift's Glibc module does not import (sync_file_range, a GNU extension).
        .target(name: "CFileSync"),

        // libmicrohttpd's own error pages (400, 413, 414, 431, 505) answered with the protocol's
        // JSON error body: a wrapper of MHD_queue_response that the dynamic linker binds first.
        .target(name: "CHTTPLayerErrors", dependencies: ["CMicroHTTPD"]),

        // A SHA-256 whose state is plain bytes, stored with an unfinished upload and continued
        // when the upload resumes (OpenSSL's low-level interface; EVP cannot export its state).
        .target(name: "CResumableDigest", linkerSettings: [.linkedLibrary("crypto")]),

        // The shared vocabulary, below everything else and free of SQLite: events and their
        // canonical bytes, the hash chain, the hybrid logical clock, identifiers, SHA-256, byte
        // coding, event type names, locations.
        .target(name: "LedgerCore", dependencies: ["CCrypto"]),

        // End-to-end encryption's primitives over libsodium: AEAD, sealed boxes, keyed hashes, key
        // derivation, streamed encryption of files, recovery keys.
        .target(name: "LedgerCrypto", dependencies: ["LedgerCore", "CSodium"]),

        // The store: SQLite connection, migrations, append-only event log.
        .target(
            name: "LedgerStore",
            dependencies: ["LedgerCore", "CSQLite"],
            plugins: ["EmbedMigrations"]
        ),

        // Media: format recognition and validation by decoding (libvips for stills, FFmpeg for
        // videos), metadata (EXIF via libexif, movie metadata via FFmpeg), and the
        // content-addressed resource store.
        .target(name: "PhotoMedia", dependencies: ["LedgerCore", "CExif", "CExifRecovery", "CFileSync", "CMediaDecoding", "CFFmpeg"]),

        // The public library API: PhotoKit semantics over the event log.
        .target(name: "PhotoLedger", dependencies: ["LedgerCore", "LedgerCrypto", "LedgerStore", "PhotoMedia"]),

        // The sync wire format shared by client and server (JSON bodies, gzip).
        .target(name: "SyncProtocol", dependencies: ["LedgerCore", "CZlib", "CZstd"]),

        // HTTP client transport over libcurl, behind a small protocol.
        .target(name: "SyncTransport", dependencies: ["CCurl", "CFileSync", "LedgerCore"]),

        // The sync server: HTTP over libmicrohttpd, server stores (embedded SQLite, PostgreSQL over
        // libpq), auth, blobs (a directory, or S3-compatible storage over libcurl).
        .target(
            name: "PhotoLedgerServer",
            dependencies: [
                "LedgerCore", "LedgerStore", "SyncProtocol", "CMicroHTTPD", "CHTTPLayerErrors", "CResumableDigest", "CZlib", "CPostgres",
                "CCurl",
                "CFileSync",
            ]
        ),

        // The sync engine: push, pull, blobs, conflict handling through the library's fold.
        .target(
            name: "PhotoLedgerSync",
            dependencies: ["LedgerCore", "LedgerCrypto", "LedgerStore", "PhotoLedger", "SyncProtocol", "SyncTransport"]),

        // The JSON shapes of the listings (assets, albums, history, sync, status) that the CLI prints
        // and the C interface returns, so every tool and binding gives the same bytes.
        .target(name: "PhotoLedgerJSON", dependencies: ["PhotoLedger", "PhotoLedgerSync"]),

        // The C interface: photoledger.h (its version, status names and string release in C) and
        // its functions, written in Swift over the public API of PhotoLedger and PhotoLedgerSync.
        // Only the functions of the header are exported, each with the ELF symbol version of the
        // linker version script (PHOTOLEDGER_1.0).
        .target(name: "CPhotoLedger", exclude: ["photoledger.map"]),
        .target(
            name: "PhotoLedgerC",
            dependencies: ["CPhotoLedger", "PhotoLedger", "PhotoLedgerSync", "PhotoLedgerJSON"],
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/CPhotoLedger/photoledger.map",
                    "-Xlinker", "-soname=libphotoledger.so.1",
                    // Swift code cannot be unloaded (the runtime keeps its type metadata), and the
                    // library's threads may still be ending: dlclose leaves it loaded.
                    "-Xlinker", "-z", "-Xlinker", "nodelete",
                ])
            ]
        ),

        // The web view of a library: pages, JSON, images and live changes over libmicrohttpd, for a
        // browser on this machine (or elsewhere, with a password).
        .target(
            name: "PhotoLedgerWeb",
            dependencies: ["LedgerCore", "PhotoLedger", "PhotoLedgerJSON", "PhotoLedgerSync", "SyncProtocol", "CMicroHTTPD"]),

        .executableTarget(
            name: "photoledger-server",
            dependencies: ["CommandLineParsing", "LedgerCore", "LedgerStore", "PhotoLedgerServer", "SyncProtocol"],
            path: "Tools/photoledger-server"
        ),

        // Build-time embedding of Migrations/**.sql into LedgerStore, so installed tools need no source tree.
        .executableTarget(name: "embed-migrations", path: "Tools/embed-migrations"),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["embed-migrations"],
            path: "Tools/EmbedMigrationsPlugin"
        ),

        // Benchmarks and their C baseline.
        .target(
            name: "CBaseline",
            dependencies: ["CSQLite", "CCrypto"],
            path: "Tools/CBaseline",
            linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("crypto")]
        ),
        .executableTarget(
            name: "photoledger-bench",
            dependencies: [
                "CommandLineParsing", "LedgerCore", "LedgerStore", "CBaseline", "PhotoMedia", "MediaSynthesis", "PhotoLedger",
                "PhotoLedgerServer",
                "PhotoLedgerSync", "SyncProtocol", "SyncTransport", "WebDriverClient",
            ],
            path: "Tools/photoledger-bench"
        ),

        // Command-line parsing shared by the tools (swift-argument-parser's conventions).
        .target(name: "CommandLineParsing", path: "Tools/CommandLineParsing"),
        .executableTarget(
            name: "photoledger",
            dependencies: [
                "CommandLineParsing", "LedgerCore", "PhotoLedger", "PhotoLedgerJSON", "PhotoMedia", "PhotoLedgerSync", "PhotoLedgerWeb",
            ],
            path: "Tools/photoledger"
        ),
        .executableTarget(
            name: "photoledger-demo",
            dependencies: ["LedgerCore", "PhotoMedia", "MediaSynthesis"],
            path: "Tools/photoledger-demo"
        ),

        // Media made by the real encoders (libvips in process, the ffmpeg tool for movies) for
        // tests, the demo and the benchmarks; no shipped library links it.
        .target(name: "CMediaEncoding", dependencies: ["CVips", "CMediaDecoding"], path: "Tests/Support/CMediaEncoding"),
        .target(
            name: "MediaSynthesis",
            dependencies: ["LedgerCore", "PhotoMedia", "CExif", "CMediaEncoding", "TestSupportKit"],
            path: "Tests/Support/MediaSynthesis"
        ),

        // Test support: a process that appends until killed (crash-safety tests).
        .executableTarget(
            name: "ledger-crash-writer",
            dependencies: ["LedgerCore", "LedgerStore"],
            path: "Tests/Support/ledger-crash-writer"
        ),
        .executableTarget(
            name: "library-crash-importer",
            dependencies: ["LedgerCore", "PhotoLedger", "PhotoMedia", "MediaSynthesis"],
            path: "Tests/Support/library-crash-importer"
        ),
        // A WebDriver client of chromedriver (headless Chromium) for the web view's tests and benchmarks.
        .target(name: "WebDriverClient", dependencies: ["SyncTransport", "TestSupportKit"], path: "Tests/Support/WebDriverClient"),
        // Test helpers every test target shares: temporary directories, how much randomized testing to run.
        .target(name: "TestSupportKit", dependencies: ["CChildProcess"], path: "Tests/Support/TestSupportKit"),
        // Child processes started with posix_spawn, every other descriptor closed in the child.
        .target(name: "CChildProcess", path: "Tests/Support/CChildProcess"),
        .target(
            name: "PhotoLedgerTestSupport",
            dependencies: ["LedgerCore", "PhotoLedger", "PhotoMedia", "MediaSynthesis", "TestSupportKit"],
            path: "Tests/Support/PhotoLedgerTestSupport"
        ),
        .testTarget(
            name: "LedgerStoreTests",
            dependencies: ["LedgerCore", "LedgerStore", "TestSupportKit", "ledger-crash-writer"]
        ),
        .testTarget(
            name: "PhotoMediaTests",
            dependencies: ["LedgerCore", "PhotoMedia", "MediaSynthesis", "CExif", "CMediaDecoding", "TestSupportKit"]),
        .testTarget(
            name: "PhotoLedgerTests",
            dependencies: [
                "LedgerCore", "LedgerCrypto", "LedgerStore", "PhotoLedger", "PhotoMedia", "MediaSynthesis", "PhotoLedgerTestSupport",
                "TestSupportKit", "library-crash-importer",
            ]
        ),
        .testTarget(name: "SyncProtocolTests", dependencies: ["LedgerCore", "SyncProtocol"]),
        .testTarget(name: "SyncTransportTests", dependencies: ["LedgerCore", "SyncTransport", "TestSupportKit"]),
        .testTarget(name: "CommandLineParsingTests", dependencies: ["CommandLineParsing"]),
        .testTarget(
            name: "PhotoLedgerServerTests",
            dependencies: ["LedgerCore", "LedgerStore", "PhotoLedgerServer", "SyncProtocol", "TestSupportKit", "photoledger-server"]
        ),
        .testTarget(
            name: "PhotoLedgerWebTests",
            dependencies: [
                "LedgerCore", "PhotoLedger", "PhotoLedgerWeb", "MediaSynthesis", "PhotoLedgerTestSupport", "SyncTransport",
                "TestSupportKit", "WebDriverClient", "photoledger",
            ]
        ),
        .testTarget(
            name: "ToolTests",
            dependencies: [
                "photoledger", "photoledger-server", "photoledger-demo", "LedgerCore", "LedgerStore", "PhotoMedia", "MediaSynthesis",
                "PhotoLedger",
                "CPhotoLedger", "TestSupportKit",
            ],
            // The C, C++, Lua and Python programs the host-language tests compile and run.
            exclude: ["HostLanguages"]
        ),
        .testTarget(
            name: "PhotoLedgerSyncTests",
            dependencies: [
                "LedgerCore", "LedgerCrypto", "LedgerStore", "PhotoLedger", "PhotoLedgerJSON", "PhotoLedgerSync", "PhotoLedgerServer",
                "PhotoMedia",
                "PhotoLedgerTestSupport", "SyncProtocol", "SyncTransport", "MediaSynthesis", "TestSupportKit", "photoledger-server",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The fuzz targets of Tools/Fuzz: libFuzzer executables over what a peer or a user's file can
// feed the code. Tools/fuzz.sh declares them (PHOTOLEDGER_FUZZ=1) and builds them with
// AddressSanitizer and libFuzzer's coverage in a build directory of their own; the package's own
// builds and tests neither build nor need them.
if Context.environment["PHOTOLEDGER_FUZZ"] == "1" {
    func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(name: "fuzz-\(name)", dependencies: ["FuzzSupport", "LedgerCore"] + dependencies, path: "Tools/Fuzz/\(name)")
    }
    package.targets += [
        .target(name: "CFuzzing", path: "Tools/Fuzz/CFuzzing"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzing", "LedgerCore"], path: "Tools/Fuzz/FuzzSupport"),
        fuzzer("payloads", ["PhotoLedger"]),
        fuzzer("canonical", []),
        fuzzer("pages", ["SyncProtocol"]),
        fuzzer("json", ["SyncProtocol"]),
        fuzzer("compression", ["SyncProtocol"]),
        fuzzer("headers", ["SyncProtocol", "SyncTransport"]),
        fuzzer("keys", ["LedgerCrypto", "SyncProtocol"]),
        .target(
            name: "MediaFuzzSupport", dependencies: ["FuzzSupport", "LedgerCore", "PhotoLedger", "PhotoMedia"],
            path: "Tools/Fuzz/MediaFuzzSupport"),
        fuzzer("metadata", ["MediaFuzzSupport", "PhotoMedia", "MediaSynthesis"]),
        fuzzer("media", ["MediaFuzzSupport", "PhotoMedia", "MediaSynthesis"]),
    ]
}
