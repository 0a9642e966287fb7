import Foundation
import ReadingEvents
import SyncServerCore
import Testing

@Suite("Migrations on databases of older schemas", needsPostgres)
struct MigrationTests {
    /// A database of the first schema (migration 1 only) whose events repeat a (reader, replica,
    /// sequence), as servers before migration 2 stored them: the server still starts; the unique
    /// index is built after the earliest row of each is kept and the others are moved aside into
    /// `refused_events`, with a log line.
    @Test func migration2KeepsTheEarliestRowOfARepeatedOriginAndMovesTheOthersAside() throws {
        let cluster = try PostgresCluster.shared.get()
        let database = try cluster.createDatabase()
        try cluster.psql("""
            CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
                                            applied_at timestamptz NOT NULL DEFAULT now());
            \(Migrations.all[0].statements.joined(separator: ";\n"));
            INSERT INTO schema_migrations (version, name) VALUES (1, 'readers, devices, events, partners, invites, share settings')
            """, database: database)
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 5, seed: 91)
        // Arrivals 1 ... 5; arrival 4 repeats arrival 2's origin with another event, arrival 5 repeats it again.
        var rows = events
        rows[3].origin = events[1].origin
        rows[4].origin = events[1].origin
        let values = rows.enumerated().map { index, event in
            let record = Data(BinaryEventCodec.encodeRecord(event)).base64EncodedString()
            return "('\(reader.uuidString)', \(index + 1), '\(event.eventID)', '\(event.origin!.replica)', \(event.origin!.sequence), "
                + "\(event.origin!.stamp), now(), '\(event.type.tag)', 'progress', decode('\(record)', 'base64'))"
        }
        try cluster.psql("""
            INSERT INTO readers (reader_id, last_arrival) VALUES ('\(reader.uuidString)', 5);
            INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record)
            VALUES \(values.joined(separator: ",\n"))
            """, database: database)

        let server = try ServerProcess.start(databaseURL: cluster.url(database: database))
        defer { server.stop() }
        #expect(try cluster.psql("SELECT string_agg(arrival::text, ',' ORDER BY arrival) FROM events", database: database) == "1,2,3")
        #expect(try cluster.psql("SELECT string_agg(event_id::text, ',' ORDER BY arrival) FROM refused_events", database: database)
                == "\(events[3].eventID),\(events[4].eventID)")
        #expect(try cluster.psql("SELECT max(version) FROM schema_migrations", database: database) == "\(Migrations.all.last!.version)")
        #expect(server.log.contains("moved 2 events aside"), "\(server.log)")
        // Migration 3's fact digests are filled for the rows stored before it.
        #expect(try cluster.psql("SELECT count(*) FROM events WHERE fact IS NULL", database: database) == "0")
        // The index exists now: another row under that origin is refused by PostgreSQL itself.
        #expect(throws: CommandError.self) {
            try cluster.psql("""
                INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record)
                SELECT reader_id, 6, gen_random_uuid(), replica, sequence, stamp, occurred_at, type, share_group, record
                FROM events WHERE arrival = 2
                """, database: database)
        }
    }
}
