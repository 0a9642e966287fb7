import DemoHistory
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

@Suite("The same export imported on two devices: aliases through the real server", needsPostgres)
struct AliasTests {
    /// Phone and tablet import the same rows (each stamps them with its own replica: (P,1..n) and
    /// (T,1..n)), each records one new event, both sync twice through the server, then a third
    /// device syncs: all three hold the same events and views, and each one's vector covers every
    /// replica's sequences (the other device's copies arrive as aliases).
    @Test(arguments: [UInt64(61), 62])
    func twoImportsOfTheSameRowsConvergeAndEveryVectorCoversEveryReplica(seed: UInt64) async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("aliases")
        defer { try? FileManager.default.removeItem(at: root) }
        let history = demoHistories(readers: 1, days: 20, seed: seed, stamped: false)[0]
        let reader = ReaderID(history.reader)
        let phone = try ReadingStore.open(at: root.appendingPathComponent("phone"))
        let tablet = try ReadingStore.open(at: root.appendingPathComponent("tablet"))
        let laptop = try ReadingStore.open(at: root.appendingPathComponent("laptop"))
        for store in [phone, tablet] {
            let outcome = try store.importHistory(history.events)
            #expect(outcome.added == history.events.count)
        }
        // One new event on each: a book each device adds on its own.
        let day = history.events.map(\.occurredAt).max()!
        for (offset, store) in [phone, tablet].enumerated() {
            let at = Timestamp(microseconds: day.microseconds + Int64(offset + 1) * 60_000_000)
            _ = try store.execute(.addBook(BookMetadata(title: "New \(offset)", pageCount: 100 + offset), status: .reading), book: BookID(),
                                  context: CommandContext(reader: reader, occurredAt: at, timeZone: "Asia/Seoul", recordedAt: at))
        }

        let first = try await SyncClient.register(server: server, reader: reader, deviceName: "phone")
        let second = try await SyncClient.register(server: server, reader: reader, deviceName: "tablet", token: first.token)
        let third = try await SyncClient.register(server: server, reader: reader, deviceName: "laptop", token: first.token)
        let clients = [try SyncClient(store: phone, server: server, token: first.token, pushBatch: 50, pullPage: 40),
                       try SyncClient(store: tablet, server: server, token: second.token, pushBatch: 50, pullPage: 40)]
        for _ in 0..<2 { for client in clients { try await client.sync() } }
        try await SyncClient(store: laptop, server: server, token: third.token, pullPage: 40).sync()

        let ids = Set(history.events.map(\.eventID))
        for (name, store) in [("phone", phone), ("tablet", tablet), ("laptop", laptop)] {
            let held = try Set(store.events().map(\.eventID))
            #expect(held.count == ids.count + 2, "\(name) holds the import and both new events")
            #expect(held.isSuperset(of: ids), "\(name)")
            #expect(try store.viewDigest() == phone.viewDigest(), "\(name) shows the phone's views")
            #expect(try store.quarantine().isEmpty, "\(name) took every copy")
            let vector = try store.versionVector()
            for (other, replica) in [("phone", phone.replica), ("tablet", tablet.replica)] {
                #expect(vector[replica] == UInt64(history.events.count + 1),
                        "\(name)'s vector covers \(other)'s \(history.events.count + 1) sequences, not \(vector[replica])")
            }
        }
        // A further round moves nothing.
        for client in clients {
            let report = try await client.sync()
            #expect(report.pushed == 0)
            #expect(report.pulled.appended == 0)
        }
    }

    /// The protocol underneath: a copy of a held event under another origin is stored (an alias
    /// row, pulled like any event); the same copy again is a duplicate; the same event ID with
    /// another fact is 409 `event_id_taken` naming the rule, in one batch or across pushes.
    @Test func aCopyUnderAnotherOriginIsStoredOnceAndAnotherFactIsRefused() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let events = syntheticHistory(reader: reader, count: 12, seed: 63)
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let tablet = try await phone.registerAnother()
        #expect(try await phone.push(events).status == 200)
        // The tablet's copies: the same events stamped by another replica.
        let copies = stamped(events, seed: 64)
        #expect(copies[0].origin?.replica != events[0].origin?.replica)
        let reply = try await tablet.push(copies + copies.prefix(3))
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json["stored"] as? Int == 12)
        #expect(reply.json["duplicates"] as? Int == 3)
        #expect(try await tablet.push(copies).json["duplicates"] as? Int == 12)
        #expect(try fixture.storedEventCount() == 24)
        let laptop = try await phone.registerAnother(name: "laptop")
        let pulled = try await laptop.pullAll(limit: 5).events.map(\.envelope)
        #expect(pulled.count == 24)
        #expect(Set(pulled.compactMap(\.origin)) == Set((events + copies).compactMap(\.origin)))

        // Another fact under a held event ID, with a fresh origin: refused, nothing stored.
        var changed = stamped(events, seed: 65)[4]
        changed.occurredAt = Timestamp(microseconds: changed.occurredAt.microseconds - 1_000_000)
        let refused = try await tablet.push([changed])
        #expect(refused.status == 409, "\(refused.text)")
        #expect(refused.error == "event_id_taken")
        #expect(refused.field == "events[0].record.eventID")
        #expect(refused.json["rule"] as? String == ValidationRule.inconsistent.rawValue)
        // And within one batch of new events.
        let fresh = syntheticHistory(reader: reader, count: 2, seed: 66)
        var twin = stamped(fresh, seed: 67)[1]
        twin.occurredAt = Timestamp(microseconds: twin.occurredAt.microseconds - 1_000_000)
        let inBatch = try await tablet.push(fresh + [twin])
        #expect(inBatch.status == 409, "\(inBatch.text)")
        #expect(inBatch.field == "events[2].record.eventID")
        #expect(try fixture.storedEventCount() == 24)
    }
}
