import Foundation
import ReadingEvents
import SyncServerCore
import Testing

@Suite("Migration 5: replicas belong to readers", needsPostgres)
struct Migration5Tests {
    /// A database of migration 4 where a partner (Bob) stored his own events under Alice's
    /// replica and her next sequences, as servers before migration 5 took them: the server starts,
    /// Bob's rows are moved aside into `refused_events` (logged), the replica is Alice's, and
    /// Alice's own next events are stored. Before, her push was 409 `origin_taken` for good.
    @Test func migration5MovesAPartnersRowsUnderAnotherReadersReplicaAside() async throws {
        let cluster = try PostgresCluster.shared.get()
        let database = try cluster.createDatabase(migratedThrough: 4)
        let (alice, bob) = (UUID(), UUID())
        let aliceEvents = syntheticHistory(reader: alice, count: 20, seed: 95)
        let replica = aliceEvents[0].origin!.replica
        var bobEvents = syntheticHistory(reader: bob, count: 5, seed: 96)
        for index in bobEvents.indices {
            bobEvents[index].origin = EventOrigin(stamp: bobEvents[index].origin!.stamp, replica: replica, sequence: UInt64(11 + index))
        }
        func row(_ reader: UUID, _ arrival: Int, _ event: EventEnvelope, age: String) -> String {
            let record = Data(BinaryEventCodec.encodeRecord(event)).base64EncodedString()
            return "('\(reader.uuidString)', \(arrival), '\(event.eventID)', '\(event.origin!.replica)', \(event.origin!.sequence), "
                + "\(event.origin!.stamp), now(), '\(event.type.tag)', 'progress', decode('\(record)', 'base64'), now() - interval '\(age)')"
        }
        let values = aliceEvents.prefix(10).enumerated().map { row(alice, $0.offset + 1, $0.element, age: "1 hour") }
            + bobEvents.enumerated().map { row(bob, $0.offset + 1, $0.element, age: "1 minute") }
        let (token, hash) = Tokens.newDeviceToken(reader: alice)
        try cluster.psql("""
            INSERT INTO readers (reader_id, last_arrival) VALUES ('\(alice.uuidString)', 10), ('\(bob.uuidString)', 5);
            INSERT INTO partnerships (reader_id, partner_id) VALUES ('\(alice.uuidString)', '\(bob.uuidString)'),
                                                                    ('\(bob.uuidString)', '\(alice.uuidString)');
            INSERT INTO devices (reader_id, device_id, token_hash, name)
            VALUES ('\(alice.uuidString)', gen_random_uuid(), decode('\(Data(hash).base64EncodedString())', 'base64'), 'phone');
            INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record,
                                received_at)
            VALUES \(values.joined(separator: ",\n"))
            """, database: database)

        let server = try ServerProcess.start(databaseURL: cluster.url(database: database))
        defer { server.stop() }
        let phone = TestDevice(baseURL: server.baseURL, token: token, reader: alice)
        let reply = try await phone.push(Array(aliceEvents[10...]))
        #expect(reply.status == 200, "Alice's next events: \(reply.text)")
        #expect(try cluster.psql("SELECT count(*) FROM events WHERE reader_id = '\(bob.uuidString)'", database: database) == "0")
        #expect(try cluster.psql("SELECT count(*) FROM refused_events WHERE reader_id = '\(bob.uuidString)'", database: database) == "5")
        #expect(try cluster.psql("SELECT reader_id FROM replica_owners WHERE replica = '\(replica)'", database: database)
                == alice.uuidString.lowercased())
        #expect(server.log.contains("moved 5 events of another reader's replica aside"), "\(server.log)")
    }
}
