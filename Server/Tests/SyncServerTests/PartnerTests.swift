import AsyncHTTPClient
import Foundation
import NIOCore
import ReadingEvents
import Testing

@Suite("Reading partners: invites, sharing filters, unpairing, live stream", needsPostgres)
struct PartnerTests {
    /// Alice and Bob registered, with Alice's history split in two halves (before and after unpairing).
    func pair(_ fixture: Fixture, seed: UInt64) async throws -> (alice: TestDevice, bob: TestDevice, history: [EventEnvelope]) {
        let histories = demoHistories(readers: 2, days: 90, seed: seed)
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        let invite = try await alice.send(.POST, "/v1/invites", json: [String: Any]())
        #expect(invite.status == 201)
        let code = try #require(invite.json["code"] as? String)
        let accepted = try await bob.send(.POST, "/v1/invites/accept", json: ["code": code])
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.json["partner"] as? String == alice.reader.uuidString.lowercased())
        return (alice, bob, histories[0].events)
    }

    @Test func invitesAreSingleUseExpireAndCanBeEnded() async throws {
        let fixture = try Fixture()
        let histories = demoHistories(readers: 3, days: 5, seed: 21)
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        let carol = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[2].reader)

        let code = try #require(try await alice.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        // Alice cannot accept her own invite, and trying does not use it up.
        #expect(try await alice.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 400)
        // Case, spaces and dashes do not matter.
        let typed = code.lowercased().prefix(5) + "-" + code.lowercased().dropFirst(5)
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": String(typed)]).status == 200)
        // Single use.
        let reused = try await carol.send(.POST, "/v1/invites/accept", json: ["code": code])
        #expect(reused.status == 410)
        #expect(reused.error == "invite_used")
        #expect(try await carol.send(.POST, "/v1/invites/accept", json: ["code": "0000000000"]).status == 404)
        #expect(try await carol.send(.POST, "/v1/invites/accept", json: ["code": code], token: .some(nil)).status == 401)
        // Expiry.
        let short = try #require(try await alice.send(.POST, "/v1/invites", json: ["expiresInSeconds": 1]).json["code"] as? String)
        try await Task.sleep(for: .milliseconds(1500))
        let expired = try await carol.send(.POST, "/v1/invites/accept", json: ["code": short])
        #expect(expired.status == 410)
        #expect(expired.error == "invite_expired")
        #expect(try await alice.send(.POST, "/v1/invites", json: ["expiresInSeconds": 0]).field == "expiresInSeconds")

        let partners = try await bob.send(.GET, "/v1/partners").json["partners"] as? [[String: Any]] ?? []
        #expect(partners.map { $0["reader"] as? String } == [alice.reader.uuidString.lowercased()])
        #expect((try await carol.send(.GET, "/v1/partners").json["partners"] as? [Any])?.isEmpty == true)
        // Carol cannot end a partnership she is not in; Bob can end his.
        #expect(try await carol.send(.DELETE, "/v1/partners/\(alice.reader.uuidString)").status == 404)
        #expect(try await bob.send(.DELETE, "/v1/partners/\(alice.reader.uuidString)").status == 204)
        #expect(try await alice.send(.DELETE, "/v1/partners/\(bob.reader.uuidString)").status == 404)
        #expect((try await alice.send(.GET, "/v1/partners").json["partners"] as? [Any])?.isEmpty == true)
    }

    @Test func partnersSeeExactlyWhatIsSharedAndNeverMemosUnlessChosen() async throws {
        let fixture = try Fixture()
        let (alice, bob, history) = try await pair(fixture, seed: 22)
        #expect(history.contains { memoTags.contains($0.type.tag) }, "the demo history has memos")
        for start in stride(from: 0, to: history.count, by: 500) {
            #expect(try await alice.push(Array(history[start..<min(start + 500, history.count)])).status == 200)
        }
        // Defaults: everything but memos, goals and the home order.
        let expected = history.filter { !privateByDefault.contains($0.type.tag) }
        let (seen, _) = try await bob.pullAll(limit: 333)
        #expect(seen.allSatisfy { $0.reader == alice.reader })
        #expect(seen.map(\.envelope) == expected)
        #expect(!seen.contains { memoTags.contains($0.envelope.type.tag) })
        #expect(try await bob.send(.GET, "/v1/share-settings").json["memos"] as? Bool == false)

        // Alice chooses to share memos too (and nothing else changes).
        var settings = try await alice.send(.GET, "/v1/share-settings").json
        settings["memos"] = true
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: settings).status == 200)
        let (withMemos, _) = try await bob.pullAll()
        #expect(withMemos.map(\.envelope) == history.filter { !privateByDefault.subtracting(memoTags).contains($0.type.tag) })

        // Only finishes.
        let onlyFinishes: [String: Any] = ["profile": false, "progress": false, "goals": false, "finishes": true,
                                           "ratings": false, "sentences": false, "memos": false]
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: onlyFinishes).status == 200)
        let (finishes, _) = try await bob.pullAll()
        let finishTags: Set<String> = ["BookFinished", "FinishUndone", "BookAdded", "MetadataCorrected", "BookRemoved",
                                       "ReadingStatusChanged"]
        #expect(finishes.map(\.envelope) == history.filter { finishTags.contains($0.type.tag) })
        #expect(finishes.contains { $0.envelope.type.tag == "BookFinished" })
        // A settings body missing a group names it.
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: ["memos": true]).status == 400)

        // Nothing shared at all.
        let nothing = onlyFinishes.mapValues { _ in false }
        #expect(try await alice.send(.PUT, "/v1/share-settings", json: nothing).status == 200)
        let (none, _) = try await bob.pullAll()
        #expect(none.isEmpty)
        // Alice's own devices always see everything.
        let (own, _) = try await alice.pullAll(limit: 1000)
        #expect(own.map(\.envelope) == history)
    }

    @Test func afterUnpairingNothingNewIsShared() async throws {
        let fixture = try Fixture()
        let (alice, bob, history) = try await pair(fixture, seed: 23)
        let half = history.count / 2
        #expect(try await alice.push(Array(history[..<min(half, 900)])).status == 200)
        let (before, cursor) = try await bob.pullAll()
        #expect(!before.isEmpty)
        #expect(try await alice.send(.DELETE, "/v1/partners/\(bob.reader.uuidString)").status == 204)
        #expect(try await alice.push(Array(history[half..<min(history.count, half + 900)])).status == 200)
        let (after, _) = try await bob.pullAll(after: cursor)
        #expect(after.isEmpty)
        let (fromStart, _) = try await bob.pullAll()
        #expect(fromStart.isEmpty)
        // Bob's own history still syncs.
        let bobEvents = demoHistories(readers: 2, days: 90, seed: 23)[1].events
        #expect(try await bob.push(Array(bobEvents.prefix(10))).status == 200)
        #expect(try await bob.pullAll().events.count == 10)
    }

    @Test func aPartnersDeviceIsToldOfNewEventsThroughAnotherServerProcess() async throws {
        let fixture = try Fixture()
        let (alice, bob, history) = try await pair(fixture, seed: 24)
        // A second server process on the same database: Bob listens there, Alice pushes to the first.
        let second = try ServerProcess.start(databaseURL: fixture.cluster.url(database: fixture.database))
        defer { second.stop() }
        var request = HTTPClientRequest(url: second.baseURL + "/v1/stream")
        request.headers.add(name: "Authorization", value: "Bearer \(bob.token!)")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(response.status.code == 200)
        #expect(response.headers.first(name: "content-type") == "text/event-stream")
        var body = response.body.makeAsyncIterator()
        var received = ""
        func readUntil(_ text: String) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while !received.contains(text), ContinuousClock.now < deadline {
                guard let chunk = try await body.next() else { return false }
                received += String(buffer: chunk)
            }
            return received.contains(text)
        }
        #expect(try await readUntil("event: ready"))
        let pushed = ContinuousClock.now
        let shared = history.first { !privateByDefault.contains($0.type.tag) }!
        #expect(try await alice.push([shared]).status == 200)
        #expect(try await readUntil("event: changed"))
        let elapsed = ContinuousClock.now - pushed
        #expect(received.contains(alice.reader.uuidString.lowercased()))
        print("live notice reached the partner's stream in \(elapsed)")
        let (seen, _) = try await bob.pullAll()
        #expect(seen.map(\.envelope.eventID) == [shared.eventID])
    }
}
