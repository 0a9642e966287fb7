import Testing
import ReadingEvents
@testable import Projections

/// A back-dated record fills a gap (joining two streaks and moving pages to its own day); an
/// explicit correction on the same day takes it back (splitting them again).
@Suite("Back-dating and streaks")
struct BackDatingTests {
    let book = BookID()
    let range = days("2026-05-01", "2026-05-04")

    /// Reading on D1 (to 20), D2 (to 40) and D4 (to 100), at 20:00 in Seoul.
    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(pageCount: 200), status: .reading), book: book, at: "2026-05-01T08:00:00+09:00")
        try h.run(.recordPages(position: 20), book: book, at: "2026-05-01T20:00:00+09:00")   // D1 +20
        try h.run(.recordPages(position: 40), book: book, at: "2026-05-02T20:00:00+09:00")   // D2 +20
        try h.run(.recordPages(position: 100), book: book, at: "2026-05-04T20:00:00+09:00")  // D4 +60
        return h
    }

    @Test func aGapSplitsTheStreak() throws {
        let h = try history()
        let store = try h.fold()
        #expect(pages(try store.dailyPages(reader: h.reader, in: range)) == [20, 20, 0, 60])
        #expect(try store.streakRuns(reader: h.reader) == [StreakRun(start: date("2026-05-01"), end: date("2026-05-02")),
                                                          StreakRun(start: date("2026-05-04"), end: date("2026-05-04"))])
        let s = try store.streaks(reader: h.reader, asOf: date("2026-05-04"))
        #expect(s.currentLength == 1)
        #expect(s.longest == StreakRun(start: date("2026-05-01"), end: date("2026-05-02")))  // the earliest of length 2
    }

    @Test func aBackDatedEntryJoinsTheRunsAndACorrectionSplitsThemAgain() throws {
        var h = try history()
        // Recorded on D4 at 21:00, it happened on D3 at 20:00: page 70, between D2's 40 and D4's 100.
        // It is appended last (log position 5), yet slots in by its instant.
        try h.run(.recordPages(position: 70), book: book, at: "2026-05-03T20:00:00+09:00", recordedAt: "2026-05-04T21:00:00+09:00")
        #expect(h.envelopes.last?.position == 5)
        let joined = try h.fold()
        // D3 is credited 70 - 40 = 30; D4 keeps 100 - 70 = 30 (it had 60): total still 100.
        #expect(pages(try joined.dailyPages(reader: h.reader, in: range)) == [20, 20, 30, 30])
        #expect(try joined.streakRuns(reader: h.reader) == [StreakRun(start: date("2026-05-01"), end: date("2026-05-04"))])
        let s = try joined.streaks(reader: h.reader, asOf: date("2026-05-04"))
        #expect(s.currentLength == 4)
        #expect(s.longestLength == 4)
        #expect(try joined.monthly(reader: h.reader, in: YearMonth(year: 2026, month: 5)...YearMonth(year: 2026, month: 5)).first?.total.pages == 100)
        #expect(try joined.bookDetail(reader: h.reader, book: book)?.pageHistory.map(\.credited) == [20, 20, 30, 30])
        #expect(try joined.bookDetail(reader: h.reader, book: book)?.view.position == 100)

        // Then, recorded on D4 at 22:00: "I did not read on D3 after all": a correction at D3 21:00
        // back to D2's page 40. It clamps the D3 record to 40 (credit 0), so D4 gets 100 - 40 = 60 back.
        try h.run(.correctProgress(position: 40), book: book, at: "2026-05-03T21:00:00+09:00", recordedAt: "2026-05-04T22:00:00+09:00")
        let split = try h.fold()
        #expect(pages(try split.dailyPages(reader: h.reader, in: range)) == [20, 20, 0, 60])
        #expect(try split.streakRuns(reader: h.reader) == [StreakRun(start: date("2026-05-01"), end: date("2026-05-02")),
                                                          StreakRun(start: date("2026-05-04"), end: date("2026-05-04"))])
        let t = try split.streaks(reader: h.reader, asOf: date("2026-05-04"))
        #expect(t.currentLength == 1)
        #expect(t.longestLength == 2)
        // As of D3 the run D1-D2 ended yesterday: current 2.
        #expect(try split.streaks(reader: h.reader, asOf: date("2026-05-03")).currentLength == 2)
        let entries = try #require(try split.bookDetail(reader: h.reader, book: book)?.pageHistory)
        // In time order: D1 20, D2 40, D3 70 (clamped to 40), D3 correction 40, D4 100.
        #expect(entries.map(\.position) == [20, 40, 70, 40, 100])
        #expect(entries.map(\.effective) == [20, 40, 40, 40, 100])
        #expect(entries.map(\.credited) == [20, 20, 0, 0, 60])
        #expect(entries.map(\.kind) == [.read, .read, .read, .correction, .read])
        #expect(try split.timeOfDay(reader: h.reader).pages == [0, 0, 0, 100])   // all at 20:00, evening
        #expect(try split.summary(reader: h.reader).totalPages == 100)
        // Day totals, streak runs and months are back to exactly those of the original three readings.
        let original = try history()
        let originalStore = try original.fold()
        #expect(try split.dayTotals(reader: h.reader, in: range).map(\.1) == originalStore.dayTotals(reader: original.reader, in: range).map(\.1))
        #expect(try split.bucketTotals(reader: h.reader) == originalStore.bucketTotals(reader: original.reader))
    }

    @Test func aCorrectionTakesPagesOffTheDayTheyWereCreditedTo() throws {
        var h = try history()
        // On D4 at 21:00 the reader notices they are at 90, not 100: the 10 over-recorded pages come off D4.
        try h.run(.correctProgress(position: 90), book: book, at: "2026-05-04T21:00:00+09:00")
        let store = try h.fold()
        #expect(pages(try store.dailyPages(reader: h.reader, in: range)) == [20, 20, 0, 50])
        #expect(try store.bookDetail(reader: h.reader, book: book)?.view.position == 90)
        // A correction to 30 on D2 at 21:00 clamps D2 (40 -> 30) and every later page record's base:
        // D1 20, D2 30 - 20 = 10, D4 90 - 30 = 60.
        try h.run(.correctProgress(position: 30), book: book, at: "2026-05-02T21:00:00+09:00", recordedAt: "2026-05-04T22:00:00+09:00")
        let again = try h.fold()
        #expect(pages(try again.dailyPages(reader: h.reader, in: range)) == [20, 10, 0, 60])
        #expect(try again.summary(reader: h.reader).totalPages == 90)
    }
}
