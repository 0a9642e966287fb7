import Foundation
import Logging
import PostgresNIO
@testable import SyncServerCore
import Testing

@Suite("A fresh deployment plans the push with its indexes before any statistics exist", needsPostgres)
struct FreshPlanTests {
    /// The push statement's plan (`EXPLAIN EXECUTE` of ``PushStatement/sql`` prepared as the
    /// server prepares it), with `mode` as `plan_cache_mode`: a batch of `fresh` new events of
    /// `reader` under its replica (sequences after its last), after `repeated` of its stored
    /// events (a push that is retried in part).
    static func pushPlan(_ cluster: PostgresCluster, database: String, reader: UUID, replica: UUID,
                         repeated: Int, fresh: Int, mode: String) throws -> String {
        let total = repeated + fresh
        // EXECUTE takes expressions but no subqueries: the arrays come from functions.
        try cluster.psql("""
            CREATE OR REPLACE FUNCTION plan_ids(r uuid, repeated int, fresh int) RETURNS uuid[] LANGUAGE sql AS $$
                SELECT array_agg(id) FROM (
                    (SELECT event_id AS id FROM events WHERE reader_id = r ORDER BY arrival LIMIT repeated)
                    UNION ALL SELECT md5('fresh' || g)::uuid FROM generate_series(1, fresh) g) s
            $$;
            CREATE OR REPLACE FUNCTION plan_sequences(r uuid, repeated int, fresh int) RETURNS bigint[] LANGUAGE sql AS $$
                SELECT array_agg(q) FROM (
                    (SELECT sequence AS q FROM events WHERE reader_id = r ORDER BY arrival LIMIT repeated)
                    UNION ALL SELECT coalesce((SELECT max(sequence) FROM events WHERE reader_id = r), 0) + g
                              FROM generate_series(1, fresh) g) s
            $$;
            """, database: database)
        let sql = """
            SET plan_cache_mode = \(mode);
            PREPARE push(uuid, uuid[], text[], bigint[], bigint[], timestamptz[], text[], text[], bytea[], bytea[], text, text) AS
            \(PushStatement.sql);
            EXPLAIN EXECUTE push('\(reader)', plan_ids('\(reader)', \(repeated), \(fresh)),
                array_fill('\(replica)'::text, ARRAY[\(total)]), plan_sequences('\(reader)', \(repeated), \(fresh)),
                plan_sequences('\(reader)', \(repeated), \(fresh)), array_fill(now(), ARRAY[\(total)]),
                array_fill('PagesRead'::text, ARRAY[\(total)]), array_fill('progress'::text, ARRAY[\(total)]),
                array_fill('\\x00'::bytea, ARRAY[\(total)]), array_fill('\\x00'::bytea, ARRAY[\(total)]), 'events', 'x')
            """
        return try cluster.psql(sql, database: database)
    }

    /// The lines of `plan` that scan a partition of `events`, or `event_ids`, sequentially.
    static func sequentialScans(_ plan: String) -> [String] {
        plan.split(separator: "\n").map(String.init).filter { $0.contains("Seq Scan on event") }
    }

    /// A freshly migrated database that autovacuum has not analyzed yet (its partitions have no
    /// statistics: autovacuum is off for them here, so that this is the state the test sees), and
    /// the same after its first 20,000 rows: the push's look-ups (`owned`, an ID's owner in
    /// `event_ids`, `known`, the reader's own copies, and `origin_taken`, by origin) are index
    /// scans in either, custom and generic plans alike, and
    /// still after ANALYZE. Before, the custom plan of a 500-event push read every partition
    /// sequentially (`event_id = ANY($2)` with no statistics is estimated at every row): 36-77 ms
    /// per push instead of 4.2 ms until autovacuum's first ANALYZE.
    @Test func thePushUsesTheIndexesBeforeAndAfterStatistics() throws {
        let fixture = try Fixture()
        let (cluster, database) = (fixture.cluster, fixture.database)
        try cluster.psql(((0..<8).map { "ALTER TABLE events_p\($0) SET (autovacuum_enabled = off)" }
                          + ["ALTER TABLE event_ids SET (autovacuum_enabled = off)"]).joined(separator: ";\n"),
                         database: database)
        let reader = UUID(), replica = UUID()
        try cluster.psql("INSERT INTO readers (reader_id) VALUES ('\(reader)')", database: database)
        func expectIndexScans(_ state: String, repeated: Int) throws {
            for mode in ["force_custom_plan", "force_generic_plan"] {
                let plan = try Self.pushPlan(cluster, database: database, reader: reader, replica: replica,
                                             repeated: repeated, fresh: 500 - repeated, mode: mode)
                #expect(plan.contains("event_ids_pkey"), "\(state), \(mode): the owner of an event ID is one probe of its key:\n\(plan)")
                #expect(plan.contains("_reader_id_event_id_idx"), "\(state), \(mode): the reader's own copies by its index:\n\(plan)")
                #expect(Self.sequentialScans(plan).isEmpty, "\(state), \(mode): \(Self.sequentialScans(plan))\n\(plan)")
            }
        }
        let statistics = "SELECT count(*) FROM pg_stats WHERE tablename LIKE 'event%'"
        #expect(try cluster.psql(statistics, database: database) == "0")
        try expectIndexScans("freshly migrated", repeated: 0)

        // 200 readers of 100 events each (the pushing reader among them), spread over the partitions.
        try cluster.psql("""
            INSERT INTO readers (reader_id, last_arrival) SELECT md5('reader' || r)::uuid, 100 FROM generate_series(1, 199) r;
            UPDATE readers SET last_arrival = 100 WHERE reader_id = '\(reader)';
            INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record, fact)
            SELECT k.id, a, md5(k.id::text || a)::uuid,
                   CASE WHEN k.id = '\(reader)' THEN '\(replica)'::uuid ELSE md5('replica' || k.id::text)::uuid END,
                   a, a, now(), 'PagesRead', 'progress', '\\x00'::bytea, '\\x00'::bytea
            FROM (SELECT reader_id AS id FROM readers) k, generate_series(1, 100) a;
            INSERT INTO event_ids (event_id, reader_id) SELECT event_id, reader_id FROM events;
            """, database: database)
        #expect(try cluster.psql("SELECT count(*) FROM events", database: database) == "20000")
        #expect(try cluster.psql(statistics, database: database) == "0", "nothing analyzed the partitions yet")
        try expectIndexScans("20,000 rows, no statistics", repeated: 0)
        try expectIndexScans("20,000 rows, no statistics, a repeated push", repeated: 250)

        try cluster.psql("ANALYZE events; ANALYZE event_ids", database: database)
        #expect(try cluster.psql(statistics, database: database) != "0")
        try expectIndexScans("20,000 rows, analyzed", repeated: 0)
        try expectIndexScans("20,000 rows, analyzed, a repeated push", repeated: 250)
    }

    /// The server's connections run without JIT compilation: it is chosen from the planner's
    /// cost estimate, which is highest exactly when statistics are missing (a push's per-ID
    /// look-up over unanalyzed partitions is estimated at 1/200 of each partition per ID), and
    /// compiling the push statement took 300-400 ms in a cold database against a few ms of work.
    @Test func theServersConnectionsRunWithoutJIT() async throws {
        let cluster = try PostgresCluster.shared.get()
        let database = try cluster.createDatabase()
        let client = PostgresClient(configuration: try postgresConfiguration(url: cluster.url(database: database)),
                                    backgroundLogger: Logger(label: "fresh-plan-test"))
        let setting = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { await client.run(); return nil }
            var value = ""
            for try await row in try await client.query("SHOW jit").decode(String.self) { value = row }
            group.cancelAll()
            return value
        }
        #expect(setting == "off")
    }
}
