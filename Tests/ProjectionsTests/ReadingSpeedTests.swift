import Testing
import ReadingEvents
@testable import Projections

/// The reading-speed view: which sessions count, the pages their end positions credit, months,
/// re-reads, and the time left of each home-list book at the book's or the reader's speed.
@Suite("Reading speed")
struct ReadingSpeedTests {
    let novel = BookID(), unread = BookID(), noPageCount = BookID(), reread = BookID()
    let evening = SessionID(), paused = SessionID(), tap = SessionID(), noEnd = SessionID(), samePage = SessionID()
    let open = SessionID(), discarded = SessionID(), firstRead = SessionID(), secondRead = SessionID()

    /// A reader in Seoul: `novel` (300 pages) timed five ways, `unread` and `noPageCount` on the
    /// home list without sessions, `reread` (100 pages) read twice, its second session across the
    /// end of June.
    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(title: "Novel"), status: .reading), book: novel, at: "2026-06-01T08:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-06-01"), targetDate: date("2026-06-30"), theme: nil), book: novel, at: "2026-06-01T08:00:01+09:00")
        try h.run(.recordPages(position: 50), book: novel, at: "2026-06-01T08:30:00+09:00")
        // 21:00-21:40 from p.50 to p.80: 30 pages in 40 minutes.
        try h.run(.startSession(evening), book: novel, at: "2026-06-01T21:00:00+09:00")
        try h.run(.finishSession(evening, endPosition: 80, durationSeconds: 2400), book: novel, at: "2026-06-01T21:40:00+09:00")
        // 12:00-12:20 and 12:50-13:10 (the pause does not count; the reported 3,000 s neither): p.80 to p.110.
        try h.run(.startSession(paused), book: novel, at: "2026-06-02T12:00:00+09:00")
        try h.run(.pauseSession(paused), book: novel, at: "2026-06-02T12:20:00+09:00")
        try h.run(.resumeSession(paused), book: novel, at: "2026-06-02T12:50:00+09:00")
        try h.run(.finishSession(paused, endPosition: 110, durationSeconds: 3000), book: novel, at: "2026-06-02T13:10:00+09:00")
        // 30 seconds: a tap, not counted (its 2 pages still reach the day totals).
        try h.run(.startSession(tap), book: novel, at: "2026-06-03T08:00:00+09:00")
        try h.run(.finishSession(tap, endPosition: 112, durationSeconds: 30), book: novel, at: "2026-06-03T08:00:30+09:00")
        // Half an hour without an end position: not counted.
        try h.run(.startSession(noEnd), book: novel, at: "2026-06-03T09:00:00+09:00")
        try h.run(.finishSession(noEnd, endPosition: nil, durationSeconds: 1800), book: novel, at: "2026-06-03T09:30:00+09:00")
        // Half an hour ending on the page already reached: counted, 0 pages.
        try h.run(.startSession(samePage), book: novel, at: "2026-06-04T10:00:00+09:00")
        try h.run(.finishSession(samePage, endPosition: 112, durationSeconds: 1800), book: novel, at: "2026-06-04T10:30:00+09:00")
        // An open timer and a discarded one count nothing.
        try h.run(.startSession(open), book: novel, at: "2026-06-05T07:00:00+09:00")
        try h.run(.startSession(discarded), book: novel, at: "2026-06-05T06:00:00+09:00")
        try h.run(.discardSession(discarded), book: novel, at: "2026-06-05T06:45:00+09:00")

        try h.run(.addBook(aladinMetadata(title: "Unread", pageCount: 200), status: .reading), book: unread, at: "2026-06-01T09:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-06-01"), targetDate: date("2026-07-31"), theme: nil), book: unread, at: "2026-06-01T09:00:01+09:00")
        try h.run(.addBook(aladinMetadata(title: "No page count", pageCount: nil), status: .reading), book: noPageCount, at: "2026-06-01T09:10:00+09:00")
        try h.run(.setGoal(startDate: date("2026-06-01"), targetDate: date("2026-07-31"), theme: nil), book: noPageCount, at: "2026-06-01T09:10:01+09:00")

        // A re-read: 100 pages in an hour, finished; then from 0 again, 50 pages in half an hour
        // from 23:40 on 30 June to 00:10 on 1 July (counted whole in June).
        try h.run(.addBook(aladinMetadata(title: "Reread", pageCount: 100), status: .reading), book: reread, at: "2026-06-10T08:00:00+09:00")
        try h.run(.startSession(firstRead), book: reread, at: "2026-06-10T20:00:00+09:00")
        try h.run(.finishSession(firstRead, endPosition: 100, durationSeconds: 3600), book: reread, at: "2026-06-10T21:00:00+09:00")
        try h.run(.finishBook(on: date("2026-06-10")), book: reread, at: "2026-06-10T21:01:00+09:00")
        try h.run(.startReadThrough, book: reread, at: "2026-06-20T08:00:00+09:00")
        try h.run(.startSession(secondRead), book: reread, at: "2026-06-30T23:40:00+09:00")
        try h.run(.finishSession(secondRead, endPosition: 50, durationSeconds: 1800), book: reread, at: "2026-07-01T00:10:00+09:00")
        return h
    }

    @Test func countedSessionsFollowTheRules() throws {
        let h = try history()
        let views = try h.fold()
        let novelView = try #require(try views.bookView(reader: h.reader, book: novel))
        let counted = CountedSession.counted(in: novelView)
        #expect(counted.map(\.session) == [evening, paused, samePage])
        #expect(counted.map(\.pages) == [30, 30, 0])
        #expect(counted.map(\.seconds) == [2400, 2400, 1800])
        #expect(counted.map(\.day) == [date("2026-06-01"), date("2026-06-02"), date("2026-06-04")])

        let rereadView = try #require(try views.bookView(reader: h.reader, book: reread))
        let again = CountedSession.counted(in: rereadView)
        #expect(again.map(\.pages) == [100, 50])
        #expect(again.map(\.seconds) == [3600, 1800])
        #expect(again.map(\.month) == [YearMonth(year: 2026, month: 6), YearMonth(year: 2026, month: 6)])
    }

    @Test func perBookPerMonthAndTimeLeft() throws {
        let h = try history()
        let views = try h.fold()
        let speed = try views.readingSpeed(reader: h.reader, asOf: instant("2026-07-02T12:00:00+09:00"), zone: zone("Asia/Seoul"))
        // Novel 60 pages in 6,600 s; Reread 150 pages in 5,400 s.
        #expect(speed.total(of: novel) == SpeedTotal(sessions: 3, pages: 60, seconds: 6600))
        #expect(speed.total(of: reread) == SpeedTotal(sessions: 2, pages: 150, seconds: 5400))
        #expect(speed.total(of: unread) == SpeedTotal())
        #expect(Set(speed.books.map(\.book)) == [novel, reread])
        #expect(speed.overall == SpeedTotal(sessions: 5, pages: 210, seconds: 12000))
        #expect(speed.overall.pagesPerHour == 63)
        #expect(speed.months == [MonthSpeed(month: YearMonth(year: 2026, month: 6), total: speed.overall)])
        #expect(speed.total(of: YearMonth(year: 2026, month: 7)) == SpeedTotal())

        // The home list by title: No page count, Novel, Unread.
        #expect(speed.timeLeft.map(\.title) == ["No page count", "Novel", "Unread"])
        let byBook = Dictionary(uniqueKeysWithValues: speed.timeLeft.map { ($0.book, $0) })
        // Novel: 188 pages left at its own 6,600 s / 60 pages = 20,680 s.
        #expect(byBook[novel] == TimeLeft(book: novel, title: "Novel", pagesLeft: 188, seconds: 20680, basis: .book))
        // Unread: 200 pages at the reader's 12,000 s / 210 pages = 11,428.57 s, rounded.
        #expect(byBook[unread] == TimeLeft(book: unread, title: "Unread", pagesLeft: 200, seconds: 11429, basis: .reader))
        #expect(byBook[noPageCount] == TimeLeft(book: noPageCount, title: "No page count", pagesLeft: nil, seconds: nil, basis: nil))
    }

    @Test func aBackDatedRecordReCreditsTheSessionsPages() throws {
        var h = try history()
        // Recorded later, dated 21:20 during the evening session: p.70, so the session's end at
        // p.80 credits 10 pages, not 30.
        try h.run(.recordPages(position: 70), book: novel, at: "2026-06-01T21:20:00+09:00", recordedAt: "2026-06-06T09:00:00+09:00")
        let views = try h.fold()
        let counted = CountedSession.counted(in: try #require(try views.bookView(reader: h.reader, book: novel)))
        #expect(counted.map(\.pages) == [10, 30, 0])
    }

    @Test func aReaderWithoutCountedSessionsHasNoSpeedAndNoEstimate() throws {
        var h = History(zone: "Asia/Seoul")
        let book = BookID(), session = SessionID()
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-06-01T08:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-06-01"), targetDate: date("2026-06-30"), theme: nil), book: book, at: "2026-06-01T08:00:01+09:00")
        try h.run(.recordPages(position: 40), book: book, at: "2026-06-01T08:30:00+09:00")
        try h.run(.startSession(session), book: book, at: "2026-06-02T08:00:00+09:00")
        try h.run(.finishSession(session, endPosition: nil, durationSeconds: 600), book: book, at: "2026-06-02T08:10:00+09:00")
        let speed = try h.fold().readingSpeed(reader: h.reader, asOf: instant("2026-06-03T12:00:00+09:00"), zone: zone("Asia/Seoul"))
        #expect(speed.overall == SpeedTotal())
        #expect(speed.overall.pagesPerHour == nil)
        #expect(speed.books.isEmpty && speed.months.isEmpty)
        #expect(speed.timeLeft == [TimeLeft(book: book, title: "채식주의자", pagesLeft: 260, seconds: nil, basis: nil)])
    }

    @Test func secondsForPagesRoundsAndNeverOverflows() {
        #expect(SpeedTotal(sessions: 1, pages: 3, seconds: 10).seconds(forPages: 1) == 3)   // 3.33
        #expect(SpeedTotal(sessions: 1, pages: 3, seconds: 10).seconds(forPages: 2) == 7)   // 6.67
        #expect(SpeedTotal(sessions: 1, pages: 0, seconds: 10).seconds(forPages: 5) == nil)
        #expect(SpeedTotal(sessions: 1, pages: 2, seconds: 10).seconds(forPages: -1) == nil)
        // Past Int.max: capped, never a trap.
        #expect(SpeedTotal(sessions: 1, pages: 1, seconds: Int.max / 2).seconds(forPages: 4) == Int.max)
        // A product that overflows with a result that fits: computed in floating point.
        #expect(SpeedTotal(sessions: 1, pages: 1 << 40, seconds: 1 << 40).seconds(forPages: 1 << 30) == 1 << 30)
    }
}
