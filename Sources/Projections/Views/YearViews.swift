import ReadingEvents

// The years view: a reader's record per calendar year (the challenge, each book's pages and
// finishes in the year). Its record, table, codec, accessors, fold step and queries (category
// breakdown, challenge progress, year in review). A year's challenge is set by the projector
// (`ChallengeSet` is a reader's register, not a total).

/// One book's part in one calendar year: pages credited to days of the year, and finishes whose
/// finish day falls in it.
///
/// `Sendable`: plain values.
public struct YearBook: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Pages credited to reading days of the year (every read-through; corrections applied).
    public var pages: Int
    /// Finishes dated in the year (a re-read finished in the same year adds one; an undone finish
    /// takes one back).
    public var finishes: Int
    /// A book's part.
    public init(book: BookID, pages: Int = 0, finishes: Int = 0) { self.book = book; self.pages = pages; self.finishes = finishes }
}

/// What the views keep about one calendar year of a reader: the yearly challenge, and each book's
/// pages and finishes in the year. The category, challenge and year-in-review queries read it.
///
/// Books are kept by ID, not by category: the category of a book is read from its
/// ``BookView`` when a query runs, so a corrected category moves all of the book's pages and
/// finishes at once.
///
/// `Sendable`: a value type.
public struct YearView: Hashable, Sendable {
    /// The calendar year (of local reading days and finish days).
    public var year: Int
    /// The latest challenge set for the year (last writer wins, by canonical order).
    public var challenge: ChallengeSet?
    /// The origin of the event that set ``challenge``.
    public var challengeOrigin: EventOrigin?
    /// Books with pages or finishes in the year, in book-ID order; none with both zero.
    public var books: [YearBook]
    /// An empty year.
    public init(year: Int, challenge: ChallengeSet? = nil, books: [YearBook] = []) {
        self.year = year; self.challenge = challenge; self.books = books; self.challengeOrigin = nil
    }
    /// Whether there is nothing to keep.
    public var isEmpty: Bool { challenge == nil && books.isEmpty }

    /// Adds pages and finishes to one book's part, keeping the order and dropping zero parts.
    /// Finds the part by binary search: a year of 100,000 books is one array, and a linear search
    /// was a third of a 100,000-book import's time (issue 37).
    public mutating func add(book: BookID, pages: Int, finishes: Int) {
        var index = books.startIndex, high = books.endIndex
        while index < high {
            let middle = index + (high - index) / 2
            if books[middle].book < book { index = middle + 1 } else { high = middle }
        }
        if index < books.endIndex, books[index].book == book {
            books[index].pages += pages; books[index].finishes += finishes
            if books[index].pages == 0, books[index].finishes == 0 { books.remove(at: index) }
        } else if pages != 0 || finishes != 0 {
            books.insert(YearBook(book: book, pages: pages, finishes: finishes), at: index)
        }
    }
}

extension ViewRecords {
    /// Non-empty year records by year.
    ///
    /// `Sendable`: a table type.
    public enum Years: ViewRecordTable {
        public typealias Key = Int
        public typealias Record = YearView
        public static var kind: ViewRecordKind { .years }
        public static var recordName: String { "YearView" }
        public static var summary: String { "a reader's record per calendar year (challenge, year in review)" }
        /// The year's 4 bytes (``ViewKeyBytes/year(_:into:)``: clamped to 0 ... `UInt32.max`).
        public static func encodeKey(_ key: Int, into bytes: inout [UInt8]) { ViewKeyBytes.year(key, into: &bytes) }
        /// The year in exactly 4 bytes.
        public static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> Int { try ViewKeyBytes.year(bytes) }
        public static func encodeRecord(_ record: YearView) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> YearView {
            try ViewRecordCodec.decodeYearView(bytes)
        }
        /// The year without its challenge's origin.
        public static func withoutOrigins(_ record: YearView) -> YearView? {
            guard record.challengeOrigin != nil else { return nil }
            var year = record
            year.challengeOrigin = nil
            return year
        }

        /// Adds each book's netted pages of the year's days and its finishes dated in the year.
        public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {
            var yearParts = SmallMap<ViewDeltas.YearBookKey, (pages: Int, finishes: Int)>()
            for (key, count) in deltas.bookFinishes.elements where count != 0 {
                yearParts.update(key, default: (0, 0)) { $0.finishes += count }
            }
            for (key, change) in deltas.sortedChanges where change.pages != 0 {
                yearParts.update(ViewDeltas.YearBookKey(year: key.day.year, book: key.book), default: (0, 0)) { $0.pages += change.pages }
            }
            for (key, part) in yearParts.takeSortedElements() where part.pages != 0 || part.finishes != 0 {
                var year = try store.takeYearView(reader: deltas.reader, year: key.year) ?? YearView(year: key.year)
                year.add(book: key.book, pages: part.pages, finishes: part.finishes)
                try store.putYearView(reader: deltas.reader, year)
            }
        }
    }
}

extension ViewRecordCodec {
    /// Encodes a year view.
    public static func encode(_ v: YearView) -> [UInt8] {
        var w = ByteWriter()
        w.u8(format)
        w.int(v.year)
        w.optional(v.challenge) { w, c in
            w.int(c.year)
            w.optional(c.books) { w, x in w.int(x) }
            w.optional(c.pages) { w, x in w.int(x) }
        }
        w.array(v.books, elementSize: 32) { w, b in w.id(b.book); w.int(b.pages); w.int(b.finishes) }
        w.optional(v.challengeOrigin) { w, o in w.origin(o) }
        return w.bytes
    }

    /// Decodes a year view; a typed error for anything malformed.
    public static func decodeYearView(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> YearView {
        try ByteReader.read(bytes, record: "YearView") { (r: inout ByteReader) throws(ViewDecodingError) -> YearView in
            let version = try r.expectFormat()
            let year = try r.int("year")
            let challenge = try r.optional("challenge") { r throws(ViewDecodingError) in
                ChallengeSet(year: try r.int("challenge.year"),
                             books: try r.optional("challenge.books") { r throws(ViewDecodingError) in try r.int("challenge.books") },
                             pages: try r.optional("challenge.pages") { r throws(ViewDecodingError) in try r.int("challenge.pages") })
            }
            let books = try r.array("books") { r throws(ViewDecodingError) in
                YearBook(book: try r.id("book.id"), pages: try r.int("book.pages"), finishes: try r.int("book.finishes"))
            }
            var view = YearView(year: year, challenge: challenge, books: books)
            if version >= 3 {
                view.challengeOrigin = try r.optional("challengeOrigin") { r throws(ViewDecodingError) in try r.origin("challengeOrigin") }
            }
            try r.expectEnd()
            return view
        }
    }
}

extension ViewStore {
    /// The record of one calendar year (challenge, books' pages and finishes), if any.
    public func yearView(reader: ReaderID, year: Int) throws -> YearView? { try record(ViewRecords.Years.self, reader: reader, year) }
    /// Stores the record of one year; an empty record removes it.
    public mutating func putYearView(reader: ReaderID, _ view: consuming YearView) throws {
        let year = view.year
        let kept: YearView? = view.isEmpty ? nil : view
        try putRecord(ViewRecords.Years.self, reader: reader, year, kept, replacing: nil)
    }
    /// The record of one year, read to be changed and then put back with ``putYearView(reader:_:)``
    /// at once (no other read of the year between the two calls), so adding a book to a year of
    /// 100,000 books does not copy them all (issue 37).
    public mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView? {
        try takeRecord(ViewRecords.Years.self, reader: reader, year)
    }
    /// Every year record of the reader, in year order.
    public func yearViews(reader: ReaderID) throws -> [YearView] { try records(ViewRecords.Years.self, reader: reader).map { $0.record } }
}

/// A period of the category breakdown: one calendar year, or all time.
///
/// `Sendable`: a plain enum.
public enum ReportPeriod: Hashable, Sendable {
    /// One calendar year of local reading days and finish days.
    case year(Int)
    /// Every year.
    case allTime
}

/// Finished books and pages of one category in a period.
///
/// `Sendable`: plain values.
public struct CategoryTotal: Hashable, Sendable {
    /// The category: the first level of the path, or the full path ("국내도서>소설/시/희곡>한국소설",
    /// levels trimmed, joined by ">"); "" for books without a category.
    public var category: String
    /// Distinct books with a finish in the period (a book finished twice in it counts once).
    public var finishedBooks: Int
    /// Pages credited in the period to books of the category.
    public var pages: Int
    /// A total.
    public init(category: String, finishedBooks: Int, pages: Int) {
        self.category = category; self.finishedBooks = finishedBooks; self.pages = pages
    }
}

/// Finished books and pages by category, at both levels.
///
/// A book counts in the category it has now (its latest metadata): correcting a category moves
/// all its pages and finishes. Books removed from the library still count (the reading happened),
/// as in the monthly totals.
///
/// `Sendable`: plain values.
public struct CategoryBreakdown: Hashable, Sendable {
    /// The period.
    public var period: ReportPeriod
    /// By the first level of the category path, most finished books first (then pages, then name).
    public var topLevel: [CategoryTotal]
    /// By the full category path, in the same order.
    public var fullPath: [CategoryTotal]
    /// Distinct books finished in the period: the sum of either list's ``CategoryTotal/finishedBooks``.
    public var finishedBooks: Int { topLevel.reduce(0) { $0 + $1.finishedBooks } }
    /// Pages credited in the period.
    public var pages: Int { topLevel.reduce(0) { $0 + $1.pages } }
}

/// Progress against one target of the yearly challenge.
///
/// `Sendable`: plain values.
public struct ChallengePace: Hashable, Sendable {
    /// The target for the year.
    public var target: Int
    /// Done so far (books finished, or pages read, in the year up to the last folded event).
    public var done: Int
    /// Where an even pace would be at the end of "today": target × elapsed days / days in the year,
    /// rounded down.
    public var expectedByToday: Int
    /// `done - expectedByToday`: positive ahead of the pace, negative behind.
    public var aheadBy: Int
    /// The year's total at the current pace: done × days in the year / elapsed days, rounded to the
    /// nearest; `done` once the year is over, 0 before it starts.
    public var projectedTotal: Int
    /// A pace.
    public init(target: Int, done: Int, expectedByToday: Int, aheadBy: Int, projectedTotal: Int) {
        self.target = target; self.done = done; self.expectedByToday = expectedByToday; self.aheadBy = aheadBy
        self.projectedTotal = projectedTotal
    }
    /// Whether the target is reached already.
    public var isMet: Bool { done >= target }
}

/// The yearly challenge of one year and how it is going as of a day.
///
/// `Sendable`: plain values.
public struct ChallengeProgress: Hashable, Sendable {
    /// The year.
    public var year: Int
    /// The challenge as set (nil when none was set: the counts are still given).
    public var challenge: ChallengeSet?
    /// "Today": the reading day of `asOf` in the zone.
    public var today: LocalDate
    /// Days of the year up to and including today: 0 before the year, all of them after it.
    public var elapsedDays: Int
    /// Days in the year (365 or 366).
    public var daysInYear: Int
    /// Distinct books finished in the year.
    public var booksFinished: Int
    /// Pages credited to days of the year.
    public var pagesRead: Int
    /// Pace against the books target, when there is one.
    public var books: ChallengePace?
    /// Pace against the pages target, when there is one.
    public var pages: ChallengePace?
}

/// A book picked out by the year in review.
///
/// `Sendable`: plain values.
public struct ReviewBook: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Its title.
    public var title: String
    /// Its page count, when known.
    public var pageCount: Int?
    /// Days from the first page record of the read-through to its finish, both counted; nil when
    /// the read-through has no page record.
    public var days: Int?
}

/// A year of reading in a few numbers.
///
/// `Sendable`: plain values.
public struct YearInReview: Hashable, Sendable {
    /// The year.
    public var year: Int
    /// Distinct books finished in the year.
    public var booksFinished: Int
    /// Pages credited to days of the year.
    public var pages: Int
    /// Minutes of timed reading on days of the year (seconds / 60, rounded down).
    public var minutes: Int
    /// The longest run of reading days inside the year (a run crossing New Year is cut at it).
    public var longestStreak: StreakRun?
    /// The month with the most pages (the earliest on a tie), with its pages; nil without pages.
    public var mostReadMonth: (month: YearMonth, pages: Int)?
    /// The finished read-through of the year that took the fewest days (then fewest pages, then title).
    public var fastestBook: ReviewBook?
    /// The finished book of the year with the most pages (then title).
    public var longestBook: ReviewBook?
    /// The mean rating of the rated books finished in the year, in stars; nil when none is rated.
    public var averageRating: Double?
    /// The second-level category (``BookMetadata/groupingCategory``) with the most books finished
    /// in the year (then pages, then name); nil when nothing was finished.
    public var favouriteCategory: String?

    /// Compares every field.
    public static func == (l: YearInReview, r: YearInReview) -> Bool {
        l.year == r.year && l.booksFinished == r.booksFinished && l.pages == r.pages && l.minutes == r.minutes
            && l.longestStreak == r.longestStreak && l.mostReadMonth?.month == r.mostReadMonth?.month
            && l.mostReadMonth?.pages == r.mostReadMonth?.pages && l.fastestBook == r.fastestBook
            && l.longestBook == r.longestBook && l.averageRating == r.averageRating && l.favouriteCategory == r.favouriteCategory
    }
    /// Hashes the counts.
    public func hash(into hasher: inout Hasher) { hasher.combine(year); hasher.combine(booksFinished); hasher.combine(pages) }
}

extension BookMetadata {
    /// The full category path, levels trimmed and joined by ">"; "" without a category.
    public var normalizedCategoryPath: String { categories.joined(separator: ">") }
    /// The first level of the category path; "" without a category.
    public var topCategory: String { categories.first ?? "" }
}

extension ViewStore {
    /// The years with a record (pages, finishes or a challenge), in order.
    public func years(reader: ReaderID) throws -> [Int] { try yearViews(reader: reader).map(\.year) }

    /// Finished books and pages by category for a year or all time.
    public func categoryBreakdown(reader: ReaderID, period: ReportPeriod) throws -> CategoryBreakdown {
        let parts: [YearBook]
        switch period {
        case .year(let year):
            parts = try yearView(reader: reader, year: year)?.books ?? []
        case .allTime:
            var merged: [BookID: YearBook] = [:]
            for view in try yearViews(reader: reader) {
                for part in view.books {
                    merged[part.book, default: YearBook(book: part.book)].pages += part.pages
                    merged[part.book, default: YearBook(book: part.book)].finishes += part.finishes
                }
            }
            parts = Array(merged.values)
        }
        var top: [String: CategoryTotal] = [:]
        var full: [String: CategoryTotal] = [:]
        for part in parts {
            let metadata = try bookView(reader: reader, book: part.book)?.metadata
            let finished = part.finishes > 0 ? 1 : 0
            for (key, table) in [(metadata?.topCategory ?? "", 0), (metadata?.normalizedCategoryPath ?? "", 1)] {
                var total = (table == 0 ? top[key] : full[key]) ?? CategoryTotal(category: key, finishedBooks: 0, pages: 0)
                total.finishedBooks += finished; total.pages += part.pages
                if table == 0 { top[key] = total } else { full[key] = total }
            }
        }
        func ordered(_ d: [String: CategoryTotal]) -> [CategoryTotal] {
            d.values.sorted { ($1.finishedBooks, $1.pages, $0.category) < ($0.finishedBooks, $0.pages, $1.category) }
        }
        return CategoryBreakdown(period: period, topLevel: ordered(top), fullPath: ordered(full))
    }

    /// The yearly challenge of `year` as of an instant in a zone ("today" is the reading day of
    /// `asOf` there; never the machine's clock).
    public func challengeProgress(reader: ReaderID, year: Int, asOf: Timestamp, zone: ZoneID,
                                  clock: LocalClock = LocalClock()) throws -> ChallengeProgress {
        try challengeProgress(reader: reader, year: year, today: clock.localDay(of: asOf, in: zone))
    }

    /// The yearly challenge of `year` as of the end of `today`.
    public func challengeProgress(reader: ReaderID, year: Int, today: LocalDate) throws -> ChallengeProgress {
        let view = try yearView(reader: reader, year: year) ?? YearView(year: year)
        let first = try! LocalDate(year: min(9999, max(1, year)), month: 1, day: 1)
        let daysInYear = LocalDate.daysIn(month: 2, year: first.year) == 29 ? 366 : 365
        let elapsed = min(daysInYear, max(0, first.days(until: today) + 1))
        let books = view.books.filter { $0.finishes > 0 }.count
        let pages = view.books.reduce(0) { $0 + $1.pages }
        func pace(_ target: Int?, _ done: Int) -> ChallengePace? {
            guard let target else { return nil }
            let expected = target * elapsed / daysInYear
            let projected = elapsed == 0 ? 0 : Int((Double(done) * Double(daysInYear) / Double(elapsed)).rounded())
            return ChallengePace(target: target, done: done, expectedByToday: expected, aheadBy: done - expected,
                                 projectedTotal: projected)
        }
        return ChallengeProgress(year: year, challenge: view.challenge, today: today, elapsedDays: elapsed,
                                 daysInYear: daysInYear, booksFinished: books, pagesRead: pages,
                                 books: pace(view.challenge?.books, books), pages: pace(view.challenge?.pages, pages))
    }

    /// The year in review of `year`.
    public func yearInReview(reader: ReaderID, year: Int) throws -> YearInReview {
        let view = try yearView(reader: reader, year: year) ?? YearView(year: year)
        let first = try! LocalDate(year: min(9999, max(1, year)), month: 1, day: 1)
        let last = try! LocalDate(year: first.year, month: 12, day: 31)
        let seconds = try dayTotals(reader: reader, in: first...last).reduce(0) { $0 + $1.1.seconds }
        var longest: StreakRun?
        for run in try streakRuns(reader: reader) where run.end >= first && run.start <= last {
            let clipped = StreakRun(start: max(run.start, first), end: min(run.end, last))
            if clipped.length > (longest?.length ?? 0) { longest = clipped }
        }
        var mostRead: (month: YearMonth, pages: Int)?
        for (month, total) in try monthTotals(reader: reader, in: YearMonth(year: first.year, month: 1)...YearMonth(year: first.year, month: 12))
        where total.pages > (mostRead?.pages ?? 0) { mostRead = (month, total.pages) }

        var fastest: ReviewBook?
        var longestBook: ReviewBook?
        var ratings: [Double] = []
        var categories: [String: (books: Int, pages: Int)] = [:]
        for part in view.books where part.finishes > 0 {
            guard let book = try bookView(reader: reader, book: part.book) else { continue }
            if let rating = book.rating { ratings.append(rating.stars) }
            categories[book.metadata.groupingCategory, default: (0, 0)].books += 1
            categories[book.metadata.groupingCategory, default: (0, 0)].pages += part.pages
            for (index, finish) in book.finishes.enumerated() where finish.year == first.year {
                let start = book.entries.first { $0.readThrough == index + 1 }?.day
                let item = ReviewBook(book: book.book, title: book.metadata.title, pageCount: book.metadata.pageCount,
                                      days: start.map { $0.days(until: finish) + 1 })
                if let days = item.days,
                   fastest.map({ (days, item.pageCount ?? 0, item.title) < ($0.days!, $0.pageCount ?? 0, $0.title) }) ?? true {
                    fastest = item
                }
            }
            let item = ReviewBook(book: book.book, title: book.metadata.title, pageCount: book.metadata.pageCount, days: nil)
            if longestBook.map({ ((item.pageCount ?? 0), $0.title) > (($0.pageCount ?? 0), item.title) }) ?? true {
                longestBook = item
            }
        }
        let favourite = categories.max { a, b in (a.value.books, a.value.pages, b.key) < (b.value.books, b.value.pages, a.key) }?.key
        return YearInReview(
            year: year, booksFinished: view.books.filter { $0.finishes > 0 }.count,
            pages: view.books.reduce(0) { $0 + $1.pages }, minutes: seconds / 60, longestStreak: longest,
            mostReadMonth: mostRead, fastestBook: fastest, longestBook: longestBook,
            averageRating: ratings.isEmpty ? nil : ratings.reduce(0, +) / Double(ratings.count),
            favouriteCategory: favourite)
    }
}
