import Logging
import PostgresNIO

/// The versioned schema of the sync server, applied in order at start.
///
/// Every table but `schema_migrations` carries `reader_id` first in its primary key, so each can be
/// hash-partitioned by reader (`PARTITION BY HASH (reader_id)`) or distributed by it (Citus
/// `create_distributed_table('events', 'reader_id')`) without changing a query: every query of a
/// request names the reader(s) it reads or writes. `schema_migrations` is a small reference table.
///
/// `Sendable`: a namespace of constants.
public enum Migrations {
    /// One migration: a version, a name, and the statements it runs (in one transaction).
    ///
    /// `Sendable`: a value type of strings.
    public struct Migration: Sendable {
        /// Strictly increasing from 1.
        public let version: Int
        /// A short description.
        public let name: String
        /// The SQL statements, run in order.
        public let statements: [String]
    }

    /// All migrations, oldest first. Never edit a released one; append a new version.
    public static let all: [Migration] = [
        Migration(version: 1, name: "readers, devices, events, partners, invites, share settings", statements: [
            """
            CREATE TABLE readers (
                reader_id    uuid PRIMARY KEY,
                last_arrival bigint NOT NULL DEFAULT 0,
                created_at   timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE devices (
                reader_id  uuid NOT NULL REFERENCES readers (reader_id),
                device_id  uuid NOT NULL,
                token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
                name       text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                revoked_at timestamptz,
                PRIMARY KEY (reader_id, device_id),
                UNIQUE (reader_id, token_hash)
            )
            """,
            """
            CREATE TABLE events (
                reader_id   uuid NOT NULL REFERENCES readers (reader_id),
                arrival     bigint NOT NULL CHECK (arrival > 0),
                event_id    uuid NOT NULL,
                replica     uuid,
                sequence    bigint NOT NULL DEFAULT 0,
                stamp       bigint NOT NULL DEFAULT 0,
                occurred_at timestamptz NOT NULL,
                type        text NOT NULL,
                share_group text NOT NULL,
                record      bytea NOT NULL,
                received_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (reader_id, arrival),
                UNIQUE (reader_id, event_id)
            )
            """,
            // Not unique: a unique index without the partition key cannot exist on a partitioned
            // table. The push checks global uniqueness of event IDs with it.
            "CREATE INDEX events_event_id ON events (event_id)",
            """
            CREATE TABLE partnerships (
                reader_id  uuid NOT NULL REFERENCES readers (reader_id),
                partner_id uuid NOT NULL REFERENCES readers (reader_id),
                since      timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (reader_id, partner_id),
                CHECK (reader_id <> partner_id)
            )
            """,
            """
            CREATE TABLE invites (
                reader_id  uuid NOT NULL REFERENCES readers (reader_id),
                code_hash  bytea NOT NULL CHECK (length(code_hash) = 32),
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                used_by    uuid,
                used_at    timestamptz,
                PRIMARY KEY (reader_id, code_hash)
            )
            """,
            "CREATE INDEX invites_code_hash ON invites (code_hash)",
            """
            CREATE TABLE share_settings (
                reader_id  uuid PRIMARY KEY REFERENCES readers (reader_id),
                groups     text[] NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """,
        ]),
        Migration(version: 2, name: "a replica's sequence names one event", statements: [
            // (reader, replica, sequence) is unique: the push checks it in its statement, and this
            // index catches a concurrent push. With the partition key first, it can exist on a
            // partitioned table.
            """
            CREATE UNIQUE INDEX events_reader_origin ON events (reader_id, replica, sequence)
            WHERE replica IS NOT NULL
            """,
            // The push's look-up of a (replica, sequence) among the pusher's and its partners' events.
            "CREATE INDEX events_origin ON events (replica, sequence) WHERE replica IS NOT NULL",
        ]),
    ]

    /// Applies the migrations not yet recorded in `schema_migrations`, each in the same
    /// transaction as its record, under an advisory lock so that several servers starting at
    /// once apply each migration exactly once. Returns the versions applied now.
    @discardableResult
    public static func apply(on client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(727274113)", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var applied: Set<Int> = []
            for try await version in try await connection.query("SELECT version FROM schema_migrations",
                                                                logger: logger).decode(Int.self) {
                applied.insert(version)
            }
            var now: [Int] = []
            for migration in all where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                logger.info("applied migration \(migration.version): \(migration.name)")
                now.append(migration.version)
            }
            return now
        }
    }
}
