import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import TestSupport
import Testing

/// Issue 25, case 4: two stores that hold the same events answer the same, whatever order they
/// appended them in. The defaults `show`, `report` and the library's queries take from the history
/// (the zone, "today", the end of the daily bars) come from the canonical order, not the log order.
///
/// One reader, two devices. Device Y (Los Angeles) adds 소년이 온다 and reads p.40 on 6/11 at
/// 20:00 LA time (6/12 12:00 in Seoul). Device X (Seoul) adds 채식주의자 on 6/12 09:00 (6/11
/// 17:00 in LA), reads p.60 at 6/12 21:00 and likes it on 6/14 10:00 Seoul time (6/13 18:00 in
/// LA): in canonical order (stamps follow the instants) X's like is the reader's last event.
/// Store A merges X's events, then Y's (its log ends with Y's p.40, in LA); store B merges Y's,
/// then X's (its log ends with X's like, in Seoul). Both must say: zone Asia/Seoul, today 6/14,
/// and with --since 6/1 --until 6/30 the daily bars end on 6/14 (the day of the last event).
@Suite("Converged stores answer the same")
struct ConvergedDefaultsTests {
    let reader = ReaderID(UUID(uuidString: "5d2c7e1a-3b4f-4a60-9c8d-1e2f3a4b5c6d")!)
    let seoulBook = BookID(UUID(uuidString: "6e3d8f2b-4c5a-4b71-8d9e-2f3a4b5c6d7e")!)
    let laBook = BookID(UUID(uuidString: "7f4e9a3c-5d6b-4c82-9eaf-3a4b5c6d7e8f")!)

    func at(_ text: String) -> Timestamp { Timestamp(iso8601: text)! }

    func context(_ time: String, _ zone: String) -> CommandContext {
        CommandContext(reader: reader, occurredAt: at(time), timeZone: zone, commandID: EventID())
    }

    /// Stores A and B in `temp`: the same events, appended in two orders.
    func convergedStores(in temp: CLITempDirectory) throws {
        let x = try ReadingStore.open(at: temp.child("x"), replica: ReplicaID(UUID(uuidString: "A0000000-0000-4000-8000-000000000001")!))
        let y = try ReadingStore.open(at: temp.child("y"), replica: ReplicaID(UUID(uuidString: "B0000000-0000-4000-8000-000000000002")!))
        let seoul = "Asia/Seoul", la = "America/Los_Angeles"
        try y.execute(.addBook(BookMetadata(title: "소년이 온다", authors: "한강 (지은이)", pageCount: 216), status: .reading),
                      book: laBook, context: context("2026-06-10T09:00:00-07:00", la))
        try y.execute(.recordPages(position: 40), book: laBook, context: context("2026-06-11T20:00:00-07:00", la))
        try x.execute(.addBook(BookMetadata(title: "채식주의자", authors: "한강 (지은이)", pageCount: 300), status: .reading),
                      book: seoulBook, context: context("2026-06-12T09:00:00+09:00", seoul))
        try x.execute(.recordPages(position: 60), book: seoulBook, context: context("2026-06-12T21:00:00+09:00", seoul))
        try x.execute(.like, book: seoulBook, context: context("2026-06-14T10:00:00+09:00", seoul))
        let fromX = try x.changes(since: VersionVector(), limit: .max), fromY = try y.changes(since: VersionVector(), limit: .max)
        let a = try ReadingStore.open(at: temp.child("a")), b = try ReadingStore.open(at: temp.child("b"))
        try a.merge(fromX); try a.merge(fromY)
        try b.merge(fromY); try b.merge(fromX)
        // The same events, in two log orders: A's log ends in Los Angeles, B's in Seoul.
        #expect(try a.latestEvent(of: reader)?.timeZone.identifier == la)
        #expect(try b.latestEvent(of: reader)?.timeZone.identifier == seoul)
        #expect(try a.versionVector() == b.versionVector())
        #expect(try a.viewDigest() == b.viewDigest())
    }

    @Test func showAndReportWithoutZoneOrAsOfPrintTheSameOnBothStores() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        try convergedStores(in: temp)
        var outputs: [[String]] = []
        for name in ["a", "b"] {
            let store = temp.path(name)
            let json = try replayOK(["show", "--store", store, "--json"]).stdout
            let text = try replayOK(["show", "--store", store]).stdout
            let fixed = try replayOK(["show", "--store", store, "--json", "--zone", "Asia/Seoul",
                                      "--since", "2026-06-01", "--until", "2026-06-30"]).stdout
            try replayOK(["report", "--store", store, "--reader", reader.description, "--out", temp.path("\(name).html")])
            let html = String(decoding: try Data(contentsOf: temp.child("\(name).html")), as: UTF8.self)
            outputs.append([json, text, fixed, html])

            // The defaults: the zone of the last event in canonical order (X's like in Seoul), today
            // its day there; the clamped bars run from 6/11 (Y's reading day, in LA) to 6/14.
            let document = try #require((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])?.first)
            #expect(document["zone"] as? String == "Asia/Seoul", "store \(name)")
            #expect(document["today"] as? String == "2026-06-14", "store \(name)")
            let bars = try #require((try JSONSerialization.jsonObject(with: Data(fixed.utf8)) as? [[String: Any]])?.first?["daily"] as? [[String: Any]])
            #expect(bars.first?["day"] as? String == "2026-06-11", "store \(name)")
            #expect(bars.last?["day"] as? String == "2026-06-14", "store \(name)")
            #expect(bars.compactMap { $0["pages"] as? Int } == [40, 60, 0, 0], "store \(name)")
        }
        for (index, what) in ["show --json", "show", "show --zone --since --until", "report"].enumerated() {
            #expect(outputs[0][index] == outputs[1][index], "\(what) differs between the two stores")
        }
    }

    /// Every query of the library, with the defaults a host takes from the history
    /// (``ViewStore/defaultAsOf(reader:now:)`` and ``ViewStore/lastEvent(reader:)``), rendered to
    /// text and compared byte for byte between the two stores.
    @Test func everyQueryAnswersTheSameOnBothStores() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        try convergedStores(in: temp)
        var rendered: [[String]] = []
        for name in ["a", "b"] {
            let store = try ReadingStore.open(at: temp.child(name))
            rendered.append(try store.withViews { views in try render(views) })
        }
        #expect(rendered[0].count == rendered[1].count)
        for (a, b) in zip(rendered[0], rendered[1]) { #expect(a == b) }
        #expect(rendered[0].first == "last event: Asia/Seoul")
    }

    func render(_ views: any ViewStore) throws -> [String] {
        let last = try #require(try views.lastEvent(reader: reader))
        let asOf = try #require(try views.defaultAsOf(reader: reader, now: at("2100-01-01T00:00:00Z")))
        let zone = last.timeZone
        let clock = LocalClock()
        let today = clock.localDay(of: asOf, in: zone)
        let june = try LocalDate(iso: "2026-06-01")...LocalDate(iso: "2026-06-30")
        var out = ["last event: \(zone)", "asOf: \(asOf) \(last.occurredAt) today \(today)"]
        for sort in HomeSort.allCases { out.append("home \(sort): \(try views.homeList(reader: reader, asOf: asOf, zone: zone, sortedBy: sort))") }
        for filter in ShelfFilter.allCases { out.append("shelf \(filter): \(try views.bookshelf(reader: reader, showing: filter))") }
        for book in [seoulBook, laBook] {
            let detail = try #require(try views.bookDetail(reader: reader, book: book))
            out.append("detail \(book): \(detail.pageHistory) \(detail.dailyBars.map { "\($0.day) \($0.total)" }) \(detail.view.sessions) \(detail.view.finishes)")
            out.append("daily \(book): \(try views.dailyPages(reader: reader, book: book, in: june).map { "\($0.day) \($0.total)" })")
        }
        out.append("daily: \(try views.dailyPages(reader: reader, in: june).map { "\($0.day) \($0.total)" })")
        out.append("calendar: \(try views.calendarMonth(reader: reader, month: YearMonth(today)).map { "\($0.day) \($0.total)" })")
        out.append("time of day: \(try views.timeOfDay(reader: reader))")
        out.append("streaks: \(try views.streaks(reader: reader, asOf: asOf, zone: zone))")
        out.append("monthly: \(try views.monthly(reader: reader, in: YearMonth(year: 2026, month: 1)...YearMonth(today)).map { "\($0.month) \($0.total)" })")
        out.append("summary: \(try views.summary(reader: reader))")
        out.append("open sessions: \(try views.openSessions(reader: reader))")
        out.append("years: \(try views.years(reader: reader))")
        out.append("categories: \(try views.categoryBreakdown(reader: reader, period: .year(today.year))) \(try views.categoryBreakdown(reader: reader, period: .allTime))")
        out.append("challenge: \(try views.challengeProgress(reader: reader, year: today.year, asOf: asOf, zone: zone))")
        out.append("review: \(try views.yearInReview(reader: reader, year: today.year))")
        out.append("report: \(try views.reportData(reader: reader, asOf: asOf, zone: zone))")
        return out
    }
}
