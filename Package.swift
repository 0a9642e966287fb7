// swift-tools-version:6.1
// The reading-history core: an event-sourced domain (ReadingEvents), pure folds into the views
// reading apps show (Projections), a thin typed LMDB wrapper (LMDB), a durable event log with
// persisted views on top of it (EventStoreLMDB), and the `replay` command that rebuilds,
// verifies, audits and exports.
import PackageDescription

/// Where the vendored LMDB is always used (no system LMDB to link on iOS).
let applePlatforms: [Platform] = [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst]

let package = Package(
    name: "ReadingHistory",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "ReadingEvents", targets: ["ReadingEvents"]),
        .library(name: "Projections", targets: ["Projections"]),
        .library(name: "EventStoreLMDB", targets: ["EventStoreLMDB"]),
        // The seeded demo history, for the Benchmarks package (and any host app's previews).
        .library(name: "DemoHistory", targets: ["DemoHistory"]),
        .library(name: "ReadingReport", targets: ["ReadingReport"]),
        .library(name: "ReadingImport", targets: ["ReadingImport"]),
        .library(name: "ReadingSync", targets: ["ReadingSync"]),
        .library(name: "SyncWire", targets: ["SyncWire"]),
        .executable(name: "replay", targets: ["replay"]),
    ],
    // Which LMDB the LMDB module links on Linux: Debian's liblmdb-dev (the default), or the vendored
    // copy built with POSIX semaphores, the code that runs on Apple platforms (`swift test --traits
    // VendoredLMDB`). Enable one of the two. Apple platforms always build the vendored copy.
    traits: [
        .trait(name: "SystemLMDB", description: "Link Debian's liblmdb-dev on Linux (pkg-config lmdb)."),
        .trait(name: "VendoredLMDB", description: "Build the vendored LMDB with POSIX semaphores on Linux too, as on Apple platforms."),
        .default(enabledTraits: ["SystemLMDB"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/JohnSundell/Plot.git", from: "0.14.0"),
        .package(url: "https://github.com/swiftcsv/SwiftCSV.git", from: "0.10.0"),
    ],
    targets: [
        // System library: LMDB from the OS (Debian: liblmdb-dev, which ships lmdb.pc).
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // LMDB's own C sources (Debian's source package, pinned and patched by
        // Scripts/vendor-lmdb.sh), with POSIX semaphores: the SysV semaphores LMDB could use are
        // forbidden by the app sandbox, and POSIX ones can carry an App Group prefix.
        .target(
            name: "CLMDBVendored",
            exclude: ["LICENSE", "COPYRIGHT", "VENDORED.md"],
            cSettings: [
                .define("MDB_USE_POSIX_SEM", .when(platforms: applePlatforms)),
                .define("MDB_USE_POSIX_SEM", .when(platforms: [.linux], traits: ["VendoredLMDB"])),
            ]
        ),
        // Carries the dependency on CLMDBVendored for Linux with the VendoredLMDB trait: a target
        // may name another only once among its dependencies, and a condition cannot say "Apple
        // platforms, or Linux with the trait".
        .target(
            name: "CLMDBVendoredOnLinux",
            dependencies: ["CLMDBVendored"]
        ),
        // The thin typed LMDB wrapper: environment, transactions, typed databases, codecs, errors.
        // The only importer of CLMDB / CLMDBVendored (the dependency conditions pick one, for the
        // platform built for). A target, not a product: EventStoreLMDB re-exports it.
        .target(
            name: "LMDB",
            dependencies: [
                .target(name: "CLMDBVendored", condition: .when(platforms: applePlatforms)),
                .target(name: "CLMDBVendoredOnLinux", condition: .when(platforms: [.linux], traits: ["VendoredLMDB"])),
                .target(name: "CLMDB", condition: .when(platforms: [.linux], traits: ["SystemLMDB"])),
            ]
        ),
        // System library: SQLite from the OS (Debian: libsqlite3-dev, which ships sqlite3.pc), to
        // read KOReader's statistics database.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(
            name: "ReadingEvents",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["Schema"]
        ),
        .target(
            name: "Projections",
            dependencies: ["ReadingEvents"]
        ),
        .target(
            name: "EventStoreLMDB",
            dependencies: [
                "LMDB",
                "Projections",
                "ReadingEvents",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The seeded, realistic demo history generator (pure: ReadingEvents only), shared by
        // `replay demo`, the tests, the store test helper and the Benchmarks package.
        .target(
            name: "DemoHistory",
            dependencies: ["ReadingEvents"]
        ),
        // The reading report page: self-contained HTML with inline SVG charts, built with Plot.
        // Kept out of the core modules so they stay light.
        .target(
            name: "ReadingReport",
            dependencies: [
                "Projections",
                "ReadingEvents",
                .product(name: "Plot", package: "Plot"),
            ]
        ),
        // Other apps' histories (Goodreads, StoryGraph, KOReader) as validated events.
        .target(
            name: "ReadingImport",
            dependencies: ["ReadingEvents", "CSQLite", .product(name: "SwiftCSV", package: "SwiftCSV")]
        ),
        // The client of the sync server (Server/ package): Foundation's URLSession only, no extra
        // dependency; syncs a ReadingStore through its merge API and manages partners.
        .target(
            name: "ReadingSync",
            dependencies: ["EventStoreLMDB", "ReadingEvents", "SyncWire"]
        ),
        // The sync protocol's JSON bodies and share groups, declared once for the server
        // (Server/ package) and its client (ReadingSync).
        .target(
            name: "SyncWire",
            dependencies: ["ReadingEvents"]
        ),
        .executableTarget(
            name: "replay",
            dependencies: [
                "DemoHistory",
                "EventStoreLMDB",
                "ReadingReport",
                "Projections",
                "ReadingEvents",
                "ReadingImport",
                "ReadingSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Helpers shared by the test targets and the store test helper (temporary directories,
        // directory snapshots, deterministic IDs, finding built executables): Foundation only.
        .target(
            name: "TestSupport",
            path: "Tests/TestSupport"
        ),
        // A small child-process helper for the multi-process and crash tests of the store.
        .executableTarget(
            name: "store-test-helper",
            dependencies: ["DemoHistory", "EventStoreLMDB", "TestSupport"],
            path: "Tests/StoreTestHelper"
        ),
        .testTarget(
            name: "ReadingEventsTests",
            dependencies: [
                "ReadingEvents",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ProjectionsTests",
            // EventStoreLMDB for its record codec (ViewRecordCodec): a few tests check that a fold's
            // views survive their stored form.
            dependencies: ["Projections", "ReadingEvents", "EventStoreLMDB"]
        ),

        .testTarget(
            name: "ReadingReportTests",
            dependencies: ["ReadingReport", "Projections", "ReadingEvents"]
        ),
        .testTarget(
            name: "ReplayCLITests",
            dependencies: ["replay", "EventStoreLMDB", "Projections", "ReadingEvents", "TestSupport", "CSQLite"]
        ),
        .testTarget(
            name: "ReadingImportTests",
            dependencies: ["ReadingImport", "EventStoreLMDB", "Projections", "ReadingEvents", "CSQLite"]
        ),
        .testTarget(
            name: "ReadingSyncTests",
            // The sync client against a loopback HTTP server in the test (the Server package
            // tests it against the real server and PostgreSQL).
            dependencies: ["ReadingSync", "EventStoreLMDB", "ReadingEvents", "SyncWire", "TestSupport"]
        ),
        .testTarget(
            name: "EventStoreLMDBTests",
            dependencies: ["DemoHistory", "EventStoreLMDB", "LMDB", "store-test-helper", "TestSupport"]
        ),
    ]
)
