import Testing
import ReadingEvents
@testable import Projections

/// The category, challenge and year-in-review views against numbers worked out by hand, on a
/// history with a re-read, an undone finish, a category correction and reading at 23:30 local on
/// New Year's Eve in New York (04:30 UTC on 1 January: a UTC fold would put it in the new year).
@Suite("Year views: categories, challenge, year in review")
struct YearViewTests {
    let novel = BookID(), science = BookID(), history = BookID()
    static let korean = "국내도서>소설/시/희곡>한국소설"
    static let astronomy = "국내도서>과학>천문학"

    func scenario() throws -> History {
        var h = History(zone: "America/New_York")
        // The novel (300 pages): read in 2025, the last 200 pages on New Year's Eve after 23:30 local.
        try h.run(.addBook(aladinMetadata(title: "채식주의자", pageCount: 300, category: Self.korean), status: .reading),
                  book: novel, at: "2025-12-20T09:00:00-05:00")
        try h.run(.recordPages(position: 100), book: novel, at: "2025-12-20T10:00:00-05:00")
        try h.run(.recordPages(position: 250), book: novel, at: "2025-12-31T23:30:00-05:00")   // 2026-01-01T04:30Z
        try h.run(.recordPages(position: 300), book: novel, at: "2025-12-31T23:45:00-05:00")
        try h.run(.finishBook(on: date("2025-12-31")), book: novel, at: "2025-12-31T23:50:00-05:00")
        // ... and re-read in 2026: 300 pages again, finished again.
        try h.run(.startReadThrough, book: novel, at: "2026-02-01T08:00:00-05:00")
        try h.run(.recordPages(position: 120), book: novel, at: "2026-02-01T09:00:00-05:00")
        try h.run(.recordPages(position: 300), book: novel, at: "2026-02-10T21:00:00-05:00")
        try h.run(.finishBook(on: date("2026-02-10")), book: novel, at: "2026-02-10T21:10:00-05:00")
        try h.run(.setRating(stars: 4.5), book: novel, at: "2026-02-10T21:11:00-05:00")

        // The science book: read through, finished, and the finish undone.
        try h.run(.addBook(aladinMetadata(title: "코스모스", pageCount: 200, category: Self.astronomy), status: .reading),
                  book: science, at: "2026-01-05T08:00:00-05:00")
        try h.run(.recordPages(position: 200), book: science, at: "2026-01-05T20:00:00-05:00")
        try h.run(.finishBook(on: date("2026-01-06")), book: science, at: "2026-01-06T08:00:00-05:00")
        try h.run(.undoFinish, book: science, at: "2026-01-07T08:00:00-05:00")

        // The history book: finished, then its category corrected to another first level.
        let before = aladinMetadata(title: "총, 균, 쇠", pageCount: 150, category: "국내도서>역사>세계사")
        try h.run(.addBook(before, status: .reading), book: history, at: "2026-03-01T08:00:00-05:00")
        try h.run(.recordPages(position: 150), book: history, at: "2026-03-01T22:00:00-05:00")
        try h.run(.finishBook(on: date("2026-03-02")), book: history, at: "2026-03-02T08:00:00-05:00")
        try h.run(.setRating(stars: 3.5), book: history, at: "2026-03-02T08:01:00-05:00")
        var after = before
        after.categoryPath = " 외국도서 > History>World "
        try h.run(.correctMetadata(after), book: history, at: "2026-03-05T08:00:00-05:00")

        // The challenge, set and then changed.
        try h.run(.setChallenge(year: 2026, books: 12, pages: nil), at: "2026-01-01T09:00:00-05:00")
        try h.run(.setChallenge(year: 2026, books: 10, pages: 3_650), at: "2026-01-02T09:00:00-05:00")
        return h
    }

    @Test func categoriesPerYearAndAllTimeEqualTheHandCount() throws {
        let h = try scenario()
        let views = try h.fold()
        let y2025 = try views.categoryBreakdown(reader: h.reader, period: .year(2025))
        // The New Year's Eve pages stay in 2025 (local day), with the first finish.
        #expect(y2025.topLevel == [CategoryTotal(category: "국내도서", finishedBooks: 1, pages: 300)])
        #expect(y2025.fullPath == [CategoryTotal(category: Self.korean, finishedBooks: 1, pages: 300)])

        let y2026 = try views.categoryBreakdown(reader: h.reader, period: .year(2026))
        // 국내도서: the re-read novel (finished again, 300 pages) + the science book (200 pages, finish undone).
        // 외국도서: the history book, counted under its corrected category only.
        #expect(y2026.topLevel == [CategoryTotal(category: "국내도서", finishedBooks: 1, pages: 500),
                                   CategoryTotal(category: "외국도서", finishedBooks: 1, pages: 150)])
        #expect(y2026.fullPath == [CategoryTotal(category: Self.korean, finishedBooks: 1, pages: 300),
                                   CategoryTotal(category: "외국도서>History>World", finishedBooks: 1, pages: 150),
                                   CategoryTotal(category: Self.astronomy, finishedBooks: 0, pages: 200)])
        #expect(y2026.finishedBooks == 2)

        // All time: the re-read novel is one finished book with 600 pages.
        let all = try views.categoryBreakdown(reader: h.reader, period: .allTime)
        #expect(all.topLevel == [CategoryTotal(category: "국내도서", finishedBooks: 1, pages: 800),
                                 CategoryTotal(category: "외국도서", finishedBooks: 1, pages: 150)])
        #expect(all.pages == 950)
        #expect(try views.years(reader: h.reader) == [2025, 2026])
    }

    @Test func challengeProgressEqualsTheHandComputedPace() throws {
        let h = try scenario()
        let views = try h.fold()
        // 2026-03-31 in New York: day 90 of 365.
        let progress = try views.challengeProgress(reader: h.reader, year: 2026, asOf: instant("2026-03-31T12:00:00-04:00"),
                                                    zone: zone("America/New_York"))
        #expect(progress.challenge == ChallengeSet(year: 2026, books: 10, pages: 3_650))
        #expect(progress.today == date("2026-03-31"))
        #expect((progress.elapsedDays, progress.daysInYear) == (90, 365))
        #expect((progress.booksFinished, progress.pagesRead) == (2, 650))
        // books: 10 × 90 / 365 = 2.47 -> 2 expected, on pace; 2 × 365 / 90 = 8.1 -> 8 projected.
        #expect(progress.books == ChallengePace(target: 10, done: 2, expectedByToday: 2, aheadBy: 0, projectedTotal: 8))
        // pages: 3650 × 90 / 365 = 900 expected, 250 behind; 650 × 365 / 90 = 2636.1 -> 2636.
        #expect(progress.pages == ChallengePace(target: 3_650, done: 650, expectedByToday: 900, aheadBy: -250, projectedTotal: 2_636))

        // "Today" is the reading day of asOf in the zone given: 2026-01-01T03:00Z is still 31 December
        // in New York, before the year starts.
        let early = try views.challengeProgress(reader: h.reader, year: 2026, asOf: instant("2026-01-01T03:00:00Z"),
                                                zone: zone("America/New_York"))
        #expect(early.elapsedDays == 0 && early.books?.projectedTotal == 0)
        // 2025 has no challenge but still has its counts.
        let past = try views.challengeProgress(reader: h.reader, year: 2025, today: date("2026-06-01"))
        #expect(past.challenge == nil && past.books == nil && past.booksFinished == 1 && past.pagesRead == 300)
    }

    @Test func yearInReviewEqualsTheHandCount() throws {
        let h = try scenario()
        let review = try h.fold().yearInReview(reader: h.reader, year: 2026)
        #expect(review.booksFinished == 2 && review.pages == 650 && review.minutes == 0)
        // Reading days of 2026: 01-05, 02-01, 02-10, 03-01: runs of one day each.
        #expect(review.longestStreak?.length == 1)
        // January 200 (science), February 120 + 180 (the re-read), March 150.
        #expect(review.mostReadMonth?.month == YearMonth(year: 2026, month: 2) && review.mostReadMonth?.pages == 300)
        // The history book took two days (03-01 to 03-02, both counted); the re-read took 10 (02-01 to 02-10).
        #expect(review.fastestBook?.book == history && review.fastestBook?.days == 2)
        #expect(review.longestBook?.book == novel && review.longestBook?.pageCount == 300)
        #expect(review.averageRating == 4.0)
        // One finished book each in 한국소설 and History (second levels): the tie goes to more pages.
        #expect(review.favouriteCategory == "소설/시/희곡")
    }

    @Test func settingTheSameChallengeAgainAddsNothingAndBadTargetsAreRejected() throws {
        var h = try scenario()
        #expect(try h.run(.setChallenge(year: 2026, books: 10, pages: 3_650), at: "2026-04-01T09:00:00-04:00").isEmpty)
        for (year, books, pages, field) in [(2026, 0, nil, "books"), (2026, -1, nil, "books"), (2026, nil, 0, "pages"),
                                            (2026, nil, -1, "pages"), (1899, 5, nil, "year"), (2200, 5, nil, "year"),
                                            (2026, nil, nil, "books")] as [(Int, Int?, Int?, String)] {
            #expect(throws: ValidationError.self) { try h.run(.setChallenge(year: year, books: books, pages: pages), at: "2026-04-01T09:00:00-04:00") }
            do { _ = try ChallengeSet(year: year, books: books, pages: pages).validated() } catch {
                #expect(error.field == field)
            }
        }
    }

    @Test func foldingInChunksThroughTheCacheGivesTheSameYearViews() throws {
        let h = try scenario()
        let direct = try h.fold()
        var cached = CachingViewStore(base: InMemoryViewStore())
        let projector = ReadingProjector()
        for (i, envelope) in h.envelopes.enumerated() {
            try projector.apply(envelope, to: &cached)
            if i % 5 == 4 { try cached.flush() }
        }
        try cached.flush()
        #expect(cached.base == direct)
        #expect(try direct.yearViews(reader: h.reader).map(\.year) == [2025, 2026])
    }
}
