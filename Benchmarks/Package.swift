// swift-tools-version:6.1
// Benchmarks of the ReadingHistory package, kept out of the root package so `swift test` never
// builds or runs them. Run in release:
//   swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench codec-benchmark
import PackageDescription

let package = Package(
    name: "ReadingHistoryBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        // Named, so the product reference below does not depend on the checkout's directory name.
        .package(name: "ReadingHistory", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "codec-benchmark",
            dependencies: [.product(name: "ReadingEvents", package: "ReadingHistory")]
        ),
    ]
)
