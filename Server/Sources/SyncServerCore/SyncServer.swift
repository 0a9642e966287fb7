import Foundation
import Hummingbird
import Logging
import NIOSSL
import PostgresNIO
import ServiceLifecycle

/// How to start the server.
///
/// `Sendable`: a value type.
public struct ServerConfiguration: Sendable {
    /// `postgres://user:password@host:port/database?sslmode=disable`; `?host=/dir` for a unix socket.
    public var databaseURL: String
    /// The address to listen on.
    public var host: String
    /// The port (0: any free port; the one chosen is printed).
    public var port: Int
    /// Connections in the pool.
    public var poolSize: Int
    /// A streaming read replica of the database that pulls read from (nil: the database).
    public var replicaURL: String?
    /// Request limits.
    public var limits: ServerLimits
    /// Connection time limits and the connection cap.
    public var connections: ConnectionPolicy
    /// Open event streams per device, reader and address.
    public var streams = StreamLimits()
    /// How long a request's database work may take once it has a connection (then 503).
    public var statementTimeout: Duration = .seconds(10)
    /// Pulls read from the primary while the replica replays more than this behind.
    public var maxReplicaLag: Duration = .seconds(30)

    /// Creates a configuration.
    public init(databaseURL: String, host: String = "127.0.0.1", port: Int = 8080, poolSize: Int = 20,
                limits: ServerLimits = ServerLimits(), connections: ConnectionPolicy = ConnectionPolicy()) {
        self.databaseURL = databaseURL
        self.host = host
        self.port = port
        self.poolSize = poolSize
        self.limits = limits
        self.connections = connections
        self.replicaURL = nil
    }
}

/// A database URL that does not parse: names the part and the rule.
///
/// `Sendable`: a value type of strings.
public struct DatabaseURLError: Error, Sendable, CustomStringConvertible {
    /// The part at fault.
    public let field: String
    /// What is wrong.
    public let detail: String
    /// `DATABASE_URL <field>: <detail>`.
    public var description: String { "DATABASE_URL \(field): \(detail)" }
}

/// Parses a libpq-style URL into PostgresNIO's configuration.
public func postgresConfiguration(url text: String) throws -> PostgresClient.Configuration {
    guard let url = URLComponents(string: text) else { throw DatabaseURLError(field: "url", detail: "is not a URL") }
    guard url.scheme == "postgres" || url.scheme == "postgresql" else {
        throw DatabaseURLError(field: "scheme", detail: "must be postgres:// or postgresql://")
    }
    let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
    let user = url.user.flatMap { $0.removingPercentEncoding } ?? query["user"] ?? "postgres"
    let password = url.password.flatMap { $0.removingPercentEncoding } ?? query["password"]
    let database = url.path.isEmpty || url.path == "/" ? nil : String(url.path.dropFirst())
    let port = url.port ?? query["port"].flatMap(Int.init) ?? 5432
    let host = (url.host.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding }) ?? query["host"] ?? "localhost"
    var configuration: PostgresClient.Configuration
    if host.hasPrefix("/") {
        configuration = .init(unixSocketPath: host + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
    } else {
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "prefer" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case let other: throw DatabaseURLError(field: "sslmode", detail: "\"\(other)\" is not disable, prefer or require")
        }
        configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }
    configuration.options.connectTimeout = .seconds(5)
    // No JIT compilation: every statement of a request is short, and PostgreSQL decides to
    // compile from the planner's cost estimate, which is highest exactly when statistics are
    // missing (a fresh deployment before autovacuum's first ANALYZE): compiling the push
    // statement took 300-400 ms there, against a few ms of work (issue 38).
    configuration.options.additionalStartupParameters.append(("jit", "off"))
    return configuration
}

/// The server: builds the router and runs Hummingbird with the PostgreSQL pool and the live
/// listener as services; applies migrations before accepting requests; stops on SIGTERM/SIGINT.
///
/// `Sendable`: a namespace.
public enum SyncServer {
    /// Runs until a termination signal. Prints `reading-sync-server listening on HOST:PORT` once
    /// the socket is bound (the line tests and scripts wait for).
    public static func run(_ configuration: ServerConfiguration, logger: Logger) async throws {
        var postgres = try postgresConfiguration(url: configuration.databaseURL)
        postgres.options.maximumConnections = configuration.poolSize
        let client = PostgresClient(configuration: postgres, backgroundLogger: logger)
        var replica: PostgresClient?
        if let replicaURL = configuration.replicaURL {
            var replicaConfiguration = try postgresConfiguration(url: replicaURL)
            replicaConfiguration.options.maximumConnections = configuration.poolSize
            replica = PostgresClient(configuration: replicaConfiguration, backgroundLogger: logger)
        }
        let store = PostgresSyncStore(client: client, reads: replica, logger: logger, acquireTimeout: configuration.limits.acquireTimeout,
                                      maxQueueWait: configuration.limits.maxQueueWait,
                                      statementTimeout: configuration.statementTimeout, maxReplicaLag: configuration.maxReplicaLag)
        let hub = LiveHub(store: store, limits: configuration.streams)
        let router = Router(context: SyncRequestContext.self)
        SyncRoutes(store: store, hub: hub, limits: configuration.limits, logger: logger).add(to: router)
        let policy = configuration.connections
        let registry = ConnectionRegistry(limit: policy.effectiveMaxConnections(poolSize: configuration.poolSize))
        var app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionGuard(policy: policy, registry: registry)])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port),
                                 serverName: "reading-sync-server"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                // Unbuffered, so a parent process reading a pipe sees it at once.
                FileHandle.standardOutput.write(Data("reading-sync-server listening on \(configuration.host):\(port)\n".utf8))
            },
            logger: logger)
        let stoppedBeforeSchema = StopRecord()
        app.beforeServerStarts {
            do {
                // A stop requested while the migrations wait for PostgreSQL (unreachable, or still
                // starting) ends them at once instead of after the escalation below.
                try await cancelWhenGracefulShutdown {
                    let applied = try await Migrations.apply(on: client, logger: logger)
                    logger.info("schema ready (applied now: \(applied))")
                    try await Migrations.fillFacts(on: client, logger: logger)
                }
            } catch {
                if Task.isShuttingDownGracefully || Task.isCancelled { stoppedBeforeSchema.set() }
                throw error
            }
        }
        // Graceful shutdown runs in reverse order: the listener first (it ends the open event
        // streams, which the HTTP server would otherwise wait for), then the server, then the pool.
        var groupConfiguration = ServiceGroupConfiguration(
            services: [client] + (replica.map { [$0] } ?? []) + [app, LiveListener(store: store, hub: hub, logger: logger)] as [any Service],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // A graceful shutdown that has not ended in time is escalated to task cancellation (a
        // safety net: the migrations, which wait for a PostgreSQL connection and once ignored
        // SIGTERM until the server was killed, now end at the stop itself).
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(10)
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch where stoppedBeforeSchema.isSet {
            // The error is the interrupted wait for a connection (the pool's shutdown, a
            // cancellation): what the operator needs to know is that nothing was served.
        }
        if stoppedBeforeSchema.isSet {
            logger.warning("stopped before the schema was ready (the migrations were waiting for PostgreSQL or rolled back): nothing was served")
        }
    }
}

/// Whether the server was stopped while its migrations still waited for PostgreSQL.
///
/// `@unchecked Sendable`: its one flag is read and written only under `lock`.
final class StopRecord: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    /// Notes the stop.
    func set() { lock.withLock { flag = true } }
    /// Whether it was noted.
    var isSet: Bool { lock.withLock { flag } }
}
