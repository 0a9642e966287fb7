import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// Issue 25, cases 1-3 through the real store: the histories of `ViewRulesTwoTests` appended as
/// an export of another replica (in the order given, which one device's decide step would not
/// produce: they arise when several devices' events meet), with the fixed results in the persisted
/// views and decision records, equal to a fresh fold and to a rebuild.
@Suite("View rules (2) in the store")
struct ViewRulesTwoStoreTests {
    typealias F = Facade
    let reader = ReaderID()

    func envelope(_ event: ReadingEvent, _ time: String) -> EventEnvelope {
        EventEnvelope(reader: reader, occurredAt: F.at(time), timeZone: F.seoul, recordedAt: F.at(time), event: event)
    }

    /// Book 1 (200 pages): p.200 on 5/1, finished 5/2, removed, added again, p.200 and finished
    /// again 5/12: May 1 finish, the shelf lists 5/2 once. Book 2 (192 pages, goal 5/1 → 5/31):
    /// p.50, did-not-finish, then a timer 5/20 21:00-21:30 ending at p.80: on the home list,
    /// 30 pages and 1,800 s on 5/20. Book 3: a timer finished (21:45, p.120) before its start
    /// (21:00) sorts in, on 5/25: no open session, 2,700 s and 120 pages on 5/25.
    @Test func reAddedResumedAndFinishedBeforeStartedThroughTheStoreAndARebuild() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let finished = BookID(), resumed = BookID(), timed = BookID()
            let session = SessionID(), resumedSession = SessionID()
            func metadata(_ pages: Int) -> BookMetadata { BookMetadata(title: "책 \(pages)", authors: "한강 (지은이)", pageCount: pages) }
            let history: [EventEnvelope] = [
                envelope(.bookAdded(BookAdded(book: finished, metadata: metadata(200), status: .reading)), "2025-04-20T09:00:00+09:00"),
                envelope(.pagesRead(PagesRead(book: finished, position: 200)), "2025-05-01T21:00:00+09:00"),
                envelope(.bookFinished(BookFinished(book: finished, finishedOn: F.day("2025-05-02"))), "2025-05-02T21:00:00+09:00"),
                envelope(.bookRemoved(BookRemoved(book: finished)), "2025-05-05T09:00:00+09:00"),
                envelope(.bookAdded(BookAdded(book: finished, metadata: metadata(200), status: .reading)), "2025-05-06T09:00:00+09:00"),
                envelope(.pagesRead(PagesRead(book: finished, position: 200)), "2025-05-12T20:00:00+09:00"),
                envelope(.bookFinished(BookFinished(book: finished, finishedOn: F.day("2025-05-12"))), "2025-05-12T21:00:00+09:00"),

                envelope(.bookAdded(BookAdded(book: resumed, metadata: metadata(192), status: .reading)), "2025-05-01T09:00:00+09:00"),
                envelope(.goalSet(GoalSet(book: resumed, startDate: F.day("2025-05-01"), targetDate: F.day("2025-05-31"), theme: nil)),
                         "2025-05-01T09:01:00+09:00"),
                envelope(.pagesRead(PagesRead(book: resumed, position: 50)), "2025-05-03T21:00:00+09:00"),
                envelope(.statusChanged(ReadingStatusChanged(book: resumed, status: .didNotFinish)), "2025-05-04T21:00:00+09:00"),
                envelope(.sessionStarted(SessionStarted(session: resumedSession, book: resumed)), "2025-05-20T21:00:00+09:00"),
                envelope(.sessionFinished(SessionFinished(session: resumedSession, book: resumed, endPosition: 80, durationSeconds: 1_800)),
                         "2025-05-20T21:30:00+09:00"),

                envelope(.bookAdded(BookAdded(book: timed, metadata: metadata(300), status: .reading)), "2025-05-24T09:00:00+09:00"),
                envelope(.sessionFinished(SessionFinished(session: session, book: timed, endPosition: 120, durationSeconds: 2_700)),
                         "2025-05-25T21:45:00+09:00"),
                envelope(.sessionStarted(SessionStarted(session: session, book: timed)), "2025-05-25T21:00:00+09:00"),
            ]
            // Stamped by one peer replica in the order given, so canonical order is that order: its
            // hybrid clock (the later of the event's recordedAt and the last stamp + 1, with
            // recordedAt raised to a day before the stamp when the clock ran further ahead, as a
            // store stamps; issue 36).
            let peer = ReplicaID()
            var clock: UInt64 = 0
            let exported = history.enumerated().map { index, envelope in
                var copy = envelope
                let next = EventOrigin.nextStamp(after: clock, recordedAt: envelope.recordedAt)!
                clock = next.stamp
                copy.recordedAt = next.recordedAt
                copy.origin = EventOrigin(stamp: clock, replica: peer, sequence: UInt64(index + 1))
                return copy
            }
            #expect(try store.appendRecorded(exported) == history.count)

            let may = YearMonth(year: 2025, month: 5)
            try store.withViews { views in
                #expect(try views.monthly(reader: reader, in: may...may).map(\.total.finishes) == [1])
                #expect(try views.bookshelf(reader: reader, showing: .finished).items.map(\.finishes) == [[F.day("2025-05-02")]])
                let home = try views.homeList(reader: reader, asOf: F.at("2025-05-26T12:00:00+09:00"), zone: F.seoul)
                #expect(home.items.map(\.book) == [resumed])
                #expect(home.items.map(\.position) == [80])
                #expect(try views.openSessions(reader: reader).isEmpty)
                let days = try views.dailyPages(reader: reader, in: F.day("2025-05-20")...F.day("2025-05-25"))
                #expect(days.map(\.total.pages) == [30, 0, 0, 0, 0, 120])
                #expect(days.map(\.total.seconds) == [1_800, 0, 0, 0, 0, 2_700])
            }
            // The decision records the commands are decided on hold the same rules.
            for book in [finished, resumed, timed] {
                let stored = try store.withViews { try $0.bookView(reader: reader, book: book)?.decision }
                let folded = BookState(envelopes: history.filter { $0.event.book == book })
                #expect(stored == folded)
            }
            #expect(try store.execute(.recordPages(position: 100), book: resumed, context: F.context(reader, "2025-05-26T21:00:00+09:00")).count == 1)
            #expect(throws: ValidationError.self) {
                try store.execute(.finishBook(on: F.day("2025-05-26")), book: finished, context: F.context(reader, "2025-05-26T21:00:00+09:00"))
            }

            // Rebuilding gives the same views.
            let digest = try store.viewDigest()
            #expect(try store.freshFoldDigest() == digest)
            #expect(try store.rebuild().digest == digest)
            #expect(try store.viewDigest() == digest)
        }
    }
}
