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

    /// A database at migration 3 with the events of two readers: the server starts, the events
    /// table is now hash-partitioned by reader (8 partitions), and every row is still there,
    /// byte for byte, with its indexes (the same origin is still refused by PostgreSQL itself).
    @Test func migration4PartitionsEventsByReaderAndKeepsEveryRow() throws {
        let cluster = try PostgresCluster.shared.get()
        let database = try cluster.createDatabase(migratedThrough: 3)
        var values: [String] = []
        for (seed, reader) in [(UInt64(41), UUID()), (42, UUID())] {
            for (index, event) in syntheticHistory(reader: reader, count: 300, seed: seed).enumerated() {
                let record = Data(BinaryEventCodec.encodeRecord(event)).base64EncodedString()
                values.append("('\(reader.uuidString)', \(index + 1), '\(event.eventID)', '\(event.origin!.replica)', \(event.origin!.sequence), "
                              + "\(event.origin!.stamp), now(), '\(event.type.tag)', 'progress', decode('\(record)', 'base64'))")
            }
            try cluster.psql("INSERT INTO readers (reader_id, last_arrival) VALUES ('\(reader.uuidString)', 300)", database: database)
        }
        // In pieces: one argument of psql holds at most 128 KiB.
        for start in stride(from: 0, to: values.count, by: 100) {
            try cluster.psql("""
                INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record)
                VALUES \(values[start..<min(start + 100, values.count)].joined(separator: ",\n"))
                """, database: database)
        }
        let digest = "SELECT count(*) || ':' || md5(string_agg(reader_id::text || arrival || event_id || encode(record, 'hex'), ',' ORDER BY reader_id, arrival)) FROM events"
        let before = try cluster.psql(digest, database: database)
        #expect(before.hasPrefix("600:"))

        let server = try ServerProcess.start(databaseURL: cluster.url(database: database))
        defer { server.stop() }
        #expect(try cluster.psql("SELECT relkind FROM pg_class WHERE relname = 'events'", database: database) == "p")
        #expect(try cluster.psql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass", database: database) == "8")
        #expect(try cluster.psql(digest, database: database) == before, "every row kept")
        #expect(try cluster.psql("SELECT count(*) FROM ONLY events", database: database) == "0", "the rows live in the partitions")
        #expect(throws: CommandError.self) {
            try cluster.psql("""
                INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record)
                SELECT reader_id, 1000, gen_random_uuid(), replica, sequence, stamp, occurred_at, type, share_group, record
                FROM events WHERE arrival = 2 LIMIT 1
                """, database: database)
        }
    }
}
