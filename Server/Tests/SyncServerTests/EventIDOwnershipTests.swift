import Foundation
import ReadingEvents
import SyncServerCore
import Testing

@Suite("An event ID belongs to one reader", needsPostgres)
struct EventIDOwnershipTests {
    /// A device of `reader`: its token, and the row that registers it (for a database a test
    /// fills before the server ever starts).
    static func device(reader: UUID) -> (token: String, insert: String) {
        let (token, hash) = Tokens.newDeviceToken(reader: reader)
        return (token, """
            INSERT INTO devices (reader_id, device_id, token_hash, name)
            VALUES ('\(reader.uuidString)', gen_random_uuid(), decode('\(Data(hash).base64EncodedString())', 'base64'), 'phone')
            """)
    }

    /// Two readers push one new event ID at once. Another session holds the first reader's row
    /// lock, so the first push starts (its statement's snapshot taken) and waits on it; the second
    /// reader's push of the same ID then commits; the lock goes and the first push goes on with a
    /// snapshot that never saw the second. Before `event_ids` (migration 6) it stored the ID too:
    /// event IDs are global, and no unique index across readers can exist on the
    /// reader-partitioned `events`, so both readers held one ID, and every device that received
    /// both (partners) would quarantine one. Now the first push's claim of the ID is refused by
    /// `event_ids`' primary key, the push runs again and is answered 409 `event_id_taken`, and
    /// nothing of it is stored.
    @Test func twoReadersPushingOneNewIDAtOnceStoreItOnce() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let database = try cluster.createDatabase()
        let server = try ServerProcess.start(databaseURL: cluster.url(database: database), arguments: ["--statement-timeout", "120"])
        defer { server.stop() }
        let (first, second) = (UUID(), UUID())
        let firstPhone = try await TestDevice.registerFirst(server.baseURL, reader: first)
        let secondPhone = try await TestDevice.registerFirst(server.baseURL, reader: second)
        // The same seed gives both histories the same event IDs (the origins differ).
        let firstEvents = syntheticHistory(reader: first, count: 2, seed: 131)
        let secondEvents = syntheticHistory(reader: second, count: 2, seed: 131)
        let contested = firstEvents[1].eventID
        #expect(secondEvents[1].eventID == contested)
        #expect(try await firstPhone.push([firstEvents[0]]).status == 200)

        let lock = try await ReaderRowLock(cluster: cluster, database: database, reader: first)
        defer { try? lock.release() }
        let late = Task {
            try await firstPhone.send(.POST, "/v1/events", json: TestDevice.pushBody([firstEvents[1]]), timeout: .seconds(120))
        }
        try await waitUntil("the first reader's push to wait on its row lock", interval: .milliseconds(50)) {
            try cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '\(database)'") == "1"
        }
        let early = try await secondPhone.push([secondEvents[1]])
        #expect(early.status == 200, "the second reader's push, first to commit: \(early.status) \(early.text.prefix(200))")
        try lock.release()
        let answer = try await late.value
        #expect(answer.status == 409, "the push that lost the race: \(answer.status) \(answer.text.prefix(300))")
        #expect(answer.text.contains("event_id_taken"), "\(answer.text.prefix(300))")

        let id = "\(contested)"
        #expect(try cluster.psql("SELECT string_agg(reader_id::text, ',') FROM events WHERE event_id = '\(id)'", database: database)
                == second.uuidString.lowercased())
        #expect(try cluster.psql("SELECT reader_id FROM event_ids WHERE event_id = '\(id)'", database: database)
                == second.uuidString.lowercased())
        // The loser's devices pull nothing of the contested event; its first event stays.
        let pulled = try await firstPhone.pullAll().events.map(\.envelope.eventID)
        #expect(pulled == [firstEvents[0].eventID])
    }

    /// A database of migration 5 in which two readers already hold the same five event IDs (that
    /// race, before migration 6): the server starts, each stored ID gets one owner (the reader of
    /// its earliest row), the cross-reader event-ID index is gone, both readers still push their
    /// own copies (duplicates, never 409), and a third reader's push of one of those IDs, or of an
    /// ID only one of them holds, is refused 409 `event_id_taken` with nothing stored.
    @Test func migration6GivesEveryStoredIDOneOwnerAndKeepsEarlierDoublesPushable() async throws {
        let cluster = try PostgresCluster.shared.get()
        let database = try cluster.createDatabase(migratedThrough: 5)
        let (alice, bob, carol) = (UUID(), UUID(), UUID())
        let aliceEvents = syntheticHistory(reader: alice, count: 10, seed: 132)
        // Bob's first five IDs are Alice's first five (the same seed), stored after hers.
        let bobEvents = syntheticHistory(reader: bob, count: 5, seed: 132)
            + syntheticHistory(reader: bob, count: 3, seed: 133)
        func row(_ reader: UUID, _ arrival: Int, _ event: EventEnvelope, age: String) -> String {
            let record = Data(BinaryEventCodec.encodeRecord(event)).base64EncodedString()
            return "('\(reader.uuidString)', \(arrival), '\(event.eventID)', '\(event.origin!.replica)', \(event.origin!.sequence), "
                + "\(event.origin!.stamp), now(), '\(event.type.tag)', 'progress', decode('\(record)', 'base64'), now() - interval '\(age)')"
        }
        let values = aliceEvents.enumerated().map { row(alice, $0.offset + 1, $0.element, age: "1 hour") }
            + bobEvents.enumerated().map { row(bob, $0.offset + 1, $0.element, age: "1 minute") }
        let aliceDevice = Self.device(reader: alice)
        let bobDevice = Self.device(reader: bob)
        try cluster.psql("""
            INSERT INTO readers (reader_id, last_arrival) VALUES ('\(alice.uuidString)', 10), ('\(bob.uuidString)', 8);
            \(aliceDevice.insert);
            \(bobDevice.insert);
            INSERT INTO replica_owners (replica, reader_id) VALUES ('\(aliceEvents[0].origin!.replica)', '\(alice.uuidString)'),
                ('\(bobEvents[0].origin!.replica)', '\(bob.uuidString)'), ('\(bobEvents[5].origin!.replica)', '\(bob.uuidString)');
            INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record,
                                received_at)
            VALUES \(values.joined(separator: ",\n"))
            """, database: database)

        let server = try ServerProcess.start(databaseURL: cluster.url(database: database))
        defer { server.stop() }
        #expect(try cluster.psql("SELECT count(*) FROM event_ids", database: database) == "13")
        #expect(try cluster.psql("SELECT count(*) FROM event_ids WHERE reader_id = '\(alice.uuidString)'", database: database) == "10",
                "the five IDs both hold belong to Alice, whose rows arrived first")
        #expect(try cluster.psql("SELECT count(*) FROM pg_indexes WHERE indexname = 'events_event_id'", database: database) == "0")

        let alicePhone = TestDevice(baseURL: server.baseURL, token: aliceDevice.token, reader: alice)
        let bobPhone = TestDevice(baseURL: server.baseURL, token: bobDevice.token, reader: bob)
        for (phone, events) in [(alicePhone, aliceEvents), (bobPhone, bobEvents)] {
            let again = try await phone.push(events)
            #expect(again.status == 200, "a reader's own copies, pushed again: \(again.text.prefix(300))")
        }
        #expect(try cluster.psql("SELECT count(*) FROM events", database: database) == "18", "all duplicates")

        let carolPhone = try await TestDevice.registerFirst(server.baseURL, reader: carol)
        for (name, taken) in [("an ID both hold", bobEvents[0]), ("an ID only Bob holds", bobEvents[6])] {
            var event = syntheticHistory(reader: carol, count: 1, seed: 134)[0]
            event.eventID = taken.eventID
            let refused = try await carolPhone.push([event])
            #expect(refused.status == 409 && refused.text.contains("event_id_taken"), "\(name): \(refused.status) \(refused.text.prefix(300))")
        }
        #expect(try cluster.psql("SELECT count(*) FROM events WHERE reader_id = '\(carol.uuidString)'", database: database) == "0")
        // A new ID of Carol's is hers.
        let own = syntheticHistory(reader: carol, count: 1, seed: 135)[0]
        #expect(try await carolPhone.push([own]).status == 200)
        #expect(try cluster.psql("SELECT reader_id FROM event_ids WHERE event_id = '\(own.eventID)'", database: database)
                == carol.uuidString.lowercased())
    }
}
