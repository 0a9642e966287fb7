import ArgumentParser
import Foundation
import Logging
import SyncServerCore

/// `reading-sync-server`: the sync server of the reading history. Flags override the environment.
@main
struct ReadingSyncServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reading-sync-server",
        abstract: "Sync server for reading histories and reading partners, over PostgreSQL.")

    @Option(name: .customLong("database-url"),
            help: "postgres://user:password@host:port/database (default: $DATABASE_URL)")
    var databaseURL: String?

    @Option(help: "Address to listen on (default: $SYNC_HOST or 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (default: $SYNC_PORT or 8080).")
    var port: Int?

    @Option(name: .customLong("replica-url"),
            help: "A streaming read replica of the database that pulls read from (default: $REPLICA_URL, else none).")
    var replicaURL: String?

    @Option(name: .customLong("pool-size"), help: "PostgreSQL connections (default: $SYNC_DB_POOL or 20).")
    var poolSize: Int?

    @Option(name: .customLong("max-batch-events"), help: "Events per push (default 1000).")
    var maxBatchEvents: Int = 1000

    @Option(name: .customLong("max-body-bytes"), help: "Bytes per request body (default 4 MiB).")
    var maxBodyBytes: Int = 4 * 1024 * 1024

    @Option(name: .customLong("max-connections"),
            help: "Open connections at most; lowered to the open-file limit less the pool and 64 (default 4096).")
    var maxConnections: Int = 4096

    @Option(name: .customLong("header-timeout"), help: "Seconds to send a request's header (default 10).")
    var headerTimeout: Double = 10

    @Option(name: .customLong("body-timeout"), help: "Seconds to send a request's body after its header (default 60).")
    var bodyTimeout: Double = 60

    @Option(name: .customLong("idle-timeout"), help: "Seconds a kept-alive connection may wait for its next request (default 60).")
    var idleTimeout: Double = 60

    @Option(name: .customLong("acquire-timeout"),
            help: "Seconds a request waits for a database connection while the pool hands none out before answering 503 (default 2).")
    var acquireTimeout: Double = 2

    @Option(name: .customLong("max-queue-wait"),
            help: "Seconds a request waits its turn for a database connection while the pool keeps handing them out, before answering 503 (default 30).")
    var maxQueueWait: Double = 30

    @Option(name: .customLong("statement-timeout"),
            help: "Seconds a request's database work may take once it has a connection before answering 503 (default 10).")
    var statementTimeout: Double = 10

    @Option(name: .customLong("max-replica-lag"),
            help: "Seconds the read replica may replay behind before pulls read from the primary (default 30).")
    var maxReplicaLag: Double = 30

    @Option(name: .customLong("max-anonymous-body-bytes"),
            help: "Bytes of a request body without a token (a first registration; default 8192).")
    var maxAnonymousBodyBytes: Int = 8 * 1024

    @Option(name: .customLong("max-body-memory"),
            help: "Bytes of request bodies held at once, all requests together; past it 503 (default 256 MiB).")
    var maxBodyMemory: Int = 256 * 1024 * 1024

    @Option(name: .customLong("trusted-proxy"),
            help: "A proxy (load balancer) address whose X-Forwarded-For names the client; repeatable (default: $SYNC_TRUSTED_PROXIES, comma-separated, else none).")
    var trustedProxies: [String] = []

    @Option(name: .customLong("rate-window"), help: "Seconds of the rate limits' window (default 60).")
    var rateWindow: Double = 60

    @Option(name: .customLong("registrations-per-address"),
            help: "First registrations (no token) per client address a minute; past it 429 (default 30).")
    var registrationsPerAddress: Int = 30

    @Option(name: .customLong("max-live-invites"), help: "Invites of a reader neither used nor expired; past it 409 (default 20).")
    var maxLiveInvites: Int = 20

    @Option(name: .customLong("max-partners"), help: "Partners of a reader; accepting an invite past it is 409 (default 100).")
    var maxPartners: Int = 100

    @Option(name: .customLong("max-streams-per-device"), help: "Open event streams of one device; the oldest ends past it (default 4).")
    var maxStreamsPerDevice: Int = 4

    @Option(name: .customLong("max-streams-per-reader"), help: "Open event streams of one reader (default 32).")
    var maxStreamsPerReader: Int = 32

    @Option(name: .customLong("max-streams-per-address"), help: "Open event streams from one client address (default 1024).")
    var maxStreamsPerAddress: Int = 1024

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error (default: $LOG_LEVEL or info).")
    var logLevel: String?

    @Flag(name: .customLong("exit-when-stdin-closes"),
          help: "Exit when standard input reaches its end (a parent that dies takes the server with it; for tests).")
    var exitWhenStdinCloses = false

    func run() async throws {
        if exitWhenStdinCloses {
            Thread.detachNewThread {
                var byte: UInt8 = 0
                while true {
                    let count = read(0, &byte, 1)
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { Foundation.exit(0) }
                }
            }
        }
        let environment = ProcessInfo.processInfo.environment
        guard let url = databaseURL ?? environment["DATABASE_URL"] else {
            throw ValidationError("--database-url or DATABASE_URL is required")
        }
        let levelText = logLevel ?? environment["LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: levelText) else {
            throw ValidationError("--log-level: \"\(levelText)\" is not a log level")
        }
        let portValue = try port ?? environment["SYNC_PORT"].map { text in
            guard let value = Int(text) else { throw ValidationError("SYNC_PORT: \"\(text)\" is not a port") }
            return value
        } ?? 8080
        guard (0...65535).contains(portValue) else { throw ValidationError("--port: must be 0 ... 65535") }
        let pool = poolSize ?? environment["SYNC_DB_POOL"].flatMap(Int.init) ?? 20
        guard pool >= 2 else { throw ValidationError("--pool-size: at least 2 (one connection listens)") }
        for (name, value) in [("--header-timeout", headerTimeout), ("--body-timeout", bodyTimeout),
                              ("--idle-timeout", idleTimeout), ("--acquire-timeout", acquireTimeout), ("--max-queue-wait", maxQueueWait),
                              ("--statement-timeout", statementTimeout), ("--max-replica-lag", maxReplicaLag),
                              ("--rate-window", rateWindow)] {
            guard value > 0, value <= 86_400 else { throw ValidationError("\(name): must be more than 0 and at most 86400 seconds") }
        }
        guard maxConnections >= 8 else { throw ValidationError("--max-connections: at least 8") }
        for (name, value) in [("--max-streams-per-device", maxStreamsPerDevice), ("--max-streams-per-reader", maxStreamsPerReader),
                              ("--max-streams-per-address", maxStreamsPerAddress), ("--max-anonymous-body-bytes", maxAnonymousBodyBytes),
                              ("--registrations-per-address", registrationsPerAddress), ("--max-live-invites", maxLiveInvites),
                              ("--max-partners", maxPartners)] {
            guard value >= 1 else { throw ValidationError("\(name): at least 1") }
        }
        // A pull cursor holds the reader and each partner (52 bytes each at most): 300 partners
        // keep it within the 16 KiB a cursor may have.
        guard maxPartners <= 300 else { throw ValidationError("--max-partners: at most 300 (the pull cursor's limit)") }
        guard maxBodyMemory >= maxBodyBytes else { throw ValidationError("--max-body-memory: at least --max-body-bytes") }
        var limits = ServerLimits()
        limits.maxBatchEvents = maxBatchEvents
        limits.maxBodyBytes = maxBodyBytes
        limits.acquireTimeout = .milliseconds(Int64(acquireTimeout * 1000))
        limits.maxQueueWait = .milliseconds(Int64(maxQueueWait * 1000))
        limits.maxAnonymousBodyBytes = maxAnonymousBodyBytes
        limits.maxBodyMemory = maxBodyMemory
        limits.registrationsPerAddress = registrationsPerAddress
        limits.maxLiveInvites = maxLiveInvites
        limits.maxPartners = maxPartners
        limits.rateWindow = .milliseconds(Int64(rateWindow * 1000))
        limits.trustedProxies = Set(trustedProxies.isEmpty
            ? (environment["SYNC_TRUSTED_PROXIES"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            : trustedProxies).subtracting([""])
        var connections = ConnectionPolicy()
        connections.maxConnections = maxConnections
        connections.headerTimeout = .milliseconds(Int64(headerTimeout * 1000))
        connections.bodyTimeout = .milliseconds(Int64(bodyTimeout * 1000))
        connections.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        var logger = Logger(label: "reading-sync-server")
        logger.logLevel = level
        var configuration = ServerConfiguration(databaseURL: url, host: host ?? environment["SYNC_HOST"] ?? "127.0.0.1",
                                                port: portValue, poolSize: pool, limits: limits, connections: connections)
        configuration.replicaURL = replicaURL ?? environment["REPLICA_URL"]
        configuration.statementTimeout = .milliseconds(Int64(statementTimeout * 1000))
        configuration.maxReplicaLag = .milliseconds(Int64(maxReplicaLag * 1000))
        configuration.streams.perDevice = maxStreamsPerDevice
        configuration.streams.perReader = maxStreamsPerReader
        configuration.streams.perAddress = maxStreamsPerAddress
        try await SyncServer.run(configuration, logger: logger)
    }
}


