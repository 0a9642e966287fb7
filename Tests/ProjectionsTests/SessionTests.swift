import Testing
import ReadingEvents
@testable import Projections

/// Timed sessions: minutes split at day and bucket boundaries, pauses excluded, open sessions
/// listed for recovery without minutes, discarded ones gone.
@Suite("Sessions")
struct SessionTests {
    let book = BookID(), other = BookID()
    let acrossMidnight = SessionID(), paused = SessionID(), open = SessionID(), openPaused = SessionID(), discarded = SessionID()

    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-06-01T09:00:00+09:00")
        try h.run(.addBook(aladinMetadata(title: "소년이 온다"), status: .reading), book: other, at: "2026-06-01T09:01:00+09:00")
        // 23:30 -> 00:30: 30 min on 06-01 (evening) + 30 min on 06-02 (night).
        try h.run(.startSession(acrossMidnight), book: book, at: "2026-06-01T23:30:00+09:00")
        try h.run(.finishSession(acrossMidnight, endPosition: nil, durationSeconds: 3600), book: book, at: "2026-06-02T00:30:00+09:00")
        // 12:00 start, 12:20 pause, 12:50 resume, 13:10 finish: runs 20 + 20 = 40 min (the 30-min pause does not count).
        try h.run(.startSession(paused), book: book, at: "2026-06-02T12:00:00+09:00")
        try h.run(.pauseSession(paused), book: book, at: "2026-06-02T12:20:00+09:00")
        try h.run(.resumeSession(paused), book: book, at: "2026-06-02T12:50:00+09:00")
        try h.run(.finishSession(paused, endPosition: 40, durationSeconds: 2400), book: book, at: "2026-06-02T13:10:00+09:00")
        // Started and never stopped (the app crashed): one running, one paused.
        try h.run(.startSession(open), book: book, at: "2026-06-03T07:00:00+09:00")
        try h.run(.startSession(openPaused), book: other, at: "2026-06-03T06:00:00+09:00")
        try h.run(.pauseSession(openPaused), book: other, at: "2026-06-03T06:30:00+09:00")
        // Thrown away.
        try h.run(.startSession(discarded), book: other, at: "2026-06-03T08:00:00+09:00")
        try h.run(.discardSession(discarded), book: other, at: "2026-06-03T08:30:00+09:00")
        return h
    }

    @Test func minutesSplitAcrossMidnightAndBucketsAndPausesDoNotCount() throws {
        let h = try history()
        let store = try h.fold()
        let r = h.reader
        let daily = try store.dailyPages(reader: r, in: days("2026-06-01", "2026-06-03"))
        // 06-01: 1800 s; 06-02: 1800 (00:00-00:30) + 2400 (paused session) = 4200 s; 06-03: nothing counted.
        #expect(seconds(daily) == [1800, 4200, 0])
        #expect(pages(daily) == [0, 40, 0])                       // the paused session's end position, 13:10
        // night 00:00-00:30 = 1800; afternoon 12:00-12:20 + 12:50-13:10 = 2400; evening 23:30-24:00 = 1800.
        let buckets = try store.timeOfDay(reader: r)
        #expect(buckets.seconds == [1800, 0, 2400, 1800])
        #expect(buckets.pages == [0, 0, 40, 0])
        #expect(try store.summary(reader: r).totalSeconds == 6000) // 1800 + 4200
        // Seconds make reading days: 06-01 and 06-02; open sessions do not make 06-03 one.
        #expect(try store.streakRuns(reader: r) == [StreakRun(start: date("2026-06-01"), end: date("2026-06-02"))])
        #expect(try store.streaks(reader: r, asOf: date("2026-06-03")).currentLength == 2)

        let sessions = try #require(try store.bookDetail(reader: r, book: book)?.view.sessions)
        let midnight = try #require(sessions.first { $0.session == acrossMidnight })
        #expect(midnight.measuredSeconds == 3600)
        #expect(midnight.isFinished)
        let withPause = try #require(sessions.first { $0.session == paused })
        #expect(withPause.intervals.map { $0.end.seconds - $0.start.seconds } == [1200, 1200])
        #expect(withPause.measuredSeconds == 2400)
        #expect(withPause.reportedSeconds == 2400)
        #expect(withPause.endPosition == 40)
        #expect(pages(try store.dailyPages(reader: r, book: book, in: days("2026-06-02", "2026-06-02"))) == [40])
        #expect(seconds(try store.dailyPages(reader: r, book: other, in: days("2026-06-01", "2026-06-03"))) == [0, 0, 0])
    }

    @Test func openSessionsAreListedAndDiscardedOnesDisappear() throws {
        let h = try history()
        let store = try h.fold()
        let open = try store.openSessions(reader: h.reader)
        // Oldest first: 06:00 (other, paused at 06:30) then 07:00 (book, running).
        #expect(open.map(\.session.session) == [openPaused, self.open])
        #expect(open.map(\.book) == [other, book])
        #expect(open.map(\.title) == ["소년이 온다", "채식주의자"])
        #expect(open[0].session.runningSince == nil)
        #expect(open[0].session.intervals.map { $0.end.seconds - $0.start.seconds } == [1800])
        #expect(open[1].session.runningSince == instant("2026-06-03T07:00:00+09:00"))
        #expect(open[1].session.startedAt == instant("2026-06-03T07:00:00+09:00"))
        #expect(open[1].session.timeZone == zone("Asia/Seoul"))
        // The discarded session is gone from the book, and counted nothing.
        let otherSessions = try #require(try store.bookDetail(reader: h.reader, book: other)?.view.sessions)
        #expect(otherSessions.map(\.session) == [openPaused])
        #expect(try store.dayTotal(reader: h.reader, day: date("2026-06-03")) == DayTotal())

        // Recovering the crashed timer: finishing it now counts its minutes (07:00 -> 07:45 = 2700 s, morning).
        var later = h
        try later.run(.finishSession(self.open, endPosition: nil, durationSeconds: 2700), book: book, at: "2026-06-03T07:45:00+09:00")
        let recovered = try later.fold()
        #expect(try recovered.openSessions(reader: h.reader).map(\.session.session) == [openPaused])
        #expect(try recovered.dayTotal(reader: h.reader, day: date("2026-06-03")).seconds == 2700)
        #expect(try recovered.timeOfDay(reader: h.reader).seconds == [1800, 2700, 2400, 1800])
        // Or dropping the paused one: it disappears from the list.
        try later.run(.discardSession(openPaused), book: other, at: "2026-06-03T08:00:00+09:00")
        #expect(try later.fold().openSessions(reader: h.reader).isEmpty)
    }
}
