// swift-tools-version:6.0
// The reading-history core: an event-sourced domain (ReadingEvents), pure folds into the views
// reading apps show (Projections), a durable LMDB event log with persisted views (EventStoreLMDB),
// and the `replay` command that rebuilds, verifies, audits and exports.
import PackageDescription

let package = Package(
    name: "ReadingHistory",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "ReadingEvents", targets: ["ReadingEvents"]),
        .library(name: "Projections", targets: ["Projections"]),
        .library(name: "EventStoreLMDB", targets: ["EventStoreLMDB"]),
        .library(name: "ReadingImport", targets: ["ReadingImport"]),
        .executable(name: "replay", targets: ["replay"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/swiftcsv/SwiftCSV.git", from: "0.10.0"),
    ],
    targets: [
        // System library: LMDB from the OS (Debian: liblmdb-dev, which ships lmdb.pc).
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
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
                "CLMDB",
                "Projections",
                "ReadingEvents",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Other apps' histories (Goodreads, StoryGraph, KOReader) as validated events.
        .target(
            name: "ReadingImport",
            dependencies: ["ReadingEvents", "CSQLite", .product(name: "SwiftCSV", package: "SwiftCSV")]
        ),
        .executableTarget(
            name: "replay",
            dependencies: [
                "EventStoreLMDB",
                "Projections",
                "ReadingEvents",
                "ReadingImport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A small child-process helper for the multi-process and crash tests of the store.
        .executableTarget(
            name: "store-test-helper",
            dependencies: ["EventStoreLMDB"],
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
            dependencies: ["Projections", "ReadingEvents"]
        ),
        .testTarget(
            name: "ReplayCLITests",
            dependencies: ["replay", "EventStoreLMDB", "ReadingEvents"]
        ),
        .testTarget(
            name: "ReadingImportTests",
            dependencies: ["ReadingImport", "EventStoreLMDB", "Projections", "ReadingEvents", "CSQLite"]
        ),
        .testTarget(
            name: "EventStoreLMDBTests",
            dependencies: ["EventStoreLMDB", "store-test-helper"]
        ),
    ]
)
