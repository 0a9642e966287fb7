import Foundation
import ReadingEvents
import Testing

/// Issue 39, finding 4: a pull reads the share settings and the events in one snapshot. The
/// server's test hook `SYNC_TEST_PULL_PAUSE_MS` pauses every pull between its read of the share
/// settings and its read of the events; meanwhile Alice turns memos off and writes a memo. Before,
/// the events were read in a later snapshot than the settings and the memo reached Bob.
@Suite("A pull answers from one snapshot", needsPostgres)
struct PullSnapshotTests {
    @Test func aGroupTurnedOffDuringAPullSharesNothingNew() async throws {
        let fixture = try Fixture(environment: ["SYNC_TEST_PULL_PAUSE_MS": "2500"])
        let histories = demoHistories(readers: 2, days: 90, seed: 71)
        let history = histories[0].events
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        let code = try #require(try await alice.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 200)

        // Alice shares memos; everything but her last memos is pushed and pulled by Bob.
        var settings = try await alice.send(.GET, "/v1/share-settings").json
        settings["memos"] = true
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: settings).status == 200)
        let lastMemo = try #require(history.lastIndex { memoTags.contains($0.type.tag) })
        let before = history.enumerated().filter { $0.offset < lastMemo || !memoTags.contains($0.element.type.tag) }.map(\.element)
        let later = history.enumerated().filter { $0.offset >= lastMemo && memoTags.contains($0.element.type.tag) }.map(\.element)
        #expect(try await alice.push(before).status == 200)
        let first = try await bob.pullAll(limit: 1000)
        #expect(first.events.contains { memoTags.contains($0.envelope.type.tag) }, "memos are shared at first")

        // Bob pulls; while the server is between its two reads, Alice turns memos off and writes one.
        let cursor = first.cursor
        async let pulled = bob.send(.GET, "/v1/events?limit=1000&after=\(cursor)")
        try await Task.sleep(for: .milliseconds(600))
        settings["memos"] = false
        let started = ContinuousClock.now
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: settings).status == 200)
        #expect(try await alice.push(later).status == 200)
        let changedWithin = ContinuousClock.now - started
        let reply = try await pulled
        #expect(reply.status == 200, "\(reply.text)")
        #expect(changedWithin < .milliseconds(1800), "the change must land inside the pause to force the interleaving")
        let leaked = (reply.json["events"] as? [[String: Any]] ?? []).compactMap { item -> EventEnvelope? in
            guard let record = item["record"] as? String, let bytes = Data(base64Encoded: record) else { return nil }
            return try? BinaryEventCodec.decodeRecord(Array(bytes))
        }.filter { memoTags.contains($0.type.tag) }
        #expect(leaked.isEmpty, "a memo written after memos were turned off reached the partner: \(leaked.map(\.eventID))")
        // Nor later.
        let next = try await bob.pullAll(after: reply.json["next"] as? String ?? cursor, limit: 1000)
        #expect(!next.events.contains { memoTags.contains($0.envelope.type.tag) })
    }
}
