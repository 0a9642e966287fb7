import Testing
import ReadingEvents
@testable import Projections

/// The projector credits a page record that is the latest of its read-through without rebuilding
/// the read-through's timeline; every other mark (back-dated, a correction) recomputes it. Both
/// must give what a fresh `PageTimeline` of the read-through gives.
@Suite("Page credits")
struct PageCreditTests {
    @Test(arguments: 0..<200 as Range<UInt64>)
    func everyEntryHasTheCreditsAFreshTimelineGives(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0x9A6E_0000 + seed)
        let reader = ReaderID(), book = BookID()
        let seoul = try ZoneID("Asia/Seoul")
        var store = InMemoryViewStore()
        let projector = ReadingProjector()
        var position: UInt64 = 0
        let start = Timestamp(iso8601: "2026-03-01T08:00:00+09:00")!
        var latest = start
        func fold(_ event: ReadingEvent, at t: Timestamp) throws {
            position += 1
            try projector.apply(EventEnvelope(position: position, reader: reader, occurredAt: t, timeZone: seoul,
                                              recordedAt: t, event: event), to: &store)
        }
        try fold(.bookAdded(BookAdded(book: book, metadata: BookMetadata(title: "책", pageCount: 500), status: .reading)), at: start)
        var readThrough = 1
        for _ in 0..<Int(rng.next() % 60 + 5) {
            let roll = rng.next() % 100
            // Mostly forward records at a later instant; some back-dated, some corrections, a re-read.
            let step = Int64(rng.next() % 20 + 1) * 3_600_000_000
            let backDated = roll < 15
            let at = backDated ? Timestamp(microseconds: latest.microseconds - Int64(rng.next() % 72 + 1) * 3_600_000_000)
                               : Timestamp(microseconds: latest.microseconds + step)
            if !backDated { latest = at }
            let page = Int(rng.next() % 500)
            if roll < 25 && roll >= 15 {
                try fold(.progressCorrected(ProgressCorrected(book: book, position: page)), at: at)
            } else if roll == 99 {
                readThrough += 1
                try fold(.readThroughStarted(ReadThroughStarted(book: book, readThrough: readThrough)), at: at)
            } else {
                try fold(.pagesRead(PagesRead(book: book, position: page)), at: at)
            }
        }
        let view = try #require(try store.bookView(reader: reader, book: book))
        var total = 0
        for group in Set(view.entries.map(\.readThrough)) {
            let entries = view.entries.filter { $0.readThrough == group }
            var timeline = PageTimeline()
            for e in entries { timeline.insert(.init(occurredAt: e.occurredAt, sequence: e.order, position: e.position, isCorrection: e.kind == .correction)) }
            #expect(entries.map(\.credited) == timeline.credits, "seed \(seed), read-through \(group)")
            #expect(entries.map(\.effective) == timeline.effectivePositions, "seed \(seed), read-through \(group)")
            total += timeline.credits.reduce(0, +)
        }
        // And the day totals hold exactly the credits.
        let all = try store.dailyPages(reader: reader, in: LocalDate(iso: "2025-01-01")...LocalDate(iso: "2027-12-31"))
        #expect(all.map(\.total.pages).reduce(0, +) == total, "seed \(seed)")
    }
}
