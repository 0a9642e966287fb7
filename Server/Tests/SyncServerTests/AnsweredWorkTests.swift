import Foundation
import ReadingEvents
import Testing

@Suite("A request answered 503 does no work later", needsPostgres)
struct AnsweredWorkTests {
    /// Issue 38, found in the 1,000-device load (`Server/README.md`): a push that waited past the
    /// acquire timeout for a pooled connection was answered 503, and still ran when the pool
    /// handed it a connection later: the database stored, and spent its time on, pushes whose
    /// clients had been told 503 and had moved on.
    ///
    /// Here the pool has one connection for requests (`--pool-size 2`: one listens). Another session holds the reader's row lock, so a first
    /// push waits on it holding that connection; the next pushes wait for the connection past the
    /// acquire timeout (1 s) and are answered 503. Then the lock goes, the first push commits, and
    /// a last push comes after whatever waited for the connection: the pushes answered 503 are
    /// not stored. (This form passes without the server's check too: PostgresNIO cancels the
    /// waiting lease. The check closes the race in which the connection comes as the timer
    /// fires; it fails when a waiting lease outlives its answered request.)
    @Test func pushesAnswered503ForWantOfAConnectionStoreNothingLater() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let database = try cluster.createDatabase()
        let server = try ServerProcess.start(databaseURL: cluster.url(database: database),
                                             arguments: ["--pool-size", "2", "--acquire-timeout", "1", "--statement-timeout", "120"])
        defer { server.stop() }
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(server.baseURL, reader: reader)
        let events = syntheticHistory(reader: reader, count: 8, seed: 86)
        #expect(try await phone.push(Array(events[..<2])).status == 200)

        // The lock holder: a psql session that sleeps with the reader's row locked until it is
        // released below (its transaction then rolls back).
        let lock = try await ReaderRowLock(cluster: cluster, database: database, reader: reader)
        defer { try? lock.release() }

        let first = Task { try await phone.send(.POST, "/v1/events", json: TestDevice.pushBody([events[2]]), timeout: .seconds(120)) }
        try await waitUntil("the first push to wait on the row lock", interval: .milliseconds(50)) {
            try cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '\(database)'") == "1"
        }
        var refused: [EventEnvelope] = []
        for event in events[3..<6] {
            let answer = try await phone.send(.POST, "/v1/events", json: TestDevice.pushBody([event]), timeout: .seconds(60))
            #expect(answer.status == 503, "a push while the only connection waits: \(answer.status) \(answer.text.prefix(200))")
            if answer.status == 503 { refused.append(event) }
        }
        try lock.release()
        let firstAnswer = try await first.value
        #expect(firstAnswer.status == 200, "the first push after the lock went: \(firstAnswer.status) \(firstAnswer.text.prefix(200))")
        // The pool serves waiters in order: this push gets the connection after anything that
        // still waited for it.
        #expect(try await phone.push([events[6]]).status == 200)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await phone.push([events[7]]).status == 200)

        let stored = Set(try await phone.pullAll().events.map(\.envelope.eventID))
        for event in [events[0], events[1], events[2], events[6], events[7]] {
            #expect(stored.contains(event.eventID), "acknowledged \(event.eventID) is missing")
        }
        for event in refused {
            #expect(!stored.contains(event.eventID), "\(event.eventID) was answered 503 and stored later")
        }
        #expect(refused.count == 3)
    }
}
