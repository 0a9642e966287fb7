import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

@Suite("One request per device cycle: the push's answer carries the pull page", needsPostgres)
struct CombinedCycleTests {
    /// `POST /v1/events?pull=1` answers the push and the page after `after` (what a pull would
    /// answer after the push): the other device's events and its own, and the cursor.
    @Test func aPushWithPullAnswersThePage() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let tablet = try await phone.registerAnother()
        let events = syntheticHistory(reader: reader, count: 8, seed: 5)
        #expect(try await phone.push(Array(events[..<5])).status == 200)
        let reply = try await tablet.send(.POST, "/v1/events?pull=1&limit=100", json: TestDevice.pushBody(Array(events[5...])))
        #expect(reply.status == 200, "\(reply.text.prefix(300))")
        #expect(reply.json["stored"] as? Int == 3)
        let page = try #require(reply.json["page"] as? [String: Any], "the answer carries the page: \(reply.text.prefix(300))")
        let ids = (page["events"] as? [[String: Any]] ?? []).compactMap { $0["eventID"] as? String }
        #expect(ids == events.map { $0.eventID.uuid.uuidString.lowercased() })
        #expect(page["more"] as? Bool == false)
        let next = try #require(page["next"] as? String)
        #expect(try await tablet.pullAll(after: next).events.isEmpty, "the page's cursor is past everything")
        let plain = try await tablet.push(Array(events[5...]))
        #expect(plain.json["page"] == nil, "without pull=1 the answer is as before")
    }

    /// A device's sync with a few new events is one request (the push with the page), and the
    /// other device's events arrive in it.
    @Test func aSyncWithFewNewEventsIsOneRequest() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("cycle")
        defer { try? FileManager.default.removeItem(at: root) }
        let reader = ReaderID(UUID())
        let first = try await SyncClient.register(server: server, reader: reader, deviceName: "phone")
        let second = try await SyncClient.register(server: server, reader: reader, deviceName: "tablet", token: first.token)
        let phone = try SyncClient(store: try ReadingStore.open(at: root.appendingPathComponent("phone")), server: server, token: first.token)
        let tablet = try SyncClient(store: try ReadingStore.open(at: root.appendingPathComponent("tablet")), server: server, token: second.token)
        let at = Timestamp(microseconds: 1_750_000_000_000_000)
        func addBook(_ client: SyncClient, _ title: String, _ offset: Int64) throws {
            let when = Timestamp(microseconds: at.microseconds + offset * 60_000_000)
            _ = try client.store.execute(.addBook(BookMetadata(title: title, pageCount: 120), status: .reading), book: BookID(),
                                         context: CommandContext(reader: reader, occurredAt: when, timeZone: "Asia/Seoul", recordedAt: when))
        }
        try addBook(phone, "Phone's", 1)
        try await phone.sync()
        try addBook(tablet, "Tablet's", 2)
        let report = try await tablet.sync()
        #expect(report.requests == 1, "\(report)")
        #expect(report.pushed == 1)
        #expect(report.pulled.appended >= 1, "the phone's book arrived in the push's answer: \(report)")
        #expect(try tablet.store.events().count == 2)
        let idle = try await tablet.sync()
        #expect(idle.requests == 1, "nothing to push: one pull: \(idle)")
    }
}
