import Foundation
import ReadingEvents
import Testing

@Suite("Pulls from a streaming read replica, through a second server process", needsPostgres)
struct ReplicaTests {
    /// A device pushes through one server process (on the primary) and pulls through another
    /// that reads from a streaming replica: it receives every event. With the replica's replay
    /// paused, pushes go on; the pulls answer only what the replica holds and the cursor does not
    /// move past it; once replay resumes, the next pulls bring exactly the events missed, none
    /// skipped.
    @Test func aLaggingReplicaNeverMakesTheCursorSkipAnEvent() async throws {
        let primary = try PostgresCluster()
        defer { primary.stop() }
        let database = try primary.createDatabase()
        let writer = try ServerProcess.start(databaseURL: primary.url(database: database))
        defer { writer.stop() }
        // The schema exists now (the writer applied the migrations): the replica copies it.
        let replica = try PostgresCluster(replicaOf: primary)
        defer { replica.stop() }
        let reader = try ServerProcess.start(databaseURL: primary.url(database: database),
                                             arguments: ["--replica-url", replica.url(database: database)])
        defer { reader.stop() }

        let readerID = UUID()
        let phone = try await TestDevice.registerFirst(writer.baseURL, reader: readerID)
        let viaReplica = TestDevice(baseURL: reader.baseURL, token: phone.token, reader: readerID)
        let events = syntheticHistory(reader: readerID, count: 60, seed: 77)
        #expect(try await phone.push(Array(events[..<30])).status == 200)
        var received: [EventID] = []
        var cursor = ""
        try await waitUntil("the replica to hold the first 30 events", interval: .milliseconds(50)) {
            let page = try await viaReplica.pullAll(after: cursor)
            received += page.events.map(\.envelope.eventID)
            cursor = page.cursor
            return received.count >= 30
        }
        #expect(received == events[..<30].map(\.eventID))

        try replica.psql("SELECT pg_wal_replay_pause()")
        try await waitUntil("replay to pause", interval: .milliseconds(50)) {
            try replica.psql("SELECT pg_get_wal_replay_pause_state()") == "paused"
        }
        #expect(try await phone.push(Array(events[30...])).status == 200)
        // The primary holds them; the replica does not: pulls answer nothing new and keep the cursor.
        #expect(try primary.psql("SELECT count(*) FROM events", database: database) == "60")
        for _ in 0..<3 {
            let page = try await viaReplica.pullAll(after: cursor)
            #expect(page.events.isEmpty, "the replica answers only what it replayed")
            #expect(page.cursor == cursor, "the cursor stays at the replica's position")
            cursor = page.cursor
        }
        try replica.psql("SELECT pg_wal_replay_resume()")
        try await waitUntil("the replica to catch up", interval: .milliseconds(50)) {
            let page = try await viaReplica.pullAll(after: cursor)
            received += page.events.map(\.envelope.eventID)
            cursor = page.cursor
            return received.count >= 60
        }
        #expect(received == events.map(\.eventID), "every event once, in order: none skipped")
    }
}
