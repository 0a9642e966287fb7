import Foundation
import SyncServerCore

/// A throwaway PostgreSQL cluster: `initdb` into a temporary directory, `pg_ctl start` on a free
/// loopback port with the unix socket in that directory, trust authentication. As root, every
/// PostgreSQL program runs as the `postgres` user (PostgreSQL refuses root) through `runuser`,
/// started in the cluster's directory (never the checkout's, which that user may not enter).
/// Stopped by ``stop()`` or, for the shared cluster, when the test process exits.
///
/// `@unchecked Sendable`: every stored property is a constant set in `init`; the only mutable
/// state is the cluster on disk, driven by the (synchronous) pg_ctl calls.
final class PostgresCluster: @unchecked Sendable {
    let binaries: URL
    let directory: URL
    let port: Int
    private let asPostgresUser: Bool

    var dataDirectory: String { directory.appendingPathComponent("data").path }

    /// The directory of `initdb` and `pg_ctl`: `$PG_BIN`, else the highest /usr/lib/postgresql/*/bin.
    static let binariesDirectory: URL? = {
        let fm = FileManager.default
        if let bin = ProcessInfo.processInfo.environment["PG_BIN"], fm.isExecutableFile(atPath: bin + "/initdb") {
            return URL(fileURLWithPath: bin)
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? fm.contentsOfDirectory(atPath: root)) ?? [])
            .filter { fm.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }
            .sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }
        return versions.last.map { URL(fileURLWithPath: "\(root)/\($0)/bin") }
    }()

    /// Whether the tests can run (PostgreSQL's binaries are installed).
    static var available: Bool { binariesDirectory != nil }

    /// The cluster shared by the tests of this process (each test uses its own database in it).
    static let shared: Result<PostgresCluster, any Error> = Result {
        let cluster = try PostgresCluster()
        atexit { PostgresCluster.stopSharedAtExit() }
        return cluster
    }

    private static func stopSharedAtExit() {
        if case .success(let cluster) = shared { cluster.stop() }
    }

    /// A new cluster; with `primary`, a streaming read replica of it (`pg_basebackup -R`: a copy
    /// of the primary's data that follows its WAL, read-only).
    init(replicaOf primary: PostgresCluster? = nil) throws {
        guard let binaries = Self.binariesDirectory else {
            throw CommandError(command: ["initdb"], status: -1, output: "PostgreSQL binaries not found")
        }
        self.binaries = binaries
        self.directory = try makeTemporaryDirectory("pg")
        self.port = try freeLoopbackPort()
        self.asPostgresUser = geteuid() == 0
        if asPostgresUser {
            // The postgres user must reach the directory through its parent (a 0700 mktemp dir).
            try runCommand(["chmod", "o+x", directory.deletingLastPathComponent().path])
            try runCommand(["chown", "-R", "postgres:postgres", directory.path])
            // Every PostgreSQL program starts in this directory (see `pg`), so the user must enter it.
            let enter = ["runuser", "-u", "postgres", "--", "test", "-x", directory.path]
            guard (try? runCommand(enter)) != nil else {
                throw CommandError(command: enter, status: 1, output: """
                    the postgres user cannot enter \(directory.path): set SYNC_TEST_TMPDIR to a directory \
                    whose every parent it can enter (as .ci/server does)
                    """)
            }
        }
        if let primary {
            try pg("pg_basebackup", ["-h", primary.directory.path, "-p", "\(primary.port)", "-U", "postgres", "-D", dataDirectory,
                                     "-R", "-X", "stream", "--no-sync", "--checkpoint=fast"])
        } else {
            try pg("initdb", ["-D", dataDirectory, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync",
                              "--locale=C"])
        }
        let conf = """

            listen_addresses = '127.0.0.1'
            port = \(port)
            unix_socket_directories = '\(directory.path)'
            fsync = off
            synchronous_commit = on
            max_connections = 300
            shared_buffers = 128MB
            """
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(conf.utf8))
        try handle.close()
        try start()
    }

    /// Runs a PostgreSQL program (as the postgres user when root) in the cluster's directory, one
    /// that user can enter wherever the checkout or the test process's working directory is;
    /// returns its standard output.
    @discardableResult
    func pg(_ tool: String, _ arguments: [String], check: Bool = true) throws -> String {
        let program = binaries.appendingPathComponent(tool).path
        let command = asPostgresUser ? ["runuser", "-u", "postgres", "--", program] + arguments : [program] + arguments
        return try runCommand(command, in: directory.path, check: check)
    }

    func start() throws {
        try pg("pg_ctl", ["-D", dataDirectory, "-l", directory.appendingPathComponent("log").path, "-w", "-t", "60", "start"])
    }

    /// Stops the server (fast: open transactions are rolled back, connections cut).
    func stop(mode: String = "fast") {
        _ = try? pg("pg_ctl", ["-D", dataDirectory, "-w", "-t", "60", "-m", mode, "stop"], check: false)
    }

    /// Runs SQL through psql on `database`, returning unaligned tuples-only output.
    @discardableResult
    func psql(_ sql: String, database: String = "postgres") throws -> String {
        try pg("psql", ["-h", directory.path, "-p", "\(port)", "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1",
                        "-At", "-c", sql]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A new empty database; returns its name.
    func createDatabase() throws -> String {
        let name = "sync_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try psql("CREATE DATABASE \(name)")
        return name
    }

    /// A new database with the server's schema as migrations 1 through `version` left it (as
    /// an older server did), for a test to fill before a server of this build migrates it.
    func createDatabase(migratedThrough version: Int) throws -> String {
        let database = try createDatabase()
        let older = Migrations.all.filter { $0.version <= version }
        try psql("""
            CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
                                            applied_at timestamptz NOT NULL DEFAULT now());
            \(older.flatMap(\.statements).joined(separator: ";\n"));
            INSERT INTO schema_migrations (version, name) VALUES \(older.map { "(\($0.version), 'v\($0.version)')" }.joined(separator: ", "))
            """, database: database)
        return database
    }

    /// The URL the server connects with (TCP on loopback, no TLS).
    func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }
}
