import Foundation
import Projections
import ReadingEvents
import ReadingReport
import Testing

/// The page itself, without a browser: folded from a small history in memory, rendered, and read
/// back as text. (`ReportBrowserTests` opens the page of a demo store in Chromium.)
@Suite("Report page HTML")
struct ReportPageTests {
    let reader = ReaderID(), book = BookID()

    /// A leap year's history: a book whose title and category carry markup, read on 29 February.
    func views() throws -> InMemoryViewStore {
        var views = InMemoryViewStore()
        let projector = ReadingProjector()
        var position: UInt64 = 0
        var versions: [StreamID: UInt64] = [:]
        func apply(_ command: BookCommand, at text: String, state: inout BookState) throws {
            for event in try command.decide(for: book, in: state, at: Timestamp(iso8601: text)!) {
                try append(event, at: text)
                state.apply(event, occurredAt: Timestamp(iso8601: text)!)
            }
        }
        func append(_ event: ReadingEvent, at text: String) throws {
            position += 1
            let stream = event.stream(for: reader)
            versions[stream, default: 0] += 1
            try projector.apply(EventEnvelope(position: position, stream: stream, streamVersion: versions[stream]!, reader: reader,
                                              occurredAt: Timestamp(iso8601: text)!, timeZone: try ZoneID("Asia/Seoul"),
                                              recordedAt: Timestamp(iso8601: text)!, event: event), to: &views)
        }
        var state = BookState()
        let metadata = BookMetadata(title: "<script>alert(\"책\")</script> & co", authors: "A", pageCount: 120,
                                    categoryPath: "국내도서>\"Quoted\" <b>")
        try apply(.addBook(metadata, status: .reading), at: "2024-02-29T08:00:00+09:00", state: &state)
        try apply(.recordPages(position: 57), at: "2024-02-29T21:00:00+09:00", state: &state)
        try apply(.recordPages(position: 120), at: "2024-03-02T21:00:00+09:00", state: &state)
        try apply(.finishBook(on: try LocalDate(iso: "2024-03-02")), at: "2024-03-02T21:05:00+09:00", state: &state)
        try append(.challengeSet(ChallengeSet(year: 2024, books: 5, pages: nil)), at: "2024-01-01T09:00:00+09:00")
        return views
    }

    @Test func thePageHasEveryDayOfALeapYearAndEscapesWhatTheReaderTyped() throws {
        let data = try views().reportData(reader: reader, year: 2024, asOf: Timestamp(iso8601: "2024-03-10T12:00:00+09:00")!,
                                          zone: try ZoneID("Asia/Seoul"))
        #expect(data.calendar.count == 366 && data.pace.count == 70)
        #expect(data.categories.topLevel.map(\.finishedBooks) == [1])
        let html = ReportPage.html(for: data)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.components(separatedBy: "class=\"day ").count - 1 == 366)
        #expect(html.contains("data-date=\"2024-02-29\" data-pages=\"57\""))
        // Nothing the reader typed becomes markup: no script element, no stray tag, attributes quoted.
        #expect(!html.contains("<script") && !html.contains("<b>"))
        #expect(html.contains("&lt;script&gt;alert(\"책\")&lt;/script&gt; &amp; co"))
        // (">" separates category levels, so the path is 국내도서 > "Quoted" <b.)
        #expect(html.contains("data-category=\"국내도서&gt;&quot;Quoted&quot; &lt;b\""))
        // Self-contained: no reference to anything outside the file.
        #expect(!html.contains("src=") && !html.contains("href=") && !html.contains("url(") && !html.contains("@import"))
        #expect(html.contains("prefers-color-scheme: dark"))
    }

    @Test func unknownReadersAndEmptyYearsAreTypedErrors() throws {
        let views = try views()
        let asOf = Timestamp(iso8601: "2024-03-10T12:00:00+09:00")!, seoul = try ZoneID("Asia/Seoul")
        #expect(throws: ReportDataError.unknownReader(ReaderID(uuidString: "00000000-0000-4000-8000-000000000000")!)) {
            try views.reportData(reader: ReaderID(uuidString: "00000000-0000-4000-8000-000000000000")!, asOf: asOf, zone: seoul)
        }
        #expect(throws: ReportDataError.noData(reader: reader, year: 2023)) {
            try views.reportData(reader: reader, year: 2023, asOf: asOf, zone: seoul)
        }
    }
}
