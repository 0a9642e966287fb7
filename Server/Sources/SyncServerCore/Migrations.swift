import Foundation
import Logging
import PostgresNIO
import ReadingEvents

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
        /// A query run after the statements that answers one count, and the words logged (as a
        /// warning, `migration N: <count> <words>`) when the count is not 0.
        public var report: (query: String, words: String)? = nil
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
            // A database written before this migration may repeat a (reader, replica, sequence)
            // (a copied store's events): the earliest row of each is kept, the others are moved
            // to `refused_events` with the reason, so that the unique index can be built.
            """
            CREATE TABLE refused_events (LIKE events INCLUDING DEFAULTS,
                                         refused_at timestamptz NOT NULL DEFAULT now(), reason text NOT NULL)
            """,
            """
            WITH repeated AS (
                SELECT reader_id, arrival FROM (
                    SELECT reader_id, arrival,
                           row_number() OVER (PARTITION BY reader_id, replica, sequence ORDER BY arrival) AS n
                    FROM events WHERE replica IS NOT NULL) numbered
                WHERE n > 1
            ), moved AS (
                DELETE FROM events e USING repeated r WHERE e.reader_id = r.reader_id AND e.arrival = r.arrival
                RETURNING e.*
            )
            INSERT INTO refused_events
            SELECT moved.*, now(), 'its replica and sequence already name an earlier event of the reader (migration 2)' FROM moved
            """,
            // (reader, replica, sequence) is unique: the push checks it in its statement, and this
            // index catches a concurrent push. With the partition key first, it can exist on a
            // partitioned table.
            """
            CREATE UNIQUE INDEX events_reader_origin ON events (reader_id, replica, sequence)
            WHERE replica IS NOT NULL
            """,
            // The push's look-up of a (replica, sequence) among the pusher's and its partners' events.
            "CREATE INDEX events_origin ON events (replica, sequence) WHERE replica IS NOT NULL",
        ], report: ("SELECT count(*) FROM refused_events",
                    "events aside into refused_events (their replica and sequence repeat an earlier event of the reader)")),
        Migration(version: 3, name: "aliases: another replica's copy of an event is a row of its own", statements: [
            // An alias row is another replica's copy of an event the reader already holds (the same
            // event ID and the same fact, another origin: the same export imported on two devices).
            // Pulls send it like any row, so every device's vector moves over that replica's numbers.
            "ALTER TABLE events ADD COLUMN alias boolean NOT NULL DEFAULT false",
            // SHA-256 of the record with its origin and recordedAt left out (``factDigest(of:)``):
            // two copies are one event when their IDs and facts are equal. Filled at start for
            // rows stored before this migration (``Migrations/fillFacts(on:logger:)``).
            "ALTER TABLE events ADD COLUMN fact bytea",
            // One row per event ID and reader, besides its aliases.
            "ALTER TABLE events DROP CONSTRAINT events_reader_id_event_id_key",
            "CREATE UNIQUE INDEX events_reader_event ON events (reader_id, event_id) WHERE NOT alias",
            "CREATE INDEX events_reader_event_copies ON events (reader_id, event_id)",
        ]),
        Migration(version: 4, name: "events hash-partitioned by reader", statements: [
            // Declarative hash partitions by reader: a reader's rows live in one partition, every
            // request's query names its reader, and each partition is a table of its own for
            // vacuum and indexes. The rows are copied into the new table in this transaction (a
            // lock on `events` for the copy's time) and the old table is dropped.
            "ALTER TABLE events RENAME TO events_unpartitioned",
            """
            CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
                                 PRIMARY KEY (reader_id, arrival),
                                 FOREIGN KEY (reader_id) REFERENCES readers (reader_id))
            PARTITION BY HASH (reader_id)
            """,
            "CREATE TABLE events_p0 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 0)",
            "CREATE TABLE events_p1 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 1)",
            "CREATE TABLE events_p2 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 2)",
            "CREATE TABLE events_p3 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 3)",
            "CREATE TABLE events_p4 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 4)",
            "CREATE TABLE events_p5 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 5)",
            "CREATE TABLE events_p6 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 6)",
            "CREATE TABLE events_p7 PARTITION OF events FOR VALUES WITH (MODULUS 8, REMAINDER 7)",
            "INSERT INTO events SELECT * FROM events_unpartitioned",
            "DROP TABLE events_unpartitioned",
            // The indexes of migrations 1 to 3, now on every partition (a unique index holds the
            // partition key, so it can exist on a partitioned table).
            "CREATE INDEX events_event_id ON events (event_id)",
            "CREATE UNIQUE INDEX events_reader_origin ON events (reader_id, replica, sequence) WHERE replica IS NOT NULL",
            "CREATE INDEX events_origin ON events (replica, sequence) WHERE replica IS NOT NULL",
            "CREATE UNIQUE INDEX events_reader_event ON events (reader_id, event_id) WHERE NOT alias",
            "CREATE INDEX events_reader_event_copies ON events (reader_id, event_id)",
        ]),
        Migration(version: 5, name: "a replica belongs to the reader that first used it", statements: [
            // Origins belong to the reader whose device issued them: the push claims a new
            // replica for the pusher and refuses another reader's (issue 39: a partner pushed its
            // own events under the victim's next sequences, and the victim's were refused).
            """
            CREATE TABLE replica_owners (
                replica    uuid PRIMARY KEY,
                reader_id  uuid NOT NULL REFERENCES readers (reader_id),
                claimed_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            // The owner of each replica already stored: the reader of its earliest row.
            """
            INSERT INTO replica_owners (replica, reader_id, claimed_at)
            SELECT DISTINCT ON (replica) replica, reader_id, received_at FROM events
            WHERE replica IS NOT NULL ORDER BY replica, received_at, arrival
            """,
            // Rows of another reader under an owned replica (what a partner pushed under the
            // victim's replica before this migration) are moved aside, so that they never reach
            // the owner's devices, which would refuse them.
            "ALTER TABLE refused_events ADD COLUMN IF NOT EXISTS alias boolean, ADD COLUMN IF NOT EXISTS fact bytea",
            """
            WITH moved AS (
                DELETE FROM events e USING replica_owners o WHERE e.replica = o.replica AND e.reader_id <> o.reader_id
                RETURNING e.*
            )
            INSERT INTO refused_events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group,
                                        record, received_at, alias, fact, refused_at, reason)
            SELECT reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group,
                   record, received_at, alias, fact, now(), 'its replica belongs to another reader (migration 5)' FROM moved
            """,
        ], report: ("SELECT count(*) FROM refused_events WHERE reason LIKE '%(migration 5)'",
                    "events of another reader's replica aside into refused_events")),
        Migration(version: 6, name: "each event ID belongs to one reader", statements: [
            // Event IDs are global, and no unique index across readers can exist on the
            // reader-partitioned `events`: two readers pushing one new ID at once both stored it
            // (each push's snapshot missed the other). `event_ids` holds each ID once, with the
            // reader that stored it first: a push claims a new ID by inserting it, and of two
            // concurrent claims the primary key refuses the second (23505: its push runs again
            // and answers 409 `event_id_taken`). The push's look-up of an ID is one probe of
            // this primary key instead of one descent of the event-ID index of every partition.
            // No foreign key to `readers`: readers are never deleted, and the check would cost
            // every pushed row a trigger.
            """
            CREATE TABLE event_ids (
                event_id  uuid PRIMARY KEY,
                reader_id uuid NOT NULL
            )
            """,
            // The owner of each ID already stored: the reader of its earliest row. An ID that two
            // readers already hold (that race, before this migration) stays with both: the push
            // looks for the pusher's own rows first, so each still pushes its copies, and no
            // third reader can take it.
            """
            INSERT INTO event_ids (event_id, reader_id)
            SELECT DISTINCT ON (event_id) event_id, reader_id FROM events ORDER BY event_id, received_at, reader_id, arrival
            """,
            // The push no longer looks IDs up across readers: one index fewer to write per row.
            "DROP INDEX events_event_id",
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
                if let (query, words) = migration.report {
                    for try await count in try await connection.query(PostgresQuery(unsafeSQL: query), logger: logger).decode(Int64.self)
                    where count > 0 {
                        logger.warning("migration \(migration.version): moved \(count) \(words)")
                    }
                }
                now.append(migration.version)
            }
            return now
        }
    }

    /// Fills `events.fact` for the rows stored before migration 3, a page at a time (a record
    /// that does not decode gets the digest of its bytes, which matches no other copy). Several
    /// servers starting at once write the same values.
    public static func fillFacts(on client: PostgresClient, logger: Logger) async throws {
        var filled = 0
        while true {
            let rows = try await client.query(
                "SELECT reader_id, arrival, record FROM events WHERE fact IS NULL LIMIT 1000", logger: logger)
            var readers: [UUID] = [], arrivals: [Int64] = [], facts: [ByteBuffer] = []
            for try await (reader, arrival, record) in rows.decode((UUID, Int64, ByteBuffer).self) {
                let bytes = Array(record.readableBytesView)
                let digest = (try? BinaryEventCodec.decodeRecord(bytes)).map(factDigest(of:)) ?? Tokens.sha256(bytes)
                readers.append(reader); arrivals.append(arrival); facts.append(ByteBuffer(bytes: digest))
            }
            guard !readers.isEmpty else { break }
            try await client.query("""
                UPDATE events e SET fact = u.f
                FROM unnest(\(readers)::uuid[], \(arrivals)::bigint[], \(facts)::bytea[]) AS u(r, a, f)
                WHERE e.reader_id = u.r AND e.arrival = u.a
                """, logger: logger)
            filled += readers.count
        }
        if filled > 0 { logger.info("filled the fact digest of \(filled) events stored before aliases") }
    }
}

/// The identity of an event's fact: SHA-256 of its record with the origin, position, stream
/// version and recordedAt left out, so that two copies of one event (the same export imported on
/// two devices) have the same digest exactly when
/// ``ReadingEvents/EventEnvelope/recordsSameFact(as:)`` holds for two decoded envelopes.
func factDigest(of envelope: EventEnvelope) -> [UInt8] {
    var fact = envelope
    fact.origin = nil
    fact.position = 0
    fact.streamVersion = 0
    fact.recordedAt = fact.occurredAt
    return Tokens.sha256(BinaryEventCodec.encodeRecord(fact))
}
