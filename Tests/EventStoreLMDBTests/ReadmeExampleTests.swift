import EventStoreLMDB
import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing

/// The README's quick start, as a test: it must keep compiling and doing what the README says.
@Suite struct ReadmeExampleTests {
    @Test func quickStartForHostApps() throws {
        try withTempDirectory { dir in
            // --- as in README.md, "Quick start for host apps" (the path is a temp directory here) ---
            let store = try ReadingStore.open(at: dir.child("reading"))
            let reader = ReaderID()
            let book = BookID()
            func now() -> CommandContext {
                CommandContext(reader: reader, occurredAt: Timestamp(Date()), timeZone: TimeZone.current.identifier)
            }

            let metadata = BookMetadata(title: "채식주의자", authors: "한강 (지은이)", publisher: "창비",
                                        isbn13: try ISBN13("9788936433598"), pageCount: 247,
                                        categoryPath: "국내도서>소설/시/희곡>한국소설")
            try store.execute(.addBook(metadata, status: .reading), book: book, context: now())
            try store.execute(.setGoal(startDate: try LocalDate(iso: "2026-03-01"),
                                       targetDate: try LocalDate(iso: "2026-03-20"), theme: "orange"),
                              book: book, context: now())
            try store.execute(.recordPages(position: 42), book: book, context: now())

            var printed = ""
            do {
                try store.execute(.setRating(stars: 4.3), book: book, context: now())
            } catch let error as ValidationError {
                printed = "\(error)"      // rating: 4.3 stars is not a multiple of 0.25 [rule: offQuarterStep]
            }

            let seoul = try ZoneID("Asia/Seoul")
            let home = try store.withViews { views in
                try views.homeList(reader: reader, asOf: Timestamp(Date()), zone: seoul, sortedBy: .titleAscending)
            }
            // --- the README's sync example ---
            let tablet = try ReadingStore.open(at: dir.child("tablet"))
            try tablet.merge(store.changes(since: tablet.versionVector()))
            try tablet.execute(.recordPages(position: 60), book: book, context: now())   // (not in the README) the tablet reads on
            try store.merge(tablet.changes(since: store.versionVector()))
            // --- end of the README code ---
            #expect(try store.viewDigest() == tablet.viewDigest())
            #expect(try store.withViews { try $0.bookView(reader: reader, book: book)?.position } == 60)
            #expect(printed == "rating: 4.3 stars is not a multiple of 0.25 [rule: offQuarterStep]")
            #expect(home.items.map(\.metadata.title) == ["채식주의자"])
            #expect(home.items.first?.position == 42)
        }
    }
}
