// swift-tools-version:6.0
// The sync server of the reading history (issue 13): a stateless HTTP server (Hummingbird 2) over
// PostgreSQL (PostgresNIO) that keeps every reader's event log, keyed by reader, and shares what
// reading partners chose to share. Kept out of the root package, like Benchmarks/, so host apps
// never resolve server dependencies. From the repository root:
//   swift build --package-path Server
//   swift test --package-path Server
//   swift run -c release --package-path Server sync-load
import PackageDescription

let package = Package(
    name: "ReadingSyncServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "reading-sync-server", targets: ["reading-sync-server"]),
        .executable(name: "sync-load", targets: ["sync-load"]),
        .library(name: "SyncServerCore", targets: ["SyncServerCore"]),
    ],
    dependencies: [
        // Named, so the product reference below does not depend on the checkout's directory name.
        .package(name: "ReadingHistory", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // The HTTP parts and parse errors the connection guard sees (already resolved through Hummingbird).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The HTTP client of the tests and the load generator (streams server-sent events).
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // The server: schema migrations, the store of events, devices and partners, the routes.
        .target(
            name: "SyncServerCore",
            dependencies: [
                .product(name: "ReadingEvents", package: "ReadingHistory"),
                .product(name: "SyncWire", package: "ReadingHistory"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("openapi.yaml")]
        ),
        .executableTarget(
            name: "reading-sync-server",
            dependencies: [
                "SyncServerCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The load benchmark: many simulated devices against the real server, beside PostgreSQL's
        // own insert rate for the same rows in the same run.
        .executableTarget(
            name: "sync-load",
            dependencies: [
                .product(name: "DemoHistory", package: "ReadingHistory"),
                .product(name: "ReadingEvents", package: "ReadingHistory"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "reading-sync-server",
                // The `replay` CLI, built beside the tests: the CLI tests run it against the server.
                .product(name: "replay", package: "ReadingHistory"),
                // The migrations' own statements, to build a database of an older schema.
                "SyncServerCore",
                .product(name: "DemoHistory", package: "ReadingHistory"),
                .product(name: "EventStoreLMDB", package: "ReadingHistory"),
                .product(name: "ReadingSync", package: "ReadingHistory"),
                .product(name: "ReadingEvents", package: "ReadingHistory"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                // The route tests: the router driven in process, over the in-memory store.
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "SyncWire", package: "ReadingHistory"),
            ]
        ),
    ]
)
