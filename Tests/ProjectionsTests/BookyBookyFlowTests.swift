import Testing
import ReadingEvents
@testable import Projections

/// The BookyBooky flow end to end: add a book from Aladin metadata, set a goal, record pages on
/// several days in Asia/Seoul (one at 23:50, one at 00:10), time a session, collect sentences,
/// rate, like and finish before the target; then every view, with the values worked out by hand.
@Suite("BookyBooky flow")
struct BookyBookyFlowTests {
    let book = BookID()
    let sentence1 = SentenceID(), sentence2 = SentenceID()
    let session = SessionID()

    /// The log, and how many events it held at the two home-list checkpoints.
    func history() throws -> (History, afterSession: Int, afterMarch14: Int) {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .wantToRead), book: book, at: "2026-03-01T09:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-03-01"), targetDate: date("2026-03-20"), theme: "orange"),
                  book: book, at: "2026-03-01T09:01:00+09:00")
        try h.run(.recordPages(position: 30), book: book, at: "2026-03-01T21:00:00+09:00")   // 03-01 +30 evening
        try h.run(.recordPages(position: 60), book: book, at: "2026-03-02T23:50:00+09:00")   // 03-02 +30 evening
        try h.run(.recordPages(position: 80), book: book, at: "2026-03-03T00:10:00+09:00")   // 03-03 +20 night
        try h.run(.recordPages(position: 100), book: book, at: "2026-03-04T07:30:00+09:00")  // 03-04 +20 morning
        try h.run(.startSession(session), book: book, at: "2026-03-05T13:00:00+09:00")
        try h.run(.finishSession(session, endPosition: 150, durationSeconds: 2700), book: book,
                  at: "2026-03-05T13:45:00+09:00")                                           // 03-05 +50 afternoon, 45 min
        try h.run(.collectSentence(sentence1, text: "나는 꿈을 꾸었어.", page: 120), book: book, at: "2026-03-05T13:50:00+09:00")
        let afterSession = h.envelopes.count
        try h.run(.recordPages(position: 190), book: book, at: "2026-03-12T19:00:00+09:00")  // 03-12 +40 evening
        try h.run(.recordPages(position: 230), book: book, at: "2026-03-13T08:00:00+09:00")  // 03-13 +40 morning
        try h.run(.collectSentence(sentence2, text: "나무가 되고 싶어.", page: 201), book: book, at: "2026-03-13T08:10:00+09:00")
        try h.run(.recordPages(position: 270), book: book, at: "2026-03-14T22:00:00+09:00")  // 03-14 +40 evening
        let afterMarch14 = h.envelopes.count
        try h.run(.recordPages(position: 300), book: book, at: "2026-03-15T10:00:00+09:00")  // 03-15 +30 morning
        try h.run(.setRating(stars: 4.5), book: book, at: "2026-03-15T10:05:00+09:00")
        try h.run(.like, book: book, at: "2026-03-15T10:06:00+09:00")
        try h.run(.finishBook(on: date("2026-03-15")), book: book, at: "2026-03-15T10:10:00+09:00")
        return (h, afterSession, afterMarch14)
    }

    @Test func homeListBeforeTheFinish() throws {
        let (h, afterSession, afterMarch14) = try history()
        let seoul = zone("Asia/Seoul")
        let early = try History.fold(Array(h.envelopes.prefix(afterSession)))

        // As of 2026-03-06 12:00 in Seoul: position 150 of 300.
        let list = try early.homeList(reader: h.reader, asOf: instant("2026-03-06T12:00:00+09:00"), zone: seoul)
        #expect(list.today == date("2026-03-06"))
        let item = try #require(list.items.first)
        #expect(list.items.count == 1)
        #expect(item.book == book)
        #expect(item.metadata.authors == "한강 (지은이)")
        #expect(item.metadata.isbn13?.digits == "9788936433598")
        #expect(item.position == 150)
        #expect(item.progress == 0.5)                    // 150 / 300
        #expect(item.pagesLeft == 150)                   // 300 - 150
        #expect(item.daysLeft == 14)                     // 03-06 -> 03-20: D-14
        #expect(item.pagesPerDayNeeded == 10)            // ceil(150 / (14 + 1 counting today)) = 10
        // Pace: 150 pages in 6 days (03-01 ... 03-06); 150 left * 6 / 150 = 6 days -> 03-12.
        #expect(item.projectedFinish == date("2026-03-12"))
        #expect(item.lastActivity == instant("2026-03-05T13:50:00+09:00"))
        #expect(item.goal.theme == "orange")

        // The same instant seen from Los Angeles (2026-03-05T16:00Z = 03-06 01:00 KST = 03-05 08:00 PST):
        // "today" is the zone's day of the query, 03-05.
        let la = try early.homeList(reader: h.reader, asOf: instant("2026-03-05T16:00:00Z"), zone: zone("America/Los_Angeles"))
        #expect(la.today == date("2026-03-05"))
        #expect(la.items.first?.daysLeft == 15)          // 03-05 -> 03-20
        #expect(la.items.first?.pagesPerDayNeeded == 10) // ceil(150 / 16) = ceil(9.375) = 10
        #expect(la.items.first?.projectedFinish == date("2026-03-10")) // 5 days elapsed: 150 * 5 / 150 = 5 -> 03-10
        let kst = try early.homeList(reader: h.reader, asOf: instant("2026-03-05T16:00:00Z"), zone: seoul)
        #expect(kst.today == date("2026-03-06"))

        // On the target day, D-day: daysLeft 0, all 150 pages needed today; 20 days elapsed:
        // 150 * 20 / 150 = 20 days -> 04-09.
        let dDay = try early.homeList(reader: h.reader, asOf: instant("2026-03-20T09:00:00+09:00"), zone: seoul)
        #expect(dDay.items.first?.daysLeft == 0)
        #expect(dDay.items.first?.pagesPerDayNeeded == 150)
        #expect(dDay.items.first?.projectedFinish == date("2026-04-09"))
        // The day after (D+1): negative days left, no pages-per-day figure.
        let late = try early.homeList(reader: h.reader, asOf: instant("2026-03-21T09:00:00+09:00"), zone: seoul)
        #expect(late.items.first?.daysLeft == -1)
        #expect(late.items.first?.pagesPerDayNeeded == nil)

        // As of 2026-03-14 23:00, at page 270: 30 left, 6 days left (03-14 -> 03-20),
        // ceil(30 / 7) = ceil(4.29) = 5 a day; pace 270 pages in 14 days: 30 * 14 / 270 = 1.56 -> 2 days -> 03-16.
        let later = try History.fold(Array(h.envelopes.prefix(afterMarch14)))
        let item14 = try #require(later.homeList(reader: h.reader, asOf: instant("2026-03-14T23:00:00+09:00"), zone: seoul).items.first)
        #expect(item14.position == 270)
        #expect(item14.progress == 0.9)
        #expect(item14.pagesLeft == 30)
        #expect(item14.daysLeft == 6)
        #expect(item14.pagesPerDayNeeded == 5)
        #expect(item14.projectedFinish == date("2026-03-16"))
    }

    @Test func viewsAfterTheFinish() throws {
        let (h, _, _) = try history()
        let store = try h.fold()
        let r = h.reader

        // Finished: off the home list.
        #expect(try store.homeList(reader: r, asOf: instant("2026-03-16T09:00:00+09:00"), zone: zone("Asia/Seoul")).items.isEmpty)

        // Bookshelf, finished side: finished 03-15 on or before the target 03-20, goal met;
        // stack height 300 pages * 0.06 mm = 18 mm.
        let shelf = try store.bookshelf(reader: r, showing: .finished)
        #expect(shelf.items.count == 1)
        let item = try #require(shelf.items.first)
        #expect(item.book == book)
        #expect(item.finishes == [date("2026-03-15")])
        #expect(item.goalMet == true)
        #expect(item.rating?.stars == 4.5)
        #expect(item.liked)
        #expect(abs(shelf.stackHeightMillimetres - 18) < 1e-9)
        #expect(try store.bookshelf(reader: r, showing: .liked).items.map(\.book) == [book])

        // Daily pages 03-01 ... 03-15 (23:50 on 03-02 and 00:10 on 03-03 land on their own days):
        //  30 (to 30), 30 (to 60), 20 (to 80), 20 (to 100), 50 (session end to 150), five empty days,
        //  40 (to 190), 40 (to 230), 40 (to 270), 30 (to 300): sum 300.
        let daily = try store.dailyPages(reader: r, in: days("2026-03-01", "2026-03-15"))
        #expect(pages(daily) == [30, 30, 20, 20, 50, 0, 0, 0, 0, 0, 0, 40, 40, 40, 30])
        #expect(seconds(daily) == [0, 0, 0, 0, 2700, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) // 13:00-13:45 = 45 min
        #expect(pages(try store.dailyPages(reader: r, book: book, in: days("2026-03-01", "2026-03-15"))) == pages(daily))

        // Calendar for March: 31 days, the same 15 values then 16 empty days.
        let march = try store.calendarMonth(reader: r, month: YearMonth(year: 2026, month: 3))
        #expect(march.count == 31)
        #expect(march.first?.day == date("2026-03-01") && march.last?.day == date("2026-03-31"))
        #expect(pages(march) == [30, 30, 20, 20, 50, 0, 0, 0, 0, 0, 0, 40, 40, 40, 30] + Array(repeating: 0, count: 16))
        #expect(try store.calendarMonth(reader: r, month: YearMonth(year: 2026, month: 2)).count == 28)

        // Streaks: runs 03-01 ... 03-05 (5 days) and 03-12 ... 03-15 (4 days).
        let on16 = try store.streaks(reader: r, asOf: date("2026-03-16"))
        #expect(on16.current == StreakRun(start: date("2026-03-12"), end: date("2026-03-15"))) // ends yesterday: still current
        #expect(on16.currentLength == 4)
        #expect(on16.longest == StreakRun(start: date("2026-03-01"), end: date("2026-03-05")))
        #expect(on16.longestLength == 5)
        #expect(try store.streaks(reader: r, asOf: date("2026-03-17")).currentLength == 0)  // 03-16 missed
        #expect(try store.streaks(reader: r, asOf: date("2026-03-13")).currentLength == 2)  // 03-12, 03-13
        #expect(try store.streaks(reader: r, asOf: date("2026-03-08")).currentLength == 0)
        #expect(try store.streaks(reader: r, asOf: instant("2026-03-16T08:00:00+09:00"), zone: zone("Asia/Seoul")).currentLength == 4)

        // Monthly: March holds all 300 pages and the one finish.
        let monthly = try store.monthly(reader: r, in: YearMonth(year: 2026, month: 2)...YearMonth(year: 2026, month: 4))
        #expect(monthly.map(\.month) == [YearMonth(year: 2026, month: 2), YearMonth(year: 2026, month: 3), YearMonth(year: 2026, month: 4)])
        #expect(monthly.map(\.total) == [MonthTotal(), MonthTotal(pages: 300, finishes: 1), MonthTotal()])

        // Time of day, by local hour: night 00:10 (20); morning 07:30 (20) + 08:00 (40) + 10:00 (30) = 90;
        // afternoon 13:45 (50); evening 21:00 (30) + 23:50 (30) + 19:00 (40) + 22:00 (40) = 140.
        // Seconds: the 13:00-13:45 session, 2700 s, afternoon.
        let buckets = try store.timeOfDay(reader: r)
        #expect(buckets.pages == [20, 90, 50, 140])
        #expect(buckets.seconds == [0, 0, 2700, 0])

        // Summary: one book, finished (not reading), liked.
        #expect(try store.summary(reader: r) == SummaryCounts(reading: 0, finished: 1, wantToRead: 0, didNotFinish: 0,
                                                             liked: 1, totalPages: 300, totalSeconds: 2700))
        #expect(try store.openSessions(reader: r).isEmpty)

        // Book detail: every page entry on its day, sentences, the session, the rating.
        let detail = try #require(try store.bookDetail(reader: r, book: book))
        #expect(detail.pageHistory.map(\.position) == [30, 60, 80, 100, 150, 190, 230, 270, 300])
        #expect(detail.pageHistory.map(\.credited) == [30, 30, 20, 20, 50, 40, 40, 40, 30])
        #expect(detail.pageHistory[1].day == date("2026-03-02") && detail.pageHistory[2].day == date("2026-03-03"))
        #expect(detail.view.sentences.map(\.text) == ["나는 꿈을 꾸었어.", "나무가 되고 싶어."])
        #expect(detail.view.sentences.map(\.page) == [120, 201])
        #expect(detail.view.sessions.count == 1)
        #expect(detail.view.sessions.first?.measuredSeconds == 2700)
        #expect(detail.view.sessions.first?.reportedSeconds == 2700)
        #expect(detail.view.status == .finished)
        #expect(detail.view.goal == nil)
        #expect(detail.view.goalOutcome?.met == true)
        #expect(detail.view.metadata.groupingCategory == "소설/시/희곡")
        #expect(detail.dailyBars.map(\.day) == [date("2026-03-01"), date("2026-03-02"), date("2026-03-03"), date("2026-03-04"),
                                              date("2026-03-05"), date("2026-03-12"), date("2026-03-13"), date("2026-03-14"),
                                              date("2026-03-15")])
        #expect(detail.dailyBars[4].total == DayTotal(pages: 50, seconds: 2700))
    }

    @Test func finishingAfterTheTargetMissesTheGoal() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-03-01T09:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-03-01"), targetDate: date("2026-03-20"), theme: nil), book: book, at: "2026-03-01T09:01:00+09:00")
        try h.run(.recordPages(position: 300), book: book, at: "2026-03-21T21:00:00+09:00")
        try h.run(.finishBook(on: date("2026-03-21")), book: book, at: "2026-03-21T21:05:00+09:00")
        let shelf = try h.fold().bookshelf(reader: h.reader, showing: .finished)
        #expect(shelf.items.first?.goalMet == false)       // 03-21 > 03-20
    }
}
