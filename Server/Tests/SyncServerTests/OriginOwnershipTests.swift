import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

/// Issue 39, finding 3: a replica's origins belong to the reader whose device first used it. A
/// partner who reads the victim's replica ID and last sequence from a shared record and pushes
/// its own events under the victim's next sequences is refused; the victim's devices keep
/// syncing. Before, the partner's push was stored and the victim's next events were refused 409
/// `origin_taken` for good.
@Suite("Origins belong to the reader whose device issued them", needsPostgres)
struct OriginOwnershipTests {
    /// Alice and Bob paired through the real server.
    func pair(_ fixture: Fixture, seed: UInt64) async throws -> (alice: TestDevice, bob: TestDevice) {
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: UUID())
        let code = try #require(try await alice.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 200)
        return (alice, bob)
    }

    @Test func aPartnerCannotTakeTheVictimsNextSequences() async throws {
        let fixture = try Fixture()
        let (alice, bob) = try await pair(fixture, seed: 61)
        let aliceEvents = syntheticHistory(reader: alice.reader, count: 40, seed: 61)
        #expect(try await alice.push(Array(aliceEvents.prefix(10))).status == 200)

        // Bob reads Alice's replica and her last sequence from what she shares with him.
        let shared = try await bob.pullAll().events.filter { $0.reader == alice.reader }.map(\.envelope)
        let last = try #require(shared.compactMap(\.origin).max { $0.sequence < $1.sequence })
        // His own events (private or not), numbered as Alice's next sequences.
        var forged = syntheticHistory(reader: bob.reader, count: 20, seed: 62)
        for index in forged.indices {
            forged[index].origin = EventOrigin(stamp: forged[index].origin!.stamp, replica: last.replica,
                                               sequence: last.sequence + UInt64(index) + 1)
        }
        let stolen = try await bob.push(forged)
        #expect(stolen.status == 409, "the partner's push under Alice's replica: \(stolen.text)")
        #expect(stolen.error == "origin_taken")
        #expect(try fixture.cluster.psql("SELECT count(*) FROM events WHERE reader_id = '\(bob.reader.uuidString.lowercased())'",
                                         database: fixture.database) == "0")

        // Alice's own next events are stored, from every device of hers.
        let mine = try await alice.push(Array(aliceEvents[10..<30]))
        #expect(mine.status == 200, "the owner's push: \(mine.text)")
        #expect(mine.json["stored"] as? Int == 20)
        let tablet = try await alice.registerAnother()
        #expect(try await tablet.push(Array(aliceEvents[30...])).status == 200)
        let tabletHolds = try await tablet.pullAll().events.filter { $0.reader == alice.reader }
        #expect(tabletHolds.count == 40)

        // A replica Bob used first is Bob's: Alice cannot take it either, and Bob keeps pushing.
        let bobs = syntheticHistory(reader: bob.reader, count: 10, seed: 63)
        #expect(try await bob.push(Array(bobs.prefix(5))).status == 200)
        var takeover = aliceEvents[0]
        takeover.eventID = EventID()
        takeover.origin = EventOrigin(stamp: bobs[0].origin!.stamp, replica: bobs[0].origin!.replica, sequence: 6)
        let taken = try await alice.push([takeover])
        #expect(taken.status == 409, "\(taken.text)")
        #expect(taken.error == "origin_taken")
        #expect(try await bob.push(Array(bobs[5...])).status == 200)
    }

    /// A device's records refused with a conflict (409) are offered again once the cause is gone:
    /// here Alice's replica is registered to another reader (as a database of an older server
    /// could hold it) while she syncs, then given back to her.
    @Test func refusedRecordsAreOfferedAgainOnceTheCauseIsGone() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("origins")
        defer { try? FileManager.default.removeItem(at: root) }
        let histories = demoHistories(readers: 2, days: 20, seed: 64, stamped: false)
        let (alice, bob) = (ReaderID(histories[0].reader), ReaderID(histories[1].reader))
        let store = try ReadingStore.open(at: root.appendingPathComponent("alice"))
        try store.appendRecorded(histories[0].events)
        let reg = try await SyncClient.register(server: server, reader: alice, deviceName: "alice")
        _ = try await TestDevice.registerFirst(fixture.baseURL, reader: bob.uuid)
        let client = try SyncClient(store: store, server: server, token: reg.token, refusedRetryInterval: .zero)
        try await client.sync()
        let replica = try #require(try store.changes(since: VersionVector()).first?.origin?.replica)

        func sql(_ text: String) throws -> String { try fixture.cluster.psql(text, database: fixture.database) }
        let r = replica.uuid.uuidString.lowercased()
        _ = try sql("UPDATE replica_owners SET reader_id = '\(bob.uuid.uuidString.lowercased())' WHERE replica = '\(r)'")
        let fresh = try store.execute(.addBook(BookMetadata(title: "Refused for now", pageCount: 120), status: .reading),
                                      book: BookID(), context: CommandContext(reader: alice, occurredAt: Timestamp(Date()), timeZone: "UTC"))
        let refused = try await client.sync()
        #expect(refused.refused.count == fresh.count)
        #expect(try client.refusedRecords().count == fresh.count)

        // The cause is gone: the next sync offers the records again and the server stores them.
        _ = try sql("UPDATE replica_owners SET reader_id = '\(alice.uuid.uuidString.lowercased())' WHERE replica = '\(r)'")
        try await client.sync()
        #expect(try client.refusedRecords().isEmpty)
        let stored = try sql("SELECT count(*) FROM events WHERE event_id = '\(fresh[0].eventID.uuid.uuidString.lowercased())'")
        #expect(stored == "1")
    }
}
