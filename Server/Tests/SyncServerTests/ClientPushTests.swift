import DemoHistory
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

@Suite("The ReadingSync client's pushes: sized by bytes, split on 413, never repeated", needsPostgres)
struct ClientPushTests {
    /// A store of `reader` holding one book and `count` memos of 10,000 Korean characters (the
    /// longest memo `Limits` allows; 30,000 UTF-8 bytes each).
    func memoStore(_ root: URL, _ name: String, reader: ReaderID, count: Int, seed: UInt64) throws -> ReadingStore {
        let store = try ReadingStore.open(at: root.appendingPathComponent(name))
        let book = BookID()
        var clock = Timestamp(microseconds: 1_750_000_000_000_000)
        func context() -> CommandContext {
            clock = Timestamp(microseconds: clock.microseconds + 60_000_000)
            return CommandContext(reader: reader, occurredAt: clock, timeZone: "Asia/Seoul", recordedAt: clock)
        }
        try store.execute(.addBook(BookMetadata(title: "긴 책", pageCount: 247), status: .reading), book: book, context: context())
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<count {
            let text = String(String.UnicodeScalarView((0..<Limits.memoLength).map { _ in
                Unicode.Scalar(UInt32(0xAC00) + UInt32(generator.next() % 11_172))!
            }))
            try store.execute(.writeMemo(MemoID(), text: text, page: Int(generator.next() % 247) + 1), book: book, context: context())
        }
        return store
    }

    @Test func aHistoryOfLongMemosSyncsThroughTheRealServer() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("memos")
        defer { try? FileManager.default.removeItem(at: root) }
        let reader = ReaderID(UUID())
        let phone = try memoStore(root, "phone", reader: reader, count: 150, seed: 71)
        let all = try phone.changes(since: VersionVector())
        let encoded = all.reduce(0) { $0 + BinaryEventCodec.encodeRecord($1).count }
        #expect(encoded * 4 / 3 > 4 * 1024 * 1024, "the history's records alone are larger than one request may be")

        let registration = try await SyncClient.register(server: server, reader: reader, deviceName: "phone")
        let client = try SyncClient(store: phone, server: server, token: registration.token)
        let report = try await client.sync()
        #expect(report.pushed == 151)
        #expect(try fixture.storedEventCount() == 151)

        let tablet = try ReadingStore.open(at: root.appendingPathComponent("tablet"))
        let second = try await SyncClient.register(server: server, reader: reader, deviceName: "tablet", token: registration.token)
        let tabletReport = try await SyncClient(store: tablet, server: server, token: second.token).sync()
        #expect(tabletReport.pulled.appended == 151)
        #expect(try tablet.viewDigest() == phone.viewDigest())
    }

    @Test func a413SplitsTheRequestAndAnEventTooLargeAloneIsSetAsideNamedAndTheRestIsPushed() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("split")
        defer { try? FileManager.default.removeItem(at: root) }
        let reader = ReaderID(UUID())
        // 150 memos: every one is set aside by the small client below, more than the 100 refused
        // records a client kept before (the others were lost for good); all reach the server.
        let phone = try memoStore(root, "phone", reader: reader, count: 150, seed: 72)
        let registration = try await SyncClient.register(server: server, reader: reader, deviceName: "phone")

        // One memo's request alone is larger than this client's limit: it is set aside (413,
        // event_too_large, naming the event) like any refused record, and every other event is
        // pushed (issue 36: before, the sync threw and nothing of the device was pushed again).
        let small = try SyncClient(store: phone, server: server, token: registration.token, maxPushBytes: 20_000)
        let firstMemo = try #require(try phone.changes(since: VersionVector()).first { $0.type.tag == "MemoWritten" })
        let smallReport = try await small.sync()
        let aside = smallReport.refused
        #expect(!aside.isEmpty && aside.allSatisfy { $0.status == 413 && $0.code == "event_too_large" }, "\(aside)")
        #expect(aside.contains { $0.eventID == firstMemo.eventID && $0.message.contains(firstMemo.eventID.description) }, "\(aside)")
        #expect(smallReport.pushed == 151 - aside.count)
        #expect(try fixture.storedEventCount() == 151 - aside.count)
        #expect(try small.refusedRecords().count == aside.count)

        // A client that believes the server takes more, retrying what was set aside: the server's
        // 413 (with its JSON body) splits each request until it fits.
        let large = try SyncClient(store: phone, server: server, token: registration.token, maxPushBytes: 64 * 1024 * 1024)
        let report = try await large.sync(retryingRefused: true)
        #expect(report.pushed == aside.count && report.refused.isEmpty, "\(report); set aside before: \(aside.count); refused now: \(report.refused.prefix(3))")
        #expect(try fixture.storedEventCount() == 151)
    }

    /// One store holding two readers' events, stamped by its one replica in between each other
    /// (the demo store, a shared device): the reader's events are not contiguous in the replica's
    /// sequence, and every sync used to push them all again.
    @Test func aSecondSyncPushesNothingWhenTheStoreHoldsAnotherReadersEvents() async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("mixed")
        defer { try? FileManager.default.removeItem(at: root) }
        let histories = demoHistories(readers: 2, days: 30, seed: 73, stamped: false)
        var generator = SeededGenerator(seed: 73)
        var (a, b) = (histories[0].events[...], histories[1].events[...])
        var interleaved: [EventEnvelope] = []
        while !a.isEmpty || !b.isEmpty {
            let fromA = b.isEmpty || (!a.isEmpty && generator.next() % 2 == 0)
            interleaved.append(fromA ? a.removeFirst() : b.removeFirst())
        }
        let store = try ReadingStore.open(at: root.appendingPathComponent("shared"))
        try store.appendRecorded(interleaved)
        let alice = ReaderID(histories[0].reader)
        let registration = try await SyncClient.register(server: server, reader: alice, deviceName: "shared")
        let client = try SyncClient(store: store, server: server, token: registration.token, pushBatch: 100)
        let first = try await client.sync()
        #expect(first.pushed == histories[0].events.count)
        #expect(first.pushedDuplicates == 0)
        for _ in 0..<2 {
            let again = try await client.sync()
            #expect(again.pushed == 0)
            #expect(again.pushedDuplicates == 0, "events the server holds were pushed again")
        }
        // New events still go.
        _ = try store.execute(.addBook(BookMetadata(title: "Later", pageCount: 120), status: .reading), book: BookID(),
                              context: CommandContext(reader: alice, occurredAt: Timestamp(Date()), timeZone: "UTC"))
        let later = try await client.sync()
        #expect(later.pushed == 1)
        #expect(later.pushedDuplicates == 0)
        #expect(try fixture.storedEventCount() == histories[0].events.count + 1)
    }
}
