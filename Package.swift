// swift-tools-version: 6.0
import PackageDescription

/// Every target compiles in the Swift 6 language mode; tools and tests are checked with
/// `-warnings-as-errors` by `Tools/test.sh`.
let package = Package(
    name: "PhotoLedger",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LedgerStore", targets: ["LedgerStore"]),
        .executable(name: "photoledger-bench", targets: ["photoledger-bench"]),
        .executable(name: "photoledger-demo", targets: ["photoledger-demo"]),
    ],
    targets: [
        // C libraries from Debian packages.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // The store: SQLite connection, migrations, append-only event log, hybrid logical clock.
        .target(
            name: "LedgerStore",
            dependencies: ["CSQLite", "CCrypto"],
            plugins: ["EmbedMigrations"]
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
            dependencies: ["LedgerStore", "CBaseline"],
            path: "Tools/photoledger-bench"
        ),

        .executableTarget(
            name: "photoledger-demo",
            dependencies: ["LedgerStore"],
            path: "Tools/photoledger-demo"
        ),

        // Test support: a process that appends until killed (crash-safety tests).
        .executableTarget(
            name: "ledger-crash-writer",
            dependencies: ["LedgerStore"],
            path: "Tests/Support/ledger-crash-writer"
        ),
        .testTarget(
            name: "LedgerStoreTests",
            dependencies: ["LedgerStore", "ledger-crash-writer"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
