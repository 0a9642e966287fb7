import EventStoreLMDB
import Foundation
import ReadingEvents
import SyncWire
import Testing
import TestSupport
@testable import ReadingSync

/// What a fake sync server holds: the event IDs it stored.
///
/// `@unchecked Sendable`: `ids` is only touched under `lock`.
final class FakeServerState: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [EventID] = []
    var stored: [EventID] { lock.withLock { ids } }
    func add(_ more: [EventID]) { lock.withLock { ids += more } }
}

/// Issue 36: the sync client against misbehaving or strict servers (a loopback HTTP server in
/// the test): a record refused for its size is set aside and never stops the push of the others
/// (finding 3); a server that always answers `"more": true` does not keep the pull looping.
@Suite(.serialized) struct SyncClientBoundsTests {
    static let at = Timestamp(iso8601: "2026-03-01T09:00:00+09:00")!

    /// A store of `reader` with a book, two page records, a memo of 10,000 Hangul characters
    /// (30,000 bytes: a record of about 40 KB in base64) and a page record after it.
    static func store(_ dir: TempDirectory, _ reader: ReaderID) throws -> (ReadingStore, memo: EventID, all: [EventID]) {
        let store = try ReadingStore.open(at: dir.child("phone"))
        let book = BookID()
        var minute: Int64 = 0
        func run(_ command: BookCommand) throws -> EventID {
            minute += 1
            let at = Self.at.adding(seconds: 60 * minute)
            return try store.execute(command, book: book, context: CommandContext(reader: reader, occurredAt: at, timeZone: "Asia/Seoul"))[0].eventID
        }
        var all: [EventID] = []
        all.append(try run(.addBook(BookMetadata(title: "긴 책", pageCount: 300), status: .reading)))
        all.append(try run(.recordPages(position: 10)))
        let memo = try run(.writeMemo(MemoID(), text: String(repeating: "한", count: Limits.memoLength), page: 5))
        all.append(memo)
        all.append(try run(.recordPages(position: 20)))
        return (store, memo, all)
    }

    /// The push and pull endpoints of a sync server whose request bodies hold at most `limit`
    /// bytes (413 `body_too_large` beyond, as the real server answers); pulls bring nothing.
    static func pushServer(limit: Int, _ state: FakeServerState) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { request in
            if request.target.hasPrefix("/v1/partners") { return (200, #"{"partners":[]}"#) }
            let empty = #"{"events":[],"next":"c1","more":false}"#
            guard request.method == "POST" else { return (200, empty) }
            guard request.body.count <= limit else {
                return (413, #"{"error":"body_too_large","field":"body","message":"a request body holds at most \#(limit) bytes"}"#)
            }
            let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            var ids: [EventID] = []
            for event in object?["events"] as? [[String: Any]] ?? [] {
                guard let text = event["record"] as? String, let bytes = Data(base64Encoded: text),
                      let envelope = try? BinaryEventCodec.decodeRecord([UInt8](bytes)) else {
                    return (400, #"{"error":"malformed_record","field":"events","message":"not a record"}"#)
                }
                ids.append(envelope.eventID)
            }
            state.add(ids)
            let page = request.target.contains("pull=1") ? #","page":\#(empty)"# : ""
            return (200, #"{"stored":\#(ids.count),"duplicates":0,"lastArrival":0\#(page)}"#)
        }
    }

    static func token(_ reader: ReaderID) -> String { "\(reader.uuid.uuidString).secret" }

    /// The server answers 413 for the memo's request (its body limit is 20,000 bytes): the memo
    /// is set aside (status 413, `event_too_large`, named), every other event is pushed, and the
    /// next sync pushes nothing and fails nothing. Before: `event_too_large` was thrown, and no
    /// later event of the device was pushed again.
    @Test func aRecordTheServerRefusesForItsSizeIsSetAsideAndTheRestIsPushed() async throws {
        let dir = try TempDirectory.created(prefix: "sync-413")
        defer { dir.remove() }
        let reader = ReaderID()
        let (store, memo, all) = try Self.store(dir, reader)
        let state = FakeServerState()
        let server = try Self.pushServer(limit: 20_000, state)
        defer { server.stop() }
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader), maxAttempts: 1)
        let report = try await client.sync()
        #expect(report.refused.map(\.eventID) == [memo], "\(report)")
        #expect(report.refused.first?.status == 413 && report.refused.first?.code == "event_too_large", "\(report)")
        #expect(report.refused.first?.message.contains(memo.description) == true, "\(report)")
        #expect(Set(state.stored) == Set(all.filter { $0 != memo }) && report.pushed == all.count - 1, "\(report)")
        #expect(try client.refusedRecords().map(\.eventID) == [memo])
        let again = try await client.sync()
        #expect(again.pushed == 0 && again.refused.isEmpty, "\(again)")
        #expect(state.stored.count == all.count - 1)
    }

    /// The memo's request alone is larger than the client's own limit: it is set aside without
    /// being sent, and the rest is pushed.
    @Test func aRecordOverTheClientsOwnLimitIsSetAsideUnsentAndTheRestIsPushed() async throws {
        let dir = try TempDirectory.created(prefix: "sync-limit")
        defer { dir.remove() }
        let reader = ReaderID()
        let (store, memo, all) = try Self.store(dir, reader)
        let state = FakeServerState()
        let server = try Self.pushServer(limit: 64 << 20, state)
        defer { server.stop() }
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader), maxPushBytes: 20_000, maxAttempts: 1)
        let report = try await client.sync()
        #expect(report.refused.map(\.eventID) == [memo] && report.refused.first?.code == "event_too_large", "\(report)")
        #expect(Set(state.stored) == Set(all.filter { $0 != memo }), "\(state.stored)")
        // Retried with a client that takes larger requests: pushed.
        let larger = try SyncClient(store: store, server: server.url, token: Self.token(reader), maxAttempts: 1)
        let retried = try await larger.sync(retryingRefused: true)
        #expect(retried.pushed == 1 && retried.refused.isEmpty, "\(retried)")
        #expect(Set(state.stored) == Set(all))
    }

    /// A server that answers every pull with no events and `"more": true` (the same cursor):
    /// the pull stops at once with `pull_no_progress`. Before: the client kept asking (626
    /// requests in 30 s; here the fake server gives up after 200).
    @Test func aServerAlwaysAnsweringMoreWithNothingStopsThePull() async throws {
        let dir = try TempDirectory.created(prefix: "sync-more")
        defer { dir.remove() }
        let reader = ReaderID()
        let store = try ReadingStore.open(at: dir.child("phone"))
        // Bounded by the test too: after 200 requests it answers "more": false.
        let counter = FakeServerState()
        let server = try LoopbackHTTPServer { request in
            if request.target.hasPrefix("/v1/partners") { return (200, #"{"partners":[]}"#) }
            counter.add([EventID()])
            return (200, #"{"events":[],"next":"c1","more":\#(counter.stored.count < 200)}"#)
        }
        defer { server.stop() }
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader), maxAttempts: 1)
        let error = await #expect(throws: SyncError.self) { try await client.sync() }
        #expect(error?.code == "pull_no_progress" && error?.message.contains("more") == true, "\(String(describing: error))")
        #expect(server.pulls.count <= 2, "\(server.pulls.count) requests")
    }

    /// A server that answers every pull with one event (held after the first) under a new
    /// cursor and `"more": true`: the pull stops after ``SyncClient/maxPullPages`` pages with
    /// `pull_page_limit`, keeping what it merged; the cursor is saved.
    @Test func aServerAlwaysAnsweringMoreWithEventsStopsAfterThePageLimit() async throws {
        let dir = try TempDirectory.created(prefix: "sync-pages")
        defer { dir.remove() }
        let reader = ReaderID()
        let (other, _, _) = try Self.store(dir, reader)
        let record = try #require(try other.changes(since: VersionVector()).first)
        let encoded = Data(BinaryEventCodec.encodeRecord(record)).base64EncodedString()
        let store = try ReadingStore.open(at: dir.child("tablet"))
        let counter = FakeServerState()
        let server = try LoopbackHTTPServer { request in
            if request.target.hasPrefix("/v1/partners") { return (200, #"{"partners":[]}"#) }
            counter.add([EventID()])
            let n = counter.stored.count
            return (200, #"{"events":[{"reader":"\#(reader.uuid.uuidString)","arrival":\#(n),"eventID":"\#(record.eventID)","record":"\#(encoded)"}],"next":"c\#(n)","more":\#(n < 1_500)}"#)
        }
        defer { server.stop() }
        let client = try SyncClient(store: store, server: server.url, token: Self.token(reader), maxAttempts: 1)
        let error = await #expect(throws: SyncError.self) { try await client.sync() }
        #expect(error?.code == "pull_page_limit" && error?.message.contains("sync again") == true, "\(String(describing: error))")
        // 1,000: the client's default `maxPullPages`.
        #expect(server.pulls.count == 1_000, "\(server.pulls.count) requests")
        #expect(try store.events().map(\.eventID) == [record.eventID])
        #expect(try store.transportState("sync-server \(server.url.absoluteString) \(reader) cursor").map { String(decoding: $0, as: UTF8.self) }
                == "c1000")
    }

    /// Every valid record fits one push request of the server's default limit (4 MiB, base64
    /// included): the largest texts (4-byte characters at every character limit, which is the
    /// byte limit) and the largest unknown payload (1 MiB).
    @Test func everyValidRecordFitsOnePushRequest() throws {
        func emoji(_ count: Int) -> String { String(repeating: "😀", count: count) }
        let reader = ReaderID(), book = BookID()
        let metadata = BookMetadata(title: emoji(BookMetadata.maxTitleLength), subtitle: emoji(Limits.subtitleLength),
                                    authors: emoji(Limits.authorsLength), publisher: emoji(Limits.publisherLength),
                                    pageCount: 100, categoryPath: emoji(Limits.categoryPathLength),
                                    coverURL: emoji(Limits.urlLength), productLink: emoji(Limits.urlLength))
        let tag = "X" + String(repeating: "y", count: Limits.typeTagLength - 1)
        let events: [ReadingEvent] = [
            .bookAdded(BookAdded(book: book, metadata: metadata, status: .reading)),
            .memoWritten(MemoWritten(memo: MemoID(), book: book, text: emoji(Limits.memoLength), page: 1)),
            .sentenceCollected(SentenceCollected(sentence: SentenceID(), book: book, text: emoji(Limits.sentenceLength), page: 1)),
            .profileUpdated(ProfileUpdated(nickname: emoji(Limits.nicknameLength), imageFileName: emoji(Limits.imageFileNameLength),
                                           theme: Theme(rawValue: emoji(Limits.themeLength)))),
            .unknown(UnknownEvent(type: tag, schemaVersion: 1, payload: [UInt8](repeating: 0xFF, count: Limits.unknownPayloadBytes))),
        ]
        for event in events {
            let envelope = EventEnvelope(reader: reader, occurredAt: Self.at, timeZone: try ZoneID("Asia/Seoul", field: "timeZone"),
                                         recordedAt: Self.at, event: event,
                                         origin: EventOrigin(stamp: UInt64(Self.at.microseconds), replica: ReplicaID(), sequence: 1))
            try envelope.validateReplicated()
            let size = SyncClient.pushBodySize([SyncClient.pushRecord(envelope)])
            #expect(size <= SyncClient.defaultMaxPushBytes, "\(event.type.tag): \(size) bytes")
        }
    }
}
