import ReadingEvents

/// Where the views live: keyed records that a fold reads and writes one at a time, so the cost of
/// folding one event depends on what the event touches, never on the length of the history.
///
/// ``InMemoryViewStore`` implements it for tests and rebuilds; the LMDB store implements it inside
/// its write transaction, so views are written in the same transaction as the events they fold.
/// Every method is scoped to one reader.
public protocol ViewStore {
    /// The view of one book, if the reader ever added it.
    func bookView(reader: ReaderID, book: BookID) throws -> BookView?
    /// Stores the view of one book. `consuming`: a store that keeps views in memory keeps the
    /// caller's view itself, so the fold hands its view over without copying it.
    mutating func putBookView(_ view: consuming BookView) throws
    /// Every book view of the reader, in book-ID order.
    func bookViews(reader: ReaderID) throws -> [BookView]
    /// The view of one book, read to be changed and then put back: with ``putBookView(_:)``
    /// after a change, or unchanged with ``restoreBookView(_:)``. A store that keeps views in
    /// memory hands the view over without keeping a reference meanwhile, so changing it copies
    /// none of its arrays (the fold changes a book view once per event). No other read of the
    /// book may come between the two calls.
    mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView?
    /// Gives back, unchanged, a view taken with ``takeBookView(reader:book:)``: nothing is written.
    mutating func restoreBookView(_ view: BookView) throws
    /// Stores the view of one book that was `previous` when it was read from this store (`nil`:
    /// it was not there): a store that keeps a book in parts writes only the parts that differ.
    mutating func putBookView(_ view: BookView, replacing previous: BookView?) throws

    /// The totals of one day (zero when nothing was read).
    func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal
    /// Stores one day's totals; a zero total removes the day.
    mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws
    /// Days with a non-zero total in `range`, in order.
    func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)]

    /// The totals of one book on one day.
    func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal
    /// Stores one book's totals on one day; zero removes it.
    mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws
    /// One book's non-zero days in `range`, in order.
    func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)]

    /// The totals of one month.
    func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal
    /// Stores one month's totals; zero removes it.
    mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws
    /// Months with a non-zero total in `range`, in order.
    func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)]

    /// The reader's time-of-day totals.
    func bucketTotals(reader: ReaderID) throws -> BucketTotals
    /// The reader's time-of-day totals, read to be changed and then put back with
    /// ``putBucketTotals(reader:_:)`` at once (`nil`: none stored): a store that keeps them in
    /// memory hands them over, so adding to them copies neither array.
    mutating func takeBucketTotals(reader: ReaderID) throws -> BucketTotals?
    /// Stores the reader's time-of-day totals.
    mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws

    /// The streak run with the latest start on or before `day`, if any.
    func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun?
    /// The streak run starting exactly on `day`, if any.
    func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun?
    /// Stores a run (keyed by its start).
    mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws
    /// Removes the run starting on `start`.
    mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws
    /// Every run of the reader, in order.
    func streakRuns(reader: ReaderID) throws -> [StreakRun]

    /// The books of the reader with an active goal (what the home list shows), in book-ID order.
    func goalBooks(reader: ReaderID) throws -> [BookID]
    /// Records whether a book has an active goal (in the library, not finished, with a goal).
    mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws

    /// The record of one calendar year (challenge, books' pages and finishes), if any.
    func yearView(reader: ReaderID, year: Int) throws -> YearView?
    /// Stores the record of one year; an empty record removes it.
    mutating func putYearView(reader: ReaderID, _ view: consuming YearView) throws
    /// The record of one year, read to be changed and then put back with ``putYearView(reader:_:)``
    /// at once (no other read of the year between the two calls). A store that keeps years in
    /// memory hands the record over without keeping a reference meanwhile, so adding a book to
    /// a year of 100,000 books does not copy them all (issue 37).
    mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView?
    /// Every year record of the reader, in year order.
    func yearViews(reader: ReaderID) throws -> [YearView]

    /// The reader's own record.
    func readerView(reader: ReaderID) throws -> ReaderView?
    /// The reader's own record, read to be changed and then put back with
    /// ``putReaderView(reader:_:)`` at once (no other read of the record between the two calls):
    /// a store that keeps it in memory hands it over without a copy (the fold changes it for
    /// every event).
    mutating func takeReaderView(reader: ReaderID) throws -> ReaderView?
    /// Stores the reader's own record.
    mutating func putReaderView(reader: ReaderID, _ view: consuming ReaderView) throws
    /// Every reader with a record, in ID order.
    func readers() throws -> [ReaderID]
}

extension ViewStore {
    /// The default: ``bookView(reader:book:)`` (a store that keeps no views in memory has no
    /// reference to give up).
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        try bookView(reader: reader, book: book)
    }
    /// The default: nothing (the view was never handed over).
    public mutating func restoreBookView(_ view: BookView) throws {}
    /// The default: ``yearView(reader:year:)``.
    public mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView? {
        try yearView(reader: reader, year: year)
    }
    /// The default: ``bucketTotals(reader:)``.
    public mutating func takeBucketTotals(reader: ReaderID) throws -> BucketTotals? {
        try bucketTotals(reader: reader)
    }
    /// The default: ``readerView(reader:)``.
    public mutating func takeReaderView(reader: ReaderID) throws -> ReaderView? {
        try readerView(reader: reader)
    }
    /// The default: ``putBookView(_:)``.
    public mutating func putBookView(_ view: BookView, replacing previous: BookView?) throws { try putBookView(view) }
}
