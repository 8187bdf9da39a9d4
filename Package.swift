// swift-tools-version: 6.0
import PackageDescription

/// Every target compiles in the Swift 6 language mode; tools and tests are checked with
/// `-warnings-as-errors` by `Tools/test.sh`.
let package = Package(
    name: "PhotoLedger",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LedgerStore", targets: ["LedgerStore"]),
        .library(name: "PhotoLedger", targets: ["PhotoLedger"]),
        .library(name: "PhotoLedgerSync", targets: ["PhotoLedgerSync"]),
        .library(name: "PhotoLedgerServer", targets: ["PhotoLedgerServer"]),
        .executable(name: "photoledger-server", targets: ["photoledger-server"]),
        .executable(name: "photoledger-bench", targets: ["photoledger-bench"]),
        .executable(name: "photoledger-demo", targets: ["photoledger-demo"]),
        .executable(name: "photoledger", targets: ["photoledger"]),
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

        // One Linux call Swift's Glibc module does not import (sync_file_range, a GNU extension).
        .target(name: "CFileSync"),

        // The store: SQLite connection, migrations, append-only event log, hybrid logical clock.
        .target(
            name: "LedgerStore",
            dependencies: ["CSQLite", "CCrypto"],
            plugins: ["EmbedMigrations"]
        ),

        // Media: format detection from bytes, metadata (EXIF via libexif, MP4 boxes), the
        // content-addressed resource store, and image/video synthesis for demos and tests.
        .target(name: "PhotoMedia", dependencies: ["LedgerStore", "CExif", "CZlib", "CFileSync"]),

        // The public library API: PhotoKit semantics over the event log.
        .target(name: "PhotoLedger", dependencies: ["LedgerStore", "PhotoMedia"]),

        // The sync wire format shared by client and server (JSON bodies, gzip).
        .target(name: "SyncProtocol", dependencies: ["LedgerStore", "CZlib", "CZstd"]),

        // HTTP client transport over libcurl, behind a small protocol.
        .target(name: "SyncTransport", dependencies: ["CCurl"]),

        // The sync server: HTTP over libmicrohttpd, embedded server store, auth, blobs.
        .target(name: "PhotoLedgerServer", dependencies: ["LedgerStore", "SyncProtocol", "CMicroHTTPD", "CZlib"]),

        // The sync engine: push, pull, blobs, conflict handling through the library's fold.
        .target(name: "PhotoLedgerSync", dependencies: ["PhotoLedger", "SyncProtocol", "SyncTransport"]),

        .executableTarget(
            name: "photoledger-server",
            dependencies: ["PhotoLedgerServer"],
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
            dependencies: ["LedgerStore", "CBaseline", "PhotoMedia", "PhotoLedger", "PhotoLedgerServer", "PhotoLedgerSync", "SyncProtocol", "SyncTransport"],
            path: "Tools/photoledger-bench"
        ),

        // Command-line parsing shared by the tools (swift-argument-parser's conventions).
        .target(name: "CommandLineParsing", path: "Tools/CommandLineParsing"),
        .executableTarget(
            name: "photoledger",
            dependencies: ["CommandLineParsing", "LedgerStore", "PhotoLedger", "PhotoMedia", "PhotoLedgerSync"],
            path: "Tools/photoledger"
        ),
        .executableTarget(
            name: "photoledger-demo",
            dependencies: ["LedgerStore", "PhotoMedia"],
            path: "Tools/photoledger-demo"
        ),

        // Test support: a process that appends until killed (crash-safety tests).
        .executableTarget(
            name: "ledger-crash-writer",
            dependencies: ["LedgerStore"],
            path: "Tests/Support/ledger-crash-writer"
        ),
        .executableTarget(
            name: "library-crash-importer",
            dependencies: ["PhotoLedger", "PhotoMedia"],
            path: "Tests/Support/library-crash-importer"
        ),
        .target(
            name: "PhotoLedgerTestSupport",
            dependencies: ["LedgerStore", "PhotoLedger", "PhotoMedia"],
            path: "Tests/Support/PhotoLedgerTestSupport"
        ),
        .testTarget(
            name: "LedgerStoreTests",
            dependencies: ["LedgerStore", "ledger-crash-writer"]
        ),
        .testTarget(name: "PhotoMediaTests", dependencies: ["PhotoMedia"]),
        .testTarget(name: "PhotoLedgerTests", dependencies: ["PhotoLedger", "PhotoMedia", "PhotoLedgerTestSupport", "library-crash-importer"]),
        .testTarget(name: "SyncProtocolTests", dependencies: ["SyncProtocol"]),
        .testTarget(name: "SyncTransportTests", dependencies: ["SyncTransport"]),
        .testTarget(name: "PhotoLedgerServerTests", dependencies: ["PhotoLedgerServer", "SyncProtocol", "photoledger-server"]),
        .testTarget(name: "ToolTests", dependencies: ["photoledger", "photoledger-server", "photoledger-demo", "LedgerStore", "PhotoMedia"]),
        .testTarget(
            name: "PhotoLedgerSyncTests",
            dependencies: ["PhotoLedgerSync", "PhotoLedgerServer", "PhotoMedia", "PhotoLedgerTestSupport", "photoledger-server"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
