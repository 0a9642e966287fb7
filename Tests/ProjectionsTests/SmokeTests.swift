import Testing
import ReadingEvents
@testable import Projections

@Suite("Projections smoke")
struct ProjectionsSmokeTests {
    @Test func pagesLandOnTheirLocalDay() throws {
        let reader = ReaderID(), book = BookID()
        let seoul = try ZoneID("Asia/Seoul")
        var store = InMemoryViewStore()
        let projector = ReadingProjector()
        var position: UInt64 = 0
        func fold(_ event: ReadingEvent, _ at: String) throws {
            position += 1
            let t = Timestamp(iso8601: at)!
            try projector.apply(EventEnvelope(position: position, reader: reader, occurredAt: t, timeZone: seoul, recordedAt: t, event: event), to: &store)
        }
        try fold(.bookAdded(BookAdded(book: book, metadata: BookMetadata(title: "책", pageCount: 100), status: .reading)), "2026-03-01T20:00:00+09:00")
        try fold(.pagesRead(PagesRead(book: book, position: 10)), "2026-03-01T23:50:00+09:00")
        try fold(.pagesRead(PagesRead(book: book, position: 25)), "2026-03-02T00:10:00+09:00")
        let days = try store.dailyPages(reader: reader, in: LocalDate(iso: "2026-03-01")...LocalDate(iso: "2026-03-02"))
        #expect(days.map(\.total.pages) == [10, 15])
        #expect(try store.streaks(reader: reader, asOf: LocalDate(iso: "2026-03-02")).currentLength == 2)
        #expect(try store.timeOfDay(reader: reader).pages == [15, 0, 0, 10])
    }
}
