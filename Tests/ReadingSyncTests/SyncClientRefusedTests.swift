import EventStoreLMDB
import Foundation
import ReadingEvents
import SyncWire
import Testing
import TestSupport
@testable import ReadingSync

/// Every record the server refuses is kept aside, however many: none is dropped from the list
/// (the acknowledged vector moves over them, so a dropped one would never be offered again).
/// Before, the list kept the newest 100 (and at most 60,000 bytes of JSON): the others were
/// acknowledged entries that never reached the server.
@Suite(.serialized) struct SyncClientRefusedTests {
    static let at = Timestamp(iso8601: "2026-03-01T09:00:00+09:00")!

    /// A push server that refuses every record with 409 `origin_taken` while `refusing` is set
    /// (as the real server does while another reader's events hold the origins), then stores them.
    final class ConflictServerState: @unchecked Sendable {
        // `@unchecked Sendable`: every field is only touched under `lock`.
        private let lock = NSLock()
        private var ids: Set<EventID> = []
        private var refuse = true
        var stored: Set<EventID> { lock.withLock { ids } }
        var refusing: Bool {
            get { lock.withLock { refuse } }
            set { lock.withLock { refuse = newValue } }
        }
        func add(_ more: [EventID]) { lock.withLock { ids.formUnion(more) } }
    }

    static func conflictServer(_ state: ConflictServerState) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { request in
            if request.target.hasPrefix("/v1/partners") { return (200, #"{"partners":[]}"#) }
            let empty = #"{"events":[],"next":"c1","more":false}"#
            guard request.method == "POST" else { return (200, empty) }
            let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            var ids: [EventID] = []
            for event in object?["events"] as? [[String: Any]] ?? [] {
                guard let text = event["record"] as? String, let bytes = Data(base64Encoded: text),
                      let envelope = try? BinaryEventCodec.decodeRecord([UInt8](bytes)) else {
                    return (400, #"{"error":"malformed_record","field":"events","message":"not a record"}"#)
                }
                ids.append(envelope.eventID)
            }
            if state.refusing, !ids.isEmpty {
                return (409, #"{"error":"origin_taken","field":"origin","message":"another reader's event holds this origin on the server"}"#)
            }
            state.add(ids)
            let page = request.target.contains("pull=1") ? #","page":\#(empty)"# : ""
            return (200, #"{"stored":\#(ids.count),"duplicates":0,"lastArrival":0\#(page)}"#)
        }
    }

    /// A store of `reader` with a book and `count - 1` page records: `count` events.
    static func store(_ dir: TempDirectory, _ reader: ReaderID, count: Int) throws -> (ReadingStore, [EventID]) {
        let store = try ReadingStore.open(at: dir.child("phone"))
        let book = BookID()
        let context = { (minute: Int) in
            CommandContext(reader: reader, occurredAt: Self.at.adding(seconds: 60 * Int64(minute)), timeZone: "Asia/Seoul")
        }
        var all = try store.execute(.addBook(BookMetadata(title: "긴 책", pageCount: 1_000), status: .reading), book: book,
                                    context: context(0)).map(\.eventID)
        for n in 1..<count {
            all += try store.execute(.recordPages(position: n), book: book, context: context(n)).map(\.eventID)
        }
        return (store, all)
    }

    /// 250 records refused with a conflict, then the cause is gone: every one of them reaches the
    /// server at the next sync after the retry interval (here zero), and at a sync asked to retry.
    @Test(arguments: [false, true])
    func everyRefusedRecordIsKeptAndReachesTheServerOnceTheCauseIsGone(retrying: Bool) async throws {
        let dir = try TempDirectory.created(prefix: "sync-refused")
        defer { dir.remove() }
        let reader = ReaderID()
        let (store, all) = try Self.store(dir, reader, count: 250)
        #expect(all.count == 250)
        let state = ConflictServerState()
        let server = try Self.conflictServer(state)
        defer { server.stop() }
        let token = "\(reader.uuid.uuidString).secret"
        let first = try SyncClient(store: store, server: server.url, token: token, pushBatch: 100, maxAttempts: 1)
        let refused = try await first.sync()
        #expect(refused.refused.count == 250 && refused.pushed == 0, "\(refused.refused.count) refused, \(refused.pushed) pushed")
        let listed = try first.refusedRecords()
        #expect(listed.count == 250, "\(listed.count) of 250 refused records kept aside")
        #expect(Set(listed.map(\.eventID)) == Set(all))
        // Listed in canonical order (the order the store holds them).
        #expect(listed.map(\.eventID) == all)
        #expect(state.stored.isEmpty)

        state.refusing = false
        let client = try SyncClient(store: store, server: server.url, token: token, maxAttempts: 1,
                                    refusedRetryInterval: retrying ? .seconds(3600) : .zero)
        let report = try await client.sync(retryingRefused: retrying)
        #expect(report.pushed == 250 && report.refused.isEmpty, "\(report.pushed) pushed, \(report.refused.count) refused")
        #expect(state.stored == Set(all), "\(state.stored.count) of 250 refused records reached the server")
        #expect(try client.refusedRecords().isEmpty)
        let again = try await client.sync()
        #expect(again.pushed == 0 && again.refused.isEmpty)
    }
}
