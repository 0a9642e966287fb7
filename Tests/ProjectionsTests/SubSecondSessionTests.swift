import Testing
import ReadingEvents
@testable import Projections

/// Issue 16, case 2: session seconds come from the exact (microsecond) instants; each finished
/// session's running total is rounded to whole seconds (half up), not its ends truncated; and a day
/// is a reading day only with at least one page or at least one whole minute (60 s) of timed reading.
@Suite("Sub-second sessions")
struct SubSecondSessionTests {
    let book = BookID()
    let blink = SessionID(), justUnder = SessionID(), justOver = SessionID(), midnight = SessionID(), twoTaps = SessionID()

    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-06-01T09:00:00+09:00")
        try h.run(.recordPages(position: 10), book: book, at: "2026-06-01T21:00:00+09:00")   // 06-01: 10 pages
        // 06-02: 12:00:00.9 → 12:00:01.1 = 0.2 s, rounds to 0 s. (Truncating the ends: 1 - 0 = 1 s.)
        try h.run(.startSession(blink), book: book, at: "2026-06-02T12:00:00.9+09:00")
        try h.run(.finishSession(blink, endPosition: nil, durationSeconds: 0), book: book, at: "2026-06-02T12:00:01.1+09:00")
        try h.run(.recordPages(position: 20), book: book, at: "2026-06-03T21:00:00+09:00")   // 06-03: 10 pages
        // 06-10: 12:00:00.1 → 12:00:59.8 = 59.7 s, rounds to 60 s: one minute, a reading day.
        // (Truncating the ends: 59 - 0 = 59 s.)
        try h.run(.startSession(justOver), book: book, at: "2026-06-10T12:00:00.1+09:00")
        try h.run(.finishSession(justOver, endPosition: nil, durationSeconds: 60), book: book, at: "2026-06-10T12:00:59.8+09:00")
        // 06-12: 12:00:00.9 → 12:01:00.0 = 59.1 s, rounds to 59 s: under a minute, not a reading day.
        // (Truncating the ends: 60 - 0 = 60 s.)
        try h.run(.startSession(justUnder), book: book, at: "2026-06-12T12:00:00.9+09:00")
        try h.run(.finishSession(justUnder, endPosition: nil, durationSeconds: 59), book: book, at: "2026-06-12T12:01:00.0+09:00")
        // 06-20 23:59:59.7 → 06-21 00:00:59.6: 0.3 s on 06-20 (evening) + 59.6 s on 06-21 (night) =
        // 59.9 s, rounds to 60. The running total is rounded: 0.3 → 0 s for 06-20, then 59.9 → 60,
        // so 06-21 gets 60 - 0 = 60 s. (Truncating the ends: 1 s on 06-20 and 59 s on 06-21.)
        try h.run(.startSession(midnight), book: book, at: "2026-06-20T23:59:59.7+09:00")
        try h.run(.finishSession(midnight, endPosition: nil, durationSeconds: 60), book: book, at: "2026-06-21T00:00:59.6+09:00")
        // 06-25: two taps of 0.6 s (12:00:00.0-.6 and 12:00:10.0-.6) = 1.2 s, rounds to 1 s; rounding
        // each interval would give 2 s, truncating the ends 0 s.
        try h.run(.startSession(twoTaps), book: book, at: "2026-06-25T12:00:00.0+09:00")
        try h.run(.pauseSession(twoTaps), book: book, at: "2026-06-25T12:00:00.6+09:00")
        try h.run(.resumeSession(twoTaps), book: book, at: "2026-06-25T12:00:10.0+09:00")
        try h.run(.finishSession(twoTaps, endPosition: nil, durationSeconds: 1), book: book, at: "2026-06-25T12:00:10.6+09:00")
        return h
    }

    @Test func secondsComeFromExactInstantsAndABlinkMakesNoReadingDay() throws {
        let h = try history()
        let store = try h.fold()
        let r = h.reader

        #expect(seconds(try store.dailyPages(reader: r, in: days("2026-06-01", "2026-06-03"))) == [0, 0, 0])
        #expect(try store.dayTotal(reader: r, day: date("2026-06-10")).seconds == 60)
        #expect(try store.dayTotal(reader: r, day: date("2026-06-12")).seconds == 59)
        #expect(seconds(try store.dailyPages(reader: r, in: days("2026-06-20", "2026-06-21"))) == [0, 60])
        #expect(try store.dayTotal(reader: r, day: date("2026-06-25")).seconds == 1)

        // Reading days: 06-01 and 06-03 (pages), 06-10 and 06-21 (a whole minute). 06-02 (0 s),
        // 06-12 (59 s), 06-20 (0 s) and 06-25 (1 s) are not, so 06-01 and 06-03 stay two runs.
        #expect(try store.streakRuns(reader: r) == [
            StreakRun(start: date("2026-06-01"), end: date("2026-06-01")),
            StreakRun(start: date("2026-06-03"), end: date("2026-06-03")),
            StreakRun(start: date("2026-06-10"), end: date("2026-06-10")),
            StreakRun(start: date("2026-06-21"), end: date("2026-06-21")),
        ])
        #expect(try store.streaks(reader: r, asOf: date("2026-06-03")).currentLength == 1)

        // Buckets: night 60 (06-21); afternoon 0 + 60 + 59 + 1 = 120; evening 0 (06-20).
        #expect(try store.timeOfDay(reader: r).seconds == [60, 0, 120, 0])
        #expect(try store.summary(reader: r).totalSeconds == 180)

        // Each session's measured seconds are its rounded exact total, and equal what its days got.
        let sessions = try #require(try store.bookDetail(reader: r, book: book)?.view.sessions)
        #expect(sessions.map(\.session) == [blink, justOver, justUnder, midnight, twoTaps])
        #expect(sessions.map(\.measuredSeconds) == [0, 60, 59, 60, 1])
    }

    @Test func theReadingDayMinimumIsOnePageOrOneMinute() {
        #expect(!DayTotal().isReadingDay)
        #expect(DayTotal(pages: 1).isReadingDay)
        #expect(!DayTotal(seconds: 59).isReadingDay)
        #expect(DayTotal(seconds: 60).isReadingDay)
        // A correction can leave a day with seconds but no pages: the minute alone decides.
        #expect(!DayTotal(pages: 0, seconds: 30).isReadingDay)
    }
}
