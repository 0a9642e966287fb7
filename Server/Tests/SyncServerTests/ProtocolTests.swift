import Foundation
import ReadingEvents
import Testing

@Suite("Devices, push and pull against the real server and PostgreSQL", needsPostgres)
struct ProtocolTests {
    @Test func registrationClaimsAReaderAndFurtherDevicesNeedItsToken() async throws {
        let fixture = try Fixture()
        let reader = UUID(), other = UUID()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let token = try #require(phone.token)
        #expect(token.hasPrefix(reader.uuidString.lowercased() + "."))
        #expect(token.count == 36 + 1 + 43)

        // The reader is claimed: a second first registration is refused.
        let anonymous = TestDevice(baseURL: fixture.baseURL, token: nil, reader: reader)
        let again = try await anonymous.send(.POST, "/v1/devices", json: ["reader": reader.uuidString, "name": "thief"])
        #expect(again.status == 409)
        #expect(again.field == "reader")

        let tablet = try await phone.registerAnother()
        #expect(tablet.token != phone.token)
        // A token registers devices of its own reader only.
        let foreign = try await phone.send(.POST, "/v1/devices", json: ["reader": other.uuidString, "name": "x"])
        #expect(foreign.status == 403)
        // Bad bodies name the field.
        let noName = try await anonymous.send(.POST, "/v1/devices", json: ["reader": other.uuidString])
        #expect(noName.status == 400)
        #expect(noName.field == "name")
        let noReader = try await anonymous.send(.POST, "/v1/devices", json: ["name": "x"])
        #expect(noReader.status == 400)
        #expect(noReader.field == "reader")

        let list = try await tablet.send(.GET, "/v1/devices")
        #expect((list.json["devices"] as? [Any])?.count == 2)
        // Only hashes are stored: no token text in the database.
        let stored = try fixture.cluster.psql("SELECT string_agg(encode(token_hash, 'hex'), ',') FROM devices",
                                              database: fixture.database)
        #expect(!stored.contains(String(token.split(separator: ".")[1])))
        #expect(stored.split(separator: ",").allSatisfy { $0.count == 64 })
    }

    @Test func pushThenPullReturnsEveryEventOnceAcrossPages() async throws {
        let fixture = try Fixture()
        let history = demoHistories(readers: 1, days: 60, seed: 11)[0]
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: history.reader)
        var stored = 0
        for start in stride(from: 0, to: history.events.count, by: 250) {
            let batch = Array(history.events[start..<min(start + 250, history.events.count)])
            let reply = try await phone.push(batch)
            #expect(reply.status == 200, "\(reply.text)")
            stored += reply.json["stored"] as? Int ?? 0
        }
        #expect(stored == history.events.count)
        let tablet = try await phone.registerAnother()
        let (pulled, cursor) = try await tablet.pullAll(limit: 97)
        #expect(pulled.count == history.events.count)
        #expect(pulled.map(\.envelope) == history.events)   // same records, in arrival order
        #expect(pulled.allSatisfy { $0.reader == history.reader })
        // Nothing new after the cursor.
        let (after, _) = try await tablet.pullAll(after: cursor)
        #expect(after.isEmpty)
        // A bad cursor or limit names the field.
        #expect(try await tablet.send(.GET, "/v1/events?after=%%%").field == "after")
        #expect(try await tablet.send(.GET, "/v1/events?limit=0").field == "limit")
        #expect(try await tablet.send(.GET, "/v1/events?limit=1001").status == 400)
    }

    @Test func aReplayedBatchStoresNothingNew() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let history = (reader: reader, events: syntheticHistory(reader: reader, count: 200, seed: 12))
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: history.reader)
        let batch = Array(history.events.prefix(120))
        let first = try await phone.push(batch)
        #expect(first.status == 200)
        #expect(first.json["stored"] as? Int == 120)
        let replay = try await phone.push(batch)
        #expect(replay.status == 200)
        #expect(replay.json["stored"] as? Int == 0)
        #expect(replay.json["duplicates"] as? Int == 120)
        // Overlapping batch: only the new events are stored; repeats inside a batch count once.
        let overlap = Array(history.events[100..<160]) + Array(history.events[150..<160])
        let third = try await phone.push(overlap)
        #expect(third.json["stored"] as? Int == 40)
        #expect(third.json["duplicates"] as? Int == 30)
        #expect(try fixture.storedEventCount() == 160)
        let (pulled, _) = try await phone.pullAll()
        #expect(Set(pulled.map(\.envelope.eventID)).count == pulled.count)
        #expect(pulled.count == 160)
    }

    @Test func replicaSequenceAndStampOfEachOriginAreStored() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let replica = ReplicaID(UUID())
        let events = syntheticHistory(reader: reader, count: 30, seed: 17).enumerated().map { index, envelope in
            var copy = envelope
            // Stamps a few microseconds after each event's recordedAt (within a day of it, the rule).
            copy.origin = EventOrigin(stamp: UInt64(envelope.recordedAt.microseconds) + UInt64(index) * 7, replica: replica,
                                      sequence: UInt64(index + 1))
            return copy
        }
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        #expect(try await phone.push(events).status == 200)
        let rows = try fixture.cluster.psql(
            "SELECT replica, sequence, stamp FROM events ORDER BY arrival", database: fixture.database)
        let expected = events.map { "\($0.origin!.replica)|\($0.origin!.sequence)|\($0.origin!.stamp)" }
        #expect(rows.split(separator: "\n").map(String.init) == expected)
        let (pulled, _) = try await phone.pullAll()
        #expect(pulled.map(\.envelope) == events)
    }

    @Test func aBatchWithOneMalformedRecordStoresNothing() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let history = (reader: reader, events: syntheticHistory(reader: reader, count: 50, seed: 13))
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: history.reader)
        var generator = SeededGenerator(seed: 13)
        let events = Array(history.events.prefix(50))
        let bad = Int.random(in: 1..<50, using: &generator)
        var records = events.map { Data(BinaryEventCodec.encodeRecord($0)).base64EncodedString() }
        // Truncated record bytes.
        let bytes = BinaryEventCodec.encodeRecord(events[bad])
        records[bad] = Data(bytes.prefix(bytes.count / 2)).base64EncodedString()
        let reply = try await phone.send(.POST, "/v1/events", json: ["events": records.map { ["record": $0] }])
        #expect(reply.status == 400)
        #expect(reply.error == "malformed_record")
        #expect(reply.field?.hasPrefix("events[\(bad)].record") == true, "\(reply.text)")
        // Not base64 at all.
        records[bad] = "@@not base64@@"
        let second = try await phone.send(.POST, "/v1/events", json: ["events": records.map { ["record": $0] }])
        #expect(second.status == 400)
        #expect(second.field == "events[\(bad)].record")
        // Not JSON of the protocol.
        let notJSON = try await phone.send(.POST, "/v1/events", json: Data("{\"events\": 3}".utf8))
        #expect(notJSON.status == 400)
        #expect(notJSON.field == "events")
        #expect(try fixture.storedEventCount() == 0)
    }

    @Test func oversizedBatchesAreRefusedWith413() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let history = (reader: reader, events: syntheticHistory(reader: reader, count: 1001, seed: 14))
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: history.reader)
        let tooMany = try await phone.push(Array(history.events.prefix(1001)))
        #expect(tooMany.status == 413)
        #expect(tooMany.field == "events")
        // A body over 4 MiB, whatever it holds.
        let padding = String(repeating: "A", count: 4 * 1024 * 1024 + 16)
        let tooBig = try await phone.send(.POST, "/v1/events", json: ["events": [["record": padding]]])
        #expect(tooBig.status == 413)
        #expect(tooBig.error == "body_too_large", "the 413 carries the JSON error body: \(tooBig.text)")
        #expect(tooBig.field == "body")
        #expect(try fixture.storedEventCount() == 0)
        // Exactly at the limit is fine.
        let atLimit = try await phone.push(Array(history.events.prefix(1000)))
        #expect(atLimit.status == 200)
        #expect(try fixture.storedEventCount() == 1000)
    }

    @Test func missingWrongRevokedAndOtherReadersTokensAreRefused() async throws {
        let fixture = try Fixture()
        let histories = demoHistories(readers: 2, days: 15, seed: 15)
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        #expect(try await alice.push(histories[0].events).status == 200)
        let aliceCount = histories[0].events.count
        let some = Array(histories[0].events.prefix(3))

        let missing = try await alice.send(.GET, "/v1/events", token: .some(nil))
        #expect(missing.status == 401)
        let wrongSecret = alice.reader.uuidString.lowercased() + "." + String(repeating: "A", count: 43)
        #expect(try await alice.send(.GET, "/v1/events", token: wrongSecret).status == 401)
        #expect(try await alice.send(.GET, "/v1/events", token: "garbage").status == 401)
        #expect(try await alice.send(.POST, "/v1/events", json: TestDevice.pushBody(some), token: .some(nil)).status == 401)
        // Another reader's valid secret with this reader's ID: the pair must match.
        let bobSecret = try #require(bob.token?.split(separator: ".").last)
        #expect(try await alice.send(.GET, "/v1/events", token: alice.reader.uuidString.lowercased() + "." + bobSecret).status == 401)

        // Revocation.
        let tablet = try await alice.registerAnother()
        let devices = try await alice.send(.GET, "/v1/devices").json["devices"] as? [[String: Any]] ?? []
        let tabletID = try #require(devices.last?["device"] as? String)
        // Bob cannot revoke (or see) Alice's device: 404, never data.
        #expect(try await bob.send(.DELETE, "/v1/devices/\(tabletID)").status == 404)
        #expect(try await tablet.send(.GET, "/v1/events").status == 200)
        #expect(try await alice.send(.DELETE, "/v1/devices/\(tabletID)").status == 204)
        #expect(try await tablet.send(.GET, "/v1/events").status == 401)
        #expect(try await tablet.send(.POST, "/v1/events", json: TestDevice.pushBody(some)).status == 401)

        // Bob's token never returns Alice's events (not partners).
        let (bobSees, _) = try await bob.pullAll()
        #expect(bobSees.isEmpty)
        #expect(try fixture.storedEventCount() == aliceCount)
    }

    @Test func aRevokedTokenIsRefusedByEveryServerProcess() async throws {
        let fixture = try Fixture()
        let second = try ServerProcess.start(databaseURL: fixture.cluster.url(database: fixture.database))
        defer { second.stop() }
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let tablet = try await phone.registerAnother()
        var tabletOnSecond = tablet
        tabletOnSecond.baseURL = second.baseURL
        // The second process has authenticated (and may cache) the tablet's token.
        #expect(try await tabletOnSecond.send(.GET, "/v1/events").status == 200)
        #expect(try await tabletOnSecond.send(.GET, "/v1/events").status == 200)
        let devices = try await phone.send(.GET, "/v1/devices").json["devices"] as? [[String: Any]] ?? []
        let tabletID = try #require(devices.last?["device"] as? String)
        #expect(try await phone.send(.DELETE, "/v1/devices/\(tabletID)").status == 204)
        // The revocation reaches the second process through NOTIFY: refused within a few seconds
        // (well inside the cache's 10 s lifetime, so the notice, not the expiry, does it).
        var status = 200
        for _ in 0..<40 where status == 200 {
            status = try await tabletOnSecond.send(.GET, "/v1/events").status
            if status == 200 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(status == 401)
        #expect(try await tablet.send(.GET, "/v1/events").status == 401)
    }

    @Test func pushingAnotherReadersEventsIsForbiddenAndStoresNothing() async throws {
        let fixture = try Fixture()
        let histories = demoHistories(readers: 2, days: 15, seed: 16)
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        let onlyBobs = try await alice.push(Array(histories[1].events.prefix(10)))
        #expect(onlyBobs.status == 403)
        #expect(onlyBobs.field == "events[0].record.reader")
        // One of Bob's events in the middle of Alice's batch: the whole batch is refused.
        var mixed = Array(histories[0].events.prefix(20))
        mixed.insert(histories[1].events[0], at: 7)
        let reply = try await alice.push(mixed)
        #expect(reply.status == 403)
        #expect(reply.field == "events[7].record.reader")
        #expect(try fixture.storedEventCount() == 0)
        // An event of Alice's own that reuses an event ID Bob stored: 409, nothing stored.
        #expect(try await bob.push(Array(histories[1].events.prefix(5))).status == 200)
        var reused = Array(histories[0].events.prefix(4))
        reused[2].eventID = histories[1].events[3].eventID
        let conflict = try await alice.push(reused)
        #expect(conflict.status == 409)
        #expect(conflict.field == "events[2].record.eventID")
        #expect(try fixture.storedEventCount() == 5)
    }

    @Test func openAPIDocumentIsServed() async throws {
        let fixture = try Fixture()
        let device = TestDevice(baseURL: fixture.baseURL, token: nil, reader: UUID())
        let reply = try await device.send(.GET, "/openapi.yaml")
        #expect(reply.status == 200)
        #expect(reply.text.hasPrefix("openapi: 3"))
        #expect(reply.text.contains("/v1/events"))
    }
}

/// SplitMix64, for seeded choices in tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
