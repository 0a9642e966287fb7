import Foundation
import ReadingEvents
import Testing

/// Pushes with retries until 200 (any error or status other than 200, 4xx excepted, is retried):
/// what a client does. Returns the number of attempts that failed.
func pushRetrying(_ device: TestDevice, _ batch: [EventEnvelope]) async throws -> Int {
    var failures = 0
    while true {
        do {
            let reply = try await device.push(batch)
            if reply.status == 200 { return failures }
            if (400..<500).contains(reply.status) { throw CommandError(command: ["push"], status: Int32(reply.status), output: reply.text) }
        } catch let error as CommandError {
            throw error
        } catch {}
        failures += 1
        if failures > 300 { throw CommandError(command: ["push"], status: -1, output: "no success after 300 attempts") }
        try await Task.sleep(for: .milliseconds(200))
    }
}

@Suite("Faults: the server killed mid-push, PostgreSQL restarted mid-sync", needsPostgres)
struct FaultTests {
    @Test func theServerKilledDuringAPushLosesAndDuplicatesNothingAfterRetry() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let history = (reader: reader, events: syntheticHistory(reader: reader, count: 2000, seed: 31))
        let batches = stride(from: 0, to: history.events.count, by: 100).map {
            Array(history.events[$0..<min($0 + 100, history.events.count)])
        }
        #expect(batches.count >= 10)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: history.reader)
        let pushing = Task {
            var acknowledged = 0
            for batch in batches {
                // A short timeout: the request in flight when the server dies fails (or times out) and stops the loop.
                guard let reply = try? await phone.send(.POST, "/v1/events", json: TestDevice.pushBody(batch), timeout: .seconds(5)),
                      reply.status == 200 else { break }
                acknowledged += 1
            }
            return acknowledged
        }
        // Kill the server as soon as the first batch is stored: the following pushes are in flight.
        try await waitUntil("the first pushed batch to be stored") { try fixture.storedEventCount() != 0 }
        fixture.server.kill()
        let acknowledged = await pushing.value
        let storedAtKill = try fixture.storedEventCount()
        #expect(acknowledged < batches.count, "the kill came before the last batch")
        #expect(storedAtKill >= acknowledged * 100)
        #expect(storedAtKill % 100 == 0 || storedAtKill == history.events.count, "a batch is stored whole or not at all")

        let restarted = try ServerProcess.start(databaseURL: fixture.cluster.url(database: fixture.database))
        defer { restarted.stop() }
        let retry = TestDevice(baseURL: restarted.baseURL, token: phone.token, reader: phone.reader)
        var stored = 0
        for batch in batches {
            let reply = try await retry.push(batch)
            #expect(reply.status == 200)
            stored += reply.json["stored"] as? Int ?? 0
        }
        #expect(stored == history.events.count - storedAtKill)
        let (pulled, _) = try await retry.pullAll(limit: 1000)
        #expect(pulled.map(\.envelope) == history.events)
        #expect(try fixture.storedEventCount() == history.events.count)
        print("killed after \(acknowledged) acknowledged batches, \(storedAtKill) events stored; retry stored \(stored)")
    }

    @Test func postgresRestartedDuringASyncTheClientRetriesAndNothingIsLost() async throws {
        // A cluster of its own: restarting the shared one would disturb the other tests.
        let cluster = try PostgresCluster()
        defer { cluster.stop(mode: "immediate") }
        let database = try cluster.createDatabase()
        let server = try ServerProcess.start(databaseURL: cluster.url(database: database))
        defer { server.stop() }
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 4000, seed: 32)
        let alice = try await TestDevice.registerFirst(server.baseURL, reader: reader)
        let tablet = try await alice.registerAnother()
        let batches = stride(from: 0, to: events.count, by: 20).map { Array(events[$0..<min($0 + 20, events.count)]) }

        let syncing = Task {
            var failures = 0
            for batch in batches { failures += try await pushRetrying(alice, batch) }
            return failures
        }
        // Restart PostgreSQL (fast: connections are cut, open transactions rolled back) mid-sync.
        let count = { try countStoredEvents(in: cluster, database: database) }
        try await waitUntil("the first pushed batch to be stored") { try count() != 0 }
        let storedAtStop = try count()
        cluster.stop(mode: "fast")
        try await Task.sleep(for: .milliseconds(500))
        try cluster.start()
        let failures = try await syncing.value
        #expect(storedAtStop < events.count, "the restart came before the last push")

        // The tablet pulls, also retrying while connections recover.
        var pulled: [EventEnvelope] = []
        for attempt in 0..<100 {
            do {
                pulled = try await tablet.pullAll(limit: 500).events.map(\.envelope)
                break
            } catch {
                #expect(attempt < 99, "pull never succeeded: \(error)")
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        #expect(pulled == events)
        #expect(try count() == events.count)
        print("PostgreSQL restarted mid-sync: \(failures) push attempts failed and were retried; \(pulled.count) events, none lost or duplicated")
        #expect(server.process.isRunning, "the server survives a database restart")
    }
}
