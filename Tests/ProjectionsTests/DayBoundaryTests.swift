import Testing
import ReadingEvents
@testable import Projections

/// Local days come from each event's own zone, across midnight, a trip across the date line,
/// both DST changes of America/New_York, and a day-start hour.
@Suite("Day boundaries")
struct DayBoundaryTests {
    let book = BookID()

    @Test func readingJustBeforeAndAfterMidnightLandsOnTwoDays() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-03-02T20:00:00+09:00")
        try h.run(.recordPages(position: 12), book: book, at: "2026-03-02T23:50:00+09:00")  // 03-02 +12 (UTC 14:50 on 03-02)
        try h.run(.recordPages(position: 20), book: book, at: "2026-03-03T00:10:00+09:00")  // 03-03 +8  (UTC 15:10 on 03-02!)
        let store = try h.fold()
        #expect(pages(try store.dailyPages(reader: h.reader, in: days("2026-03-01", "2026-03-04"))) == [0, 12, 8, 0])
        #expect(try store.timeOfDay(reader: h.reader).pages == [8, 0, 0, 12])  // 00:10 night, 23:50 evening
        #expect(try store.streaks(reader: h.reader, asOf: date("2026-03-03")).currentLength == 2)
    }

    @Test func aTripFromSeoulToLosAngelesPutsEachEventOnItsOwnLocalDay() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(pageCount: 200), status: .reading), book: book, at: "2026-04-09T08:00:00+09:00")
        // In Seoul, 04-10 08:00 KST = 04-09 23:00 UTC: the Seoul day, 04-10.
        try h.run(.recordPages(position: 20), book: book, at: "2026-04-10T08:00:00+09:00")
        // Landed in LA: 04-10 18:00 PDT = 04-11 01:00 UTC = 04-11 10:00 KST: the LA day, 04-10.
        try h.run(.recordPages(position: 50), book: book, at: "2026-04-10T18:00:00-07:00", zone: "America/Los_Angeles")
        // 04-11 20:00 PDT = 04-12 03:00 UTC = 04-12 12:00 KST: the LA day, 04-11.
        try h.run(.recordPages(position: 70), book: book, at: "2026-04-11T20:00:00-07:00", zone: "America/Los_Angeles")
        // A timed session in LA, 04-11 23:30 -> 04-12 00:30 PDT (06:30 -> 07:30 UTC, 15:30 -> 16:30 KST):
        // 30 min on the LA day 04-11 (evening) and 30 min on 04-12 (night), by the session's zone.
        let s = SessionID()
        try h.run(.startSession(s), book: book, at: "2026-04-11T23:30:00-07:00", zone: "America/Los_Angeles")
        try h.run(.finishSession(s, endPosition: nil, durationSeconds: 3600), book: book, at: "2026-04-12T00:30:00-07:00", zone: "America/Los_Angeles")
        let store = try h.fold()
        let daily = try store.dailyPages(reader: h.reader, in: days("2026-04-09", "2026-04-12"))
        // 04-10: 20 (Seoul) + 30 (LA) = 50; 04-11: 20 (LA). A UTC fold would give 04-09: 20, 04-11: 30, 04-12: 20;
        // a Seoul-only fold 04-10: 20, 04-11: 30, 04-12: 20.
        #expect(pages(daily) == [0, 50, 20, 0])
        #expect(seconds(daily) == [0, 0, 1800, 1800])
        // Hours: 08:00 KST morning; 18:00 and 20:00 PDT evening. Seconds: 23:30-24:00 evening, 00:00-00:30 night.
        let buckets = try store.timeOfDay(reader: h.reader)
        #expect(buckets.pages == [0, 20, 0, 50])
        #expect(buckets.seconds == [1800, 0, 0, 1800])
        let entries = try #require(try store.bookDetail(reader: h.reader, book: book)).pageHistory
        #expect(entries.map(\.day) == [date("2026-04-10"), date("2026-04-10"), date("2026-04-11")])

        // The clock itself, on the instant 2026-04-12T03:00Z.
        let clock = LocalClock()
        #expect(clock.localDay(of: instant("2026-04-12T03:00:00Z"), in: zone("America/Los_Angeles")) == date("2026-04-11"))
        #expect(clock.localDay(of: instant("2026-04-12T03:00:00Z"), in: zone("Asia/Seoul")) == date("2026-04-12"))
        #expect(clock.localDateTime(of: instant("2026-04-12T03:00:00Z"), in: zone("America/Los_Angeles")).secondOfDay == 20 * 3600)
    }

    @Test func dailyReadingAcrossSpringForwardNeitherLosesNorDoublesADay() throws {
        // America/New_York springs forward on 2026-03-08 at 02:00 EST (07:00 UTC) -> 03:00 EDT.
        let bookB = BookID()
        var h = History(zone: "America/New_York")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-03-05T20:00:00-05:00")
        try h.run(.addBook(aladinMetadata(title: "B"), status: .reading), book: bookB, at: "2026-03-05T20:01:00-05:00")
        // 08:00 local each day: 13:00 UTC up to 03-07, 12:00 UTC from 03-08; +10 pages each.
        let readings = ["2026-03-06T08:00:00-05:00", "2026-03-07T08:00:00-05:00", "2026-03-08T08:00:00-04:00",
                        "2026-03-09T08:00:00-04:00", "2026-03-10T08:00:00-04:00"]
        for (k, at) in readings.enumerated() { try h.run(.recordPages(position: 10 * (k + 1)), book: book, at: at) }
        // Half an hour either side of the change's day: 03-07 23:30 EST = 03-08 04:30 UTC (an EDT offset
        // would say 03-08 00:30), and 03-09 00:30 EDT = 03-09 04:30 UTC (an EST offset would say 03-08 23:30).
        try h.run(.recordPages(position: 4), book: bookB, at: "2026-03-07T23:30:00-05:00")  // 03-07 +4 evening
        try h.run(.recordPages(position: 7), book: bookB, at: "2026-03-09T00:30:00-04:00")  // 03-09 +3 night
        // A session 01:30 EST -> 03:30 EDT on 03-08: 06:30 -> 07:30 UTC, one hour of real time (two on the wall clock).
        let s = SessionID()
        try h.run(.startSession(s), book: book, at: "2026-03-08T01:30:00-05:00")
        try h.run(.finishSession(s, endPosition: nil, durationSeconds: 3600), book: book, at: "2026-03-08T03:30:00-04:00")
        let store = try h.fold()

        let daily = try store.dailyPages(reader: h.reader, in: days("2026-03-05", "2026-03-11"))
        // 03-06: 10; 03-07: 10 + 4; 03-08: 10; 03-09: 10 + 3; 03-10: 10.
        #expect(pages(daily) == [0, 10, 14, 10, 13, 10, 0])
        #expect(seconds(daily) == [0, 0, 0, 3600, 0, 0, 0])
        let streaks = try store.streaks(reader: h.reader, asOf: date("2026-03-10"))
        #expect(streaks.currentLength == 5)                      // 03-06 ... 03-10, no day lost or doubled
        #expect(streaks.longest == StreakRun(start: date("2026-03-06"), end: date("2026-03-10")))
        #expect(try store.streakRuns(reader: h.reader).count == 1)
        let buckets = try store.timeOfDay(reader: h.reader)
        #expect(buckets.pages == [3, 50, 0, 4])                  // 00:30 night; five 08:00 mornings; 23:30 evening
        #expect(buckets.seconds == [3600, 0, 0, 0])
        #expect(try store.bookDetail(reader: h.reader, book: book)?.view.sessions.first?.measuredSeconds == 3600)
    }

    @Test func aSessionAcrossSpringForwardAndSixOClockSplitsByTheRealWallClock() throws {
        // 03-08 01:30 EST (06:30 UTC) -> 06:30 EDT (10:30 UTC): 4 h of real time. On the wall clock:
        // night 01:30-02:00 EST (30 min) + 03:00-06:00 EDT (3 h) = 3 h 30 = 12_600 s; morning 06:00-06:30 = 1_800 s.
        let ny = zone("America/New_York")
        let pieces = LocalClock().split(from: instant("2026-03-08T01:30:00-05:00"), to: instant("2026-03-08T06:30:00-04:00"), in: ny)
        #expect(pieces.map(\.day) == [date("2026-03-08"), date("2026-03-08")])
        #expect(pieces.map(\.bucket) == [.night, .morning])
        #expect(pieces.map(\.seconds) == [12_600, 1_800])

        var h = History(zone: "America/New_York")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-03-07T20:00:00-05:00")
        let s = SessionID()
        try h.run(.startSession(s), book: book, at: "2026-03-08T01:30:00-05:00")
        try h.run(.finishSession(s, endPosition: nil, durationSeconds: 14_400), book: book, at: "2026-03-08T06:30:00-04:00")
        let store = try h.fold()
        #expect(try store.timeOfDay(reader: h.reader).seconds == [12_600, 1_800, 0, 0])
        #expect(seconds(try store.dailyPages(reader: h.reader, in: days("2026-03-08", "2026-03-08"))) == [14_400])
    }

    @Test func readingAcrossFallBackNeitherLosesNorDoublesADay() throws {
        // America/New_York falls back on 2026-11-01 at 02:00 EDT (06:00 UTC) -> 01:00 EST; that day has 25 hours.
        let bookB = BookID()
        var h = History(zone: "America/New_York")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-10-29T20:00:00-04:00")
        try h.run(.addBook(aladinMetadata(title: "B"), status: .reading), book: bookB, at: "2026-10-29T20:01:00-04:00")
        // 08:00 local daily 10-30 ... 11-03 (-04:00 up to 10-31, -05:00 from 11-01): +10 each.
        let readings = ["2026-10-30T08:00:00-04:00", "2026-10-31T08:00:00-04:00", "2026-11-01T08:00:00-05:00",
                        "2026-11-02T08:00:00-05:00", "2026-11-03T08:00:00-05:00"]
        for (k, at) in readings.enumerated() { try h.run(.recordPages(position: 10 * (k + 1)), book: book, at: at) }
        try h.run(.recordPages(position: 5), book: bookB, at: "2026-10-31T23:30:00-04:00")   // 11-01 03:30 UTC: 10-31 +5
        try h.run(.recordPages(position: 10), book: bookB, at: "2026-11-01T00:30:00-04:00")  // 04:30 UTC: 11-01 +5
        try h.run(.recordPages(position: 15), book: bookB, at: "2026-11-01T01:30:00-04:00")  // 05:30 UTC (first 01:30): +5
        try h.run(.recordPages(position: 20), book: bookB, at: "2026-11-01T01:30:00-05:00")  // 06:30 UTC (second 01:30): +5
        try h.run(.recordPages(position: 30), book: bookB, at: "2026-11-01T23:30:00-05:00")  // 11-02 04:30 UTC: 11-01 +10
        try h.run(.recordPages(position: 32), book: bookB, at: "2026-11-02T00:30:00-05:00")  // 11-02 05:30 UTC: 11-02 +2
        // A session 00:30 EDT -> 01:30 EST on 11-01: 04:30 -> 06:30 UTC, two hours of real time.
        let s = SessionID()
        try h.run(.startSession(s), book: book, at: "2026-11-01T00:30:00-04:00")
        try h.run(.finishSession(s, endPosition: nil, durationSeconds: 7200), book: book, at: "2026-11-01T01:30:00-05:00")
        let store = try h.fold()

        let daily = try store.dailyPages(reader: h.reader, in: days("2026-10-30", "2026-11-03"))
        // 10-30: 10; 10-31: 10 + 5; 11-01: 10 + 5 + 5 + 5 + 10 = 35; 11-02: 10 + 2; 11-03: 10.
        #expect(pages(daily) == [10, 15, 35, 12, 10])
        #expect(seconds(daily) == [0, 0, 7200, 0, 0])
        #expect(try store.streaks(reader: h.reader, asOf: date("2026-11-03")).currentLength == 5)
        // night: 00:30, 01:30, 01:30, 00:30 = 5 + 5 + 5 + 2 = 17; morning 50; evening 23:30 + 23:30 = 5 + 10 = 15.
        #expect(try store.timeOfDay(reader: h.reader).pages == [17, 50, 0, 15])
        #expect(try store.timeOfDay(reader: h.reader).seconds == [7200, 0, 0, 0])
    }

    @Test func aDayStartHourOfFourMovesTwoOClockToTheDayBefore() throws {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-03-01T20:00:00+09:00")
        try h.run(.setGoal(startDate: date("2026-03-01"), targetDate: date("2026-03-10"), theme: nil), book: book, at: "2026-03-01T20:01:00+09:00")
        try h.run(.recordPages(position: 10), book: book, at: "2026-03-01T22:00:00+09:00")  // 03-01 either way, evening
        try h.run(.recordPages(position: 25), book: book, at: "2026-03-02T02:00:00+09:00")  // 02:00 < 04:00: 03-01 (hour 4), 03-02 (hour 0)
        try h.run(.recordPages(position: 30), book: book, at: "2026-03-02T04:00:00+09:00")  // 03-02 either way
        let s = SessionID()
        try h.run(.startSession(s), book: book, at: "2026-03-03T03:00:00+09:00")
        try h.run(.finishSession(s, endPosition: nil, durationSeconds: 7200), book: book, at: "2026-03-03T05:00:00+09:00")

        // Day start 04:00: pages 03-01 10 + 15 = 25, 03-02 5; the 03:00-05:00 session splits at 04:00:
        // 3600 s on 03-02, 3600 s on 03-03.
        let four = try h.fold(dayStartHour: 4)
        let d4 = try four.dailyPages(reader: h.reader, in: days("2026-03-01", "2026-03-03"))
        #expect(pages(d4) == [25, 5, 0])
        #expect(seconds(d4) == [0, 3600, 3600])
        // Buckets stay by the unshifted hour: 02:00 and 04:00 night (15 + 5), 22:00 evening (10).
        #expect(try four.timeOfDay(reader: h.reader).pages == [20, 0, 0, 10])
        #expect(try four.timeOfDay(reader: h.reader).seconds == [7200, 0, 0, 0])
        // Midnight days: 03-01 10, 03-02 15 + 5 = 20, the whole session on 03-03.
        let zero = try h.fold()
        let d0 = try zero.dailyPages(reader: h.reader, in: days("2026-03-01", "2026-03-03"))
        #expect(pages(d0) == [10, 20, 0])
        #expect(seconds(d0) == [0, 0, 7200])

        // The queries take the same clock: at 02:00 on 03-02, "today" is 03-01 with day start 04:00.
        let seoul = zone("Asia/Seoul")
        let at2 = instant("2026-03-02T02:00:00+09:00")
        let list4 = try four.homeList(reader: h.reader, asOf: at2, zone: seoul, clock: LocalClock(dayStartHour: 4))
        #expect(list4.today == date("2026-03-01"))
        #expect(list4.items.first?.daysLeft == 9)                // 03-01 -> 03-10
        #expect(try zero.homeList(reader: h.reader, asOf: at2, zone: seoul).today == date("2026-03-02"))
        // 03:00 on 03-05 is still 03-04 with day start 04:00, so the run 03-01 ... 03-03 ended yesterday: current 3.
        // At midnight days it is 03-05 and the run ended two days ago: 0.
        let at3 = instant("2026-03-05T03:00:00+09:00")
        #expect(try four.streaks(reader: h.reader, asOf: at3, zone: seoul, clock: LocalClock(dayStartHour: 4)).currentLength == 3)
        #expect(try zero.streaks(reader: h.reader, asOf: at3, zone: seoul).currentLength == 0)
        #expect(LocalClock(dayStartHour: 4).localDay(of: at2, in: seoul) == date("2026-03-01"))
        #expect(LocalClock(dayStartHour: 4).timeOfDay(of: at2, in: seoul) == .night)
    }
}
