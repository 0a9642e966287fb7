import Testing
import ReadingEvents
@testable import Projections
import EventStoreLMDB

/// Issue 10, item 15: each running interval of a timed session belongs to the zone of the event
/// that began it (the start, or a resume in another city); an interval that crosses an offset
/// change of its zone is still split at the change.
@Suite("Sessions resumed in another zone")
struct ResumedSessionZoneTests {
    let book = BookID(), session = SessionID()

    /// A book added at 09:00 in Seoul the day of `start`; a session started and paused in Seoul,
    /// then resumed in `elsewhere` and, when `finish` is given, finished there.
    func trip(start: String, pause: String, resume: String, finish: String?, elsewhere: String) throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: String(start.prefix(10)) + "T09:00:00+09:00")
        try h.run(.startSession(session), book: book, at: start)
        try h.run(.pauseSession(session), book: book, at: pause)
        try h.run(.resumeSession(session), book: book, at: resume, zone: elsewhere)
        if let finish {
            try h.run(.finishSession(session, endPosition: nil, durationSeconds: 4200), book: book, at: finish, zone: elsewhere)
        }
        return h
    }

    @Test func pausedInSeoulResumedInLosAngelesCountsThatEveningInLosAngeles() throws {
        // Seoul, 06-10 23:00 → 23:40: 2400 s, evening of 06-10. Flown to Los Angeles (PDT, -07:00):
        // resumed 06-10 20:00, finished 20:30: 1800 s, evening of 06-10 there. In Seoul's clock the
        // same instants are 06-11 12:00 → 12:30 (afternoon).
        let h = try trip(start: "2026-06-10T23:00:00+09:00", pause: "2026-06-10T23:40:00+09:00",
                         resume: "2026-06-10T20:00:00-07:00", finish: "2026-06-10T20:30:00-07:00", elsewhere: "America/Los_Angeles")
        let store = try h.fold()
        let r = h.reader

        // 06-10: 2400 + 1800 = 4200 s; 06-11: nothing.
        #expect(seconds(try store.dailyPages(reader: r, in: days("2026-06-10", "2026-06-11"))) == [4200, 0])
        // Both intervals are evening: [night, morning, afternoon, evening] = [0, 0, 0, 4200].
        #expect(try store.timeOfDay(reader: r).seconds == [0, 0, 0, 4200])
        // One reading day, not a two-day streak.
        #expect(try store.streakRuns(reader: r) == [StreakRun(start: date("2026-06-10"), end: date("2026-06-10"))])
        let finished = try #require(try store.bookDetail(reader: r, book: book)?.view.sessions.first)
        #expect(finished.measuredSeconds == 4200)
        #expect(finished.intervals.map(\.timeZone) == [zone("Asia/Seoul"), zone("America/Los_Angeles")])

        // The zones survive the stored form of the book view.
        let view = try #require(try store.bookView(reader: r, book: book))
        #expect(try ViewRecordCodec.decodeBookView(ViewRecordCodec.encode(view), decision: view.decision) == view)
        #expect(try ViewRecordCodec.decodeBookState(ViewRecordCodec.encode(view.decision)) == view.decision)
    }

    @Test func aTimerResumedElsewhereAndNotYetStoppedKeepsItsZone() throws {
        let h = try trip(start: "2026-06-10T23:00:00+09:00", pause: "2026-06-10T23:40:00+09:00",
                         resume: "2026-06-10T20:00:00-07:00", finish: nil, elsewhere: "America/Los_Angeles")
        let store = try h.fold()
        let open = try #require(try store.openSessions(reader: h.reader).first?.session)
        #expect(open.runningSince == instant("2026-06-10T20:00:00-07:00"))
        #expect(open.runningZone == zone("America/Los_Angeles"))
        let view = try #require(try store.bookView(reader: h.reader, book: book))
        #expect(try ViewRecordCodec.decodeBookView(ViewRecordCodec.encode(view), decision: view.decision) == view)
        #expect(try ViewRecordCodec.decodeBookState(ViewRecordCodec.encode(view.decision)) == view.decision)
        // Open sessions count nothing until finished.
        #expect(try store.timeOfDay(reader: h.reader).seconds == [0, 0, 0, 0])
    }

    @Test func aBookViewOfFormatOneStillDecodesWithIntervalsInTheSessionZone() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-06-10T09:00:00+09:00")
        try h.run(.startSession(session), book: book, at: "2026-06-10T23:00:00+09:00")
        try h.run(.finishSession(session, endPosition: nil, durationSeconds: 600), book: book, at: "2026-06-10T23:10:00+09:00")
        let view = try #require(try h.fold().bookView(reader: h.reader, book: book))
        // Format 6 (this build) lays book views out as format 3 did. Format 3 ends with the
        // replication fields: no last origin (1 byte; a pure fold has none) and the folded-event
        // count (8). Format 2 is format 3 without them.
        var formatThree = ViewRecordCodec.encode(view)
        #expect(formatThree.first == ViewRecordCodec.format)
        formatThree[0] = 3
        #expect(try ViewRecordCodec.decodeBookView(formatThree, decision: view.decision) == view)
        var current = Array(formatThree.dropLast(9))
        current[0] = 2
        var expected = view
        expected.foldedEvents = 0
        #expect(try ViewRecordCodec.decodeBookView(current, decision: view.decision) == expected)
        // Format 1 is format 2 without the zone markers. This record ends with the one interval's
        // zone marker (0: the session's zone), no running interval (1 byte), finished (1), the
        // reported 600 s (1 + 8), no end position (1), no rating (1), not liked (1), no likedAt (1):
        // the marker is 1 + 1 + 1 + 9 + 1 + 1 + 1 + 1 = 16 bytes from the end. Format 1 lacks it
        // (and there is no running interval, whose zone marker format 1 lacks too).
        var old = current
        old[0] = 1
        #expect(old[old.count - 16] == 0)
        old.remove(at: old.count - 16)
        #expect(try ViewRecordCodec.decodeBookView(old, decision: view.decision) == expected)
        #expect(view.sessions.first?.intervals.first?.timeZone == zone("Asia/Seoul"))
    }

    @Test func anIntervalResumedInNewYorkAcrossTheSpringChangeStaysSplit() throws {
        // Seoul, 03-07 20:00 → 20:10: 600 s, evening of 03-07. New York, 03-08 01:30 EST (-05:00) →
        // 03:30 EDT (-04:00): one real hour across the spring change at 02:00 EST = 03:00 EDT:
        // 01:30-02:00 (1800 s) + 03:00-03:30 (1800 s), all night of 03-08. In Seoul's clock it would
        // be 03-08 15:30 → 16:30, afternoon.
        let h = try trip(start: "2026-03-07T20:00:00+09:00", pause: "2026-03-07T20:10:00+09:00",
                         resume: "2026-03-08T01:30:00-05:00", finish: "2026-03-08T03:30:00-04:00", elsewhere: "America/New_York")
        let store = try h.fold()
        let r = h.reader

        #expect(seconds(try store.dailyPages(reader: r, in: days("2026-03-07", "2026-03-08"))) == [600, 3600])
        // night 1800 + 1800 = 3600; evening 600.
        #expect(try store.timeOfDay(reader: r).seconds == [3600, 0, 0, 600])
        // One real hour in New York's clock: nothing lost or doubled at the change.
        #expect(try store.bookDetail(reader: r, book: book)?.view.sessions.first?.measuredSeconds == 4200)
    }
}
