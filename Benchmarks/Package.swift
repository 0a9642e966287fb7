// swift-tools-version:6.1
// Benchmarks of the ReadingHistory package, kept out of the root package so `swift build` and
// `swift test` of the root never resolve, build or run them (GRDB is a dependency of this package
// only). Run in release, from the repository root:
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench reading-benchmarks --quick
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench codec-benchmark
import PackageDescription

let package = Package(
    name: "ReadingHistoryBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        // Named, so the product reference below does not depend on the checkout's directory name.
        .package(name: "ReadingHistory", path: ".."),
        // The SQLite baseline: what a Swift developer would otherwise use.
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "codec-benchmark",
            dependencies: [.product(name: "ReadingEvents", package: "ReadingHistory")]
        ),
        // The store's workloads (P1-P7, bytes on disk) side by side with raw LMDB and SQLite (GRDB),
        // in one run, printed as one table of ratios.
        .executableTarget(
            name: "reading-benchmarks",
            dependencies: [
                .product(name: "DemoHistory", package: "ReadingHistory"),
                .product(name: "EventStoreLMDB", package: "ReadingHistory"),
                .product(name: "Projections", package: "ReadingHistory"),
                .product(name: "ReadingEvents", package: "ReadingHistory"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Top-level benchmark script code: Swift 5 mode spares it the main-actor isolation checks.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
