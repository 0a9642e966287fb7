import Testing
import ReadingEvents
@testable import Projections

/// Issue 25, cases 1-3: a re-added book's finish, a did-not-finish book resumed by a timed
/// session, and a session whose finish sorts before its start. Times are in Seoul (+09:00); events
/// that the decide step now refuses (they still arrive from imports and other replicas) are
/// appended raw, in the order given, which is their canonical order (no origins: log order).
@Suite("View rules (2): re-added, resumed, finished before started")
struct ViewRulesTwoTests {
    let book = BookID(), other = BookID()

    // MARK: Case 1: a finish after the book is removed and added again

    /// A 200-page book: p.120 on 4/25, p.200 on 5/1, finished 5/2; removed 5/5, added again 5/6
    /// (status reading), p.200 again on 5/12 and finished 5/12, with no new read-through.
    /// Pages: 120 on 4/25, 200 - 120 = 80 on 5/1, 200 - 200 = 0 on 5/12 (one read-through).
    /// Finishes: the one of 5/2 only (two finishes of one read-through count once): May 1, the
    /// shelf lists 5/2 once, the book is finished after the re-add.
    @Test func aFinishAfterTheBookIsRemovedAndAddedAgainCountsOnce() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(pageCount: 200), status: .reading), book: book, at: "2025-04-20T09:00:00+09:00")
        try h.run(.recordPages(position: 120), book: book, at: "2025-04-25T21:00:00+09:00")
        try h.run(.recordPages(position: 200), book: book, at: "2025-05-01T21:00:00+09:00")
        try h.run(.finishBook(on: date("2025-05-02")), book: book, at: "2025-05-02T21:00:00+09:00")
        try h.run(.removeBook, book: book, at: "2025-05-05T09:00:00+09:00")
        try h.run(.addBook(aladinMetadata(pageCount: 200), status: .reading), book: book, at: "2025-05-06T09:00:00+09:00")

        // The decide step: the re-added book continues its finished read-through, so pages and a
        // finish are refused until a new read-through starts.
        #expect(h.state(of: book).isFinished)
        #expect(h.state(of: book).status == .finished)
        #expect(throws: ValidationError.self) { try h.run(.finishBook(on: date("2025-05-12")), book: book, at: "2025-05-12T21:00:00+09:00") }
        #expect(throws: ValidationError.self) { try h.run(.recordPages(position: 200), book: book, at: "2025-05-12T20:00:00+09:00") }

        // The same facts from an import or another replica are folded, and count once.
        h.append(.pagesRead(PagesRead(book: book, position: 200)), at: "2025-05-12T20:00:00+09:00")
        h.append(.bookFinished(BookFinished(book: book, finishedOn: date("2025-05-12"))), at: "2025-05-12T21:00:00+09:00")
        let store = try h.fold()
        let r = h.reader
        let months = try store.monthly(reader: r, in: YearMonth(year: 2025, month: 4)...YearMonth(year: 2025, month: 5))
        #expect(months.map(\.total.pages) == [120, 80])
        #expect(months.map(\.total.finishes) == [0, 1])
        let shelf = try store.bookshelf(reader: r, showing: .finished)
        #expect(shelf.items.map(\.finishes) == [[date("2025-05-02")]])
        #expect(try store.summary(reader: r).finished == 1)
        #expect(try store.bookView(reader: r, book: book)?.isFinished == true)
        #expect(try store.bookView(reader: r, book: book)?.status == .finished)
        #expect(try store.bookView(reader: r, book: book)?.decision == h.state(of: book))
    }

    /// Across New Year: finished 2025-12-30, removed and added again, finished again 2026-01-03.
    /// 2025: one book, 300 pages; 2026: nothing of it (the 2026 finish is the same read-through's
    /// second finish). The 2026 challenge (12 books) has 0 done; the category breakdown and the
    /// year in review of 2026 count no finished book.
    @Test func aSecondFinishAcrossNewYearCountsInNoYearViewOfTheNewYear() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.setChallenge(year: 2026, books: 12, pages: nil), at: "2025-12-01T09:00:00+09:00")
        try h.run(.addBook(aladinMetadata(pageCount: 300), status: .reading), book: book, at: "2025-12-01T09:00:00+09:00")
        try h.run(.recordPages(position: 300), book: book, at: "2025-12-29T21:00:00+09:00")
        try h.run(.finishBook(on: date("2025-12-30")), book: book, at: "2025-12-30T21:00:00+09:00")
        try h.run(.removeBook, book: book, at: "2026-01-01T09:00:00+09:00")
        try h.run(.addBook(aladinMetadata(pageCount: 300), status: .reading), book: book, at: "2026-01-02T09:00:00+09:00")
        h.append(.pagesRead(PagesRead(book: book, position: 300)), at: "2026-01-03T20:00:00+09:00")
        h.append(.bookFinished(BookFinished(book: book, finishedOn: date("2026-01-03"))), at: "2026-01-03T21:00:00+09:00")
        let store = try h.fold()
        let r = h.reader

        #expect(try store.categoryBreakdown(reader: r, period: .year(2025)).finishedBooks == 1)
        #expect(try store.categoryBreakdown(reader: r, period: .year(2025)).pages == 300)
        #expect(try store.categoryBreakdown(reader: r, period: .year(2026)).finishedBooks == 0)
        #expect(try store.categoryBreakdown(reader: r, period: .allTime).finishedBooks == 1)
        let challenge = try store.challengeProgress(reader: r, year: 2026, today: date("2026-01-10"))
        #expect(challenge.booksFinished == 0)
        #expect(challenge.books?.done == 0)
        #expect(try store.yearInReview(reader: r, year: 2026).booksFinished == 0)
        #expect(try store.yearInReview(reader: r, year: 2025).booksFinished == 1)
        let months = try store.monthly(reader: r, in: YearMonth(year: 2025, month: 12)...YearMonth(year: 2026, month: 1))
        #expect(months.map(\.total.finishes) == [1, 0])
    }

    // MARK: Case 2: a did-not-finish book resumed by a timed session

    /// A 192-page book with a goal 4/8 → 5/3, p.50 on 4/9, marked did-not-finish on 4/10. On 5/1
    /// a timer runs 21:00-21:30 and ends at p.80: the end position is a page mark like a page
    /// record, so the book is read again and back on the home list with its goal.
    /// Pages left 192 - 80 = 112; days left 5/1 → 5/3 = 2; needed ⌈112 / 3⌉ = 38 a day.
    /// A progress correction (p.40) is not a page mark and brings nothing back.
    @Test func aDidNotFinishBookResumedByATimedSessionIsBackOnTheHomeList() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(title: "82년생 김지영", pageCount: 192), status: .reading), book: book,
                  at: "2025-04-08T09:00:00+09:00")
        try h.run(.setGoal(startDate: date("2025-04-08"), targetDate: date("2025-05-03"), theme: nil), book: book,
                  at: "2025-04-08T09:01:00+09:00")
        try h.run(.recordPages(position: 50), book: book, at: "2025-04-09T21:00:00+09:00")
        try h.run(.setStatus(.didNotFinish), book: book, at: "2025-04-10T22:00:00+09:00")
        let r = h.reader
        let seoul = zone("Asia/Seoul"), may1 = instant("2025-05-01T23:00:00+09:00")

        var corrected = h
        try corrected.run(.correctProgress(position: 40), book: book, at: "2025-05-01T21:00:00+09:00")
        let afterCorrection = try corrected.fold()
        #expect(try afterCorrection.homeList(reader: r, asOf: may1, zone: seoul).items.isEmpty)
        #expect(try afterCorrection.bookDetail(reader: r, book: book)?.goalStatus == .abandoned)
        #expect(corrected.state(of: book).status == .didNotFinish)

        let session = SessionID()
        try h.run(.startSession(session), book: book, at: "2025-05-01T21:00:00+09:00")
        try h.run(.finishSession(session, endPosition: 80, durationSeconds: 1_800), book: book, at: "2025-05-01T21:30:00+09:00")
        #expect(h.state(of: book).status == .reading)
        let store = try h.fold()
        let home = try store.homeList(reader: r, asOf: may1, zone: seoul)
        #expect(home.items.map(\.book) == [book])
        let item = try #require(home.items.first)
        #expect(item.position == 80 && item.pagesLeft == 112 && item.daysLeft == 2 && item.pagesPerDayNeeded == 38)
        #expect(try store.goalBooks(reader: r) == [book])
        #expect(try store.bookDetail(reader: r, book: book)?.goalStatus == .active)
        #expect(try store.summary(reader: r).didNotFinish == 0)
        #expect(try store.summary(reader: r).reading == 1)
        // 5/1: 80 - 50 = 30 pages and 30 minutes.
        #expect(pages(try store.dailyPages(reader: r, in: days("2025-05-01", "2025-05-01"))) == [30])
        #expect(seconds(try store.dailyPages(reader: r, in: days("2025-05-01", "2025-05-01"))) == [1_800])
    }

    // MARK: Case 3: a session whose finish sorts before its start

    /// A timer on 3/5 21:00-21:45 at p.120 (2,700 s reported), whose finish sorts before its start
    /// (an import, or a replica that recorded the start after seeing the finish). It is closed:
    /// no open session, in the views and in the decision state. Its minutes are those of the
    /// start and finish in order: 21:00-21:45 = 2,700 s on 3/5, all in the evening bucket, and
    /// p.120 credits 120 pages. A second timer, discarded before its start sorts in, is gone:
    /// not open, 0 s.
    @Test func aSessionWhoseFinishSortsBeforeItsStartIsClosed() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(pageCount: 300), status: .reading), book: book, at: "2025-03-01T09:00:00+09:00")
        let finishedFirst = SessionID(), discardedFirst = SessionID()
        h.append(.sessionFinished(SessionFinished(session: finishedFirst, book: book, endPosition: 120, durationSeconds: 2_700)),
                 at: "2025-03-05T21:45:00+09:00")
        h.append(.sessionStarted(SessionStarted(session: finishedFirst, book: book)), at: "2025-03-05T21:00:00+09:00")
        h.append(.sessionDiscarded(SessionDiscarded(session: discardedFirst, book: book)), at: "2025-03-06T21:10:00+09:00")
        h.append(.sessionStarted(SessionStarted(session: discardedFirst, book: book)), at: "2025-03-06T21:00:00+09:00")
        let store = try h.fold()
        let r = h.reader

        #expect(try store.openSessions(reader: r).isEmpty)
        #expect(h.state(of: book).openSessions.isEmpty)
        let view = try #require(try store.bookView(reader: r, book: book))
        #expect(view.decision == h.state(of: book))
        #expect(view.sessions.map(\.session) == [finishedFirst])
        #expect(view.sessions.first?.startedAt == instant("2025-03-05T21:00:00+09:00"))
        #expect(view.sessions.first?.measuredSeconds == 2_700)
        let march = try store.dailyPages(reader: r, in: days("2025-03-05", "2025-03-06"))
        #expect(seconds(march) == [2_700, 0])
        #expect(pages(march) == [120, 0])
        #expect(try store.timeOfDay(reader: r).seconds == [0, 0, 0, 2_700])
        // The decide step: neither session can be started, paused or finished again.
        #expect(throws: ValidationError.self) { try h.run(.startSession(finishedFirst), book: book, at: "2025-03-07T21:00:00+09:00") }
        #expect(throws: ValidationError.self) { try h.run(.pauseSession(discardedFirst), book: book, at: "2025-03-07T21:00:00+09:00") }
    }
}
