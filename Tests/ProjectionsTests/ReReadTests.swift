import Testing
import ReadingEvents
@testable import Projections

/// A finished book read again from page 0: each read-through's pages count once, the book counts once.
@Suite("Re-read")
struct ReReadTests {
    let book = BookID()

    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(pageCount: 100), status: .reading), book: book, at: "2026-01-10T09:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-01-10"), targetDate: date("2026-01-15"), theme: nil), book: book, at: "2026-01-10T09:01:00+09:00")
        try h.run(.recordPages(position: 60), book: book, at: "2026-01-10T21:00:00+09:00")   // 01-10 +60
        try h.run(.recordPages(position: 100), book: book, at: "2026-01-11T21:00:00+09:00")  // 01-11 +40
        try h.run(.finishBook(on: date("2026-01-11")), book: book, at: "2026-01-11T21:05:00+09:00")
        // Second read-through, from page 0 again.
        try h.run(.startReadThrough, book: book, at: "2026-01-30T09:00:00+09:00")
        #expect(h.envelopes.last?.event == .readThroughStarted(ReadThroughStarted(book: book, readThrough: 2)))
        try h.run(.recordPages(position: 50), book: book, at: "2026-01-30T21:00:00+09:00")   // 01-30 +50
        try h.run(.recordPages(position: 100), book: book, at: "2026-02-01T21:00:00+09:00")  // 02-01 +50
        try h.run(.finishBook(on: date("2026-02-01")), book: book, at: "2026-02-01T21:05:00+09:00")
        return h
    }

    @Test func eachReadThroughCountsItsPagesOnceAndTheBookOnce() throws {
        let h = try history()
        let store = try h.fold()
        let r = h.reader

        let jan = try store.calendarMonth(reader: r, month: YearMonth(year: 2026, month: 1))
        #expect(jan[9].total.pages == 60 && jan[10].total.pages == 40 && jan[29].total.pages == 50)
        #expect(pages(jan).reduce(0, +) == 150)                 // 60 + 40 + 50
        #expect(pages(try store.dailyPages(reader: r, in: days("2026-02-01", "2026-02-02"))) == [50, 0])
        // Monthly: January 60 + 40 + 50 = 150 pages and the first finish; February 50 and the second.
        let monthly = try store.monthly(reader: r, in: YearMonth(year: 2026, month: 1)...YearMonth(year: 2026, month: 2))
        #expect(monthly.map(\.total) == [MonthTotal(pages: 150, finishes: 1), MonthTotal(pages: 50, finishes: 1)])
        // 2 read-throughs x 100 pages = 200, nothing more (the second starts from 0, not from 100).
        #expect(monthly.map(\.total.pages).reduce(0, +) == 200)
        #expect(try store.summary(reader: r).totalPages == 200)
        #expect(try store.timeOfDay(reader: r).pages.reduce(0, +) == 200)

        // The shelf shows the book once, with its two finish days; the stack counts it once: 100 * 0.06 = 6 mm.
        let shelf = try store.bookshelf(reader: r, showing: .finished)
        #expect(shelf.items.map(\.book) == [book])
        #expect(shelf.items.first?.finishes == [date("2026-01-11"), date("2026-02-01")])
        #expect(abs(shelf.stackHeightMillimetres - 6) < 1e-9)
        // The first goal (target 01-15) was met on 01-11; the second read-through had none, which
        // leaves the outcome of the last goal.
        #expect(shelf.items.first?.goalMet == true)
        let summary = try store.summary(reader: r)
        #expect(summary.finished == 1)
        #expect(summary.reading == 0)

        let detail = try #require(try store.bookDetail(reader: r, book: book))
        #expect(detail.pageHistory.map(\.readThrough) == [1, 1, 2, 2])
        #expect(detail.pageHistory.map(\.credited) == [60, 40, 50, 50])
        #expect(detail.view.readThrough == 2)
        #expect(detail.view.position == 100)
        #expect(detail.view.pagesReadThisReadThrough == 100)
    }

    @Test func finishesInOneMonthCountEach() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(pageCount: 100), status: .reading), book: book, at: "2026-07-01T09:00:00+09:00")
        try h.run(.recordPages(position: 100), book: book, at: "2026-07-01T21:00:00+09:00")
        try h.run(.finishBook(on: date("2026-07-01")), book: book, at: "2026-07-01T21:05:00+09:00")
        try h.run(.startReadThrough, book: book, at: "2026-07-10T09:00:00+09:00")
        try h.run(.recordPages(position: 100), book: book, at: "2026-07-10T21:00:00+09:00")
        try h.run(.finishBook(on: date("2026-07-10")), book: book, at: "2026-07-10T21:05:00+09:00")
        let store = try h.fold()
        #expect(try store.monthly(reader: h.reader, in: YearMonth(year: 2026, month: 7)...YearMonth(year: 2026, month: 7)).first?.total
                == MonthTotal(pages: 200, finishes: 2))
        #expect(try store.summary(reader: h.reader).finished == 1)
        #expect(try store.bookshelf(reader: h.reader, showing: .finished).items.first?.goalMet == nil)  // never had a goal
    }
}
