import Testing
import ReadingEvents
@testable import Projections
import EventStoreLMDB

/// Issue 16, case 3: when the caller names no "today", it is the reader's latest moment in the
/// history (the latest occurredAt or recordedAt of their events), or the clock when that is sooner;
/// never the instant of whichever event was appended last.
@Suite("Default today")
struct DefaultTodayTests {
    let book = BookID()

    /// Pages on 06-01, 06-02, 06-05 and 06-07 (21:00 in Seoul), then the pages of 06-03 recorded
    /// on 06-08 at 08:00, appended last.
    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(), status: .reading), book: book, at: "2026-06-01T09:00:00+09:00")
        try h.run(.recordPages(position: 10), book: book, at: "2026-06-01T21:00:00+09:00")
        try h.run(.recordPages(position: 20), book: book, at: "2026-06-02T21:00:00+09:00")
        try h.run(.recordPages(position: 40), book: book, at: "2026-06-05T21:00:00+09:00")
        try h.run(.recordPages(position: 60), book: book, at: "2026-06-07T21:00:00+09:00")
        try h.run(.recordPages(position: 30), book: book, at: "2026-06-03T21:00:00+09:00", recordedAt: "2026-06-08T08:00:00+09:00")
        return h
    }

    @Test func todayIsTheLatestMomentOrTheClockWhenSooner() throws {
        let h = try history()
        let store = try h.fold()
        let r = h.reader
        // The last appended event happened on 06-03 (what `show` used to take for today) ...
        #expect(h.envelopes.last?.occurredAt == instant("2026-06-03T21:00:00+09:00"))
        // ... but the latest moment is its recordedAt, 06-08 08:00, later than every occurredAt (06-07 21:00).
        let later = instant("2026-11-23T12:00:00Z")
        let asOf = try #require(try store.defaultAsOf(reader: r, now: later))
        #expect(asOf == instant("2026-06-08T08:00:00+09:00"))
        #expect(LocalClock().localDay(of: asOf, in: zone("Asia/Seoul")) == date("2026-06-08"))
        // 06-05 and 06-07 are inside the last 30 days as of that day: 06-01 … 06-08 read 10, 10, 10, 0, 10, 0, 20, 0.
        #expect(pages(try store.dailyPages(reader: r, in: days("2026-06-01", "2026-06-08"))) == [10, 10, 10, 0, 10, 0, 20, 0])

        // A clock sooner than the history (events stamped in the future): the clock.
        let sooner = instant("2026-06-06T12:00:00+09:00")
        #expect(try store.defaultAsOf(reader: r, now: sooner) == sooner)
        // A reader without events has none.
        #expect(try store.defaultAsOf(reader: ReaderID(), now: later) == nil)
    }

    @Test func theLatestMomentSurvivesTheStoredFormAndOldRecordsDecodeWithout() throws {
        let h = try history()
        let view = try #require(try h.fold().readerView(reader: h.reader))
        #expect(view.latestMoment == instant("2026-06-08T08:00:00+09:00"))
        #expect(view.lastEvent?.timeZone == zone("Asia/Seoul"))
        let current = ViewRecordCodec.encode(view)
        #expect(try ViewRecordCodec.decodeReaderView(current) == view)
        #expect(current.first == 6)
        // Format 6 ends with the longest run; format 5 ended before it (absent: 1 byte).
        var withoutLongest = view
        withoutLongest.longestRun = nil
        var formatFive = Array(ViewRecordCodec.encode(withoutLongest).dropLast(1))
        formatFive[0] = 5
        #expect(try ViewRecordCodec.decodeReaderView(formatFive) == withoutLongest)
        // Format 5 ends with the last event; format 3 ended before it (absent: 1 byte).
        var withoutLast = withoutLongest
        withoutLast.lastEvent = nil
        var formatThree = Array(ViewRecordCodec.encode(withoutLast).dropLast(2))
        formatThree[0] = 3
        #expect(try ViewRecordCodec.decodeReaderView(formatThree) == withoutLast)
        // Format 3 ends with the origins of the home order and the profile (none here: 1 + 1 bytes).
        var formatTwo = Array(formatThree.dropLast(2))
        formatTwo[0] = 2
        #expect(try ViewRecordCodec.decodeReaderView(formatTwo) == withoutLast)
        // Format 1 ended after eventCount: format 2 without the latest moment (1 + 8 bytes).
        var old = Array(formatTwo.dropLast(9))
        old[0] = 1
        var expected = withoutLast
        expected.latestMoment = nil
        #expect(try ViewRecordCodec.decodeReaderView(old) == expected)
    }
}
