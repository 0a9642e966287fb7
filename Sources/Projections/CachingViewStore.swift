import ReadingEvents

/// A write-back cache in front of another ``ViewStore``: point reads are served from memory after
/// the first, writes stay in memory until ``flush()``. Folding a chunk of events through it reads
/// and writes each touched record once per chunk instead of once per event, which is what makes
/// rebuilds and bulk appends fast. Streak runs, goal books and range reads go to the base store directly
/// (the fold itself asks only for points and runs).
///
/// Not `Sendable` in general: it is `Sendable` exactly when its base is.
public struct CachingViewStore<Base: ViewStore>: ViewStore {
    /// The store underneath.
    public private(set) var base: Base

    // The cache's keys are types of their own (below), not nested in this generic type, so that
    // hashing and sorting them runs specialized code whatever the base store.
    private typealias BookKey = CacheBookKey
    private typealias DayKey = CacheDayKey
    private typealias BookDayKey = CacheBookDayKey
    private typealias MonthKey = CacheMonthKey
    private typealias YearKey = CacheYearKey

    private var books: [BookKey: BookView?] = [:]
    private var dirtyBooks: Set<BookKey> = []
    /// Books handed over by ``takeBookView(reader:book:)`` and not yet given back.
    private var takenBooks: Set<BookKey> = []
    /// Each book view as it was read from the base store (absent: it was not there), so the flush
    /// can tell the base what changed (``ViewStore/putBookView(_:replacing:)``).
    private var loadedBooks: [BookKey: BookView] = [:]
    private var days: [DayKey: DayTotal] = [:]
    private var dirtyDays: Set<DayKey> = []
    private var bookDays: [BookDayKey: DayTotal] = [:]
    private var dirtyBookDays: Set<BookDayKey> = []
    private var months: [MonthKey: MonthTotal] = [:]
    private var dirtyMonths: Set<MonthKey> = []
    private var buckets: [ReaderID: BucketTotals] = [:]
    private var dirtyBuckets: Set<ReaderID> = []
    private var readerViews: [ReaderID: ReaderView?] = [:]
    private var dirtyReaders: Set<ReaderID> = []
    private var years: [YearKey: YearView] = [:]
    private var dirtyYears: Set<YearKey> = []

    /// Wraps `base`.
    public init(base: Base) { self.base = base }

    /// Writes every changed record to the base store, in key order, and empties the cache.
    public mutating func flush() throws {
        precondition(takenBooks.isEmpty, "a book view taken with takeBookView was not given back")
        for key in dirtyReaders.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            if let view = readerViews[key] ?? nil { try base.putReaderView(reader: key, view) }
        }
        for key in dirtyBooks.sorted(by: { ($0.reader, $0.book) < ($1.reader, $1.book) }) {
            if let view = books[key] ?? nil { try base.putBookView(view, replacing: loadedBooks[key]) }
        }
        for key in dirtyDays.sorted(by: { ($0.reader, $0.day) < ($1.reader, $1.day) }) {
            try base.putDayTotal(reader: key.reader, day: key.day, days[key]!)
        }
        for key in dirtyBookDays.sorted(by: { ($0.reader, $0.book, $0.day) < ($1.reader, $1.book, $1.day) }) {
            try base.putBookDayTotal(reader: key.reader, book: key.book, day: key.day, bookDays[key]!)
        }
        for key in dirtyMonths.sorted(by: { ($0.reader, $0.month) < ($1.reader, $1.month) }) {
            try base.putMonthTotal(reader: key.reader, month: key.month, months[key]!)
        }
        for key in dirtyBuckets.sorted() { try base.putBucketTotals(reader: key, buckets[key]!) }
        for key in dirtyYears.sorted(by: { ($0.reader, $0.year) < ($1.reader, $1.year) }) {
            try base.putYearView(reader: key.reader, years[key]!)
        }
        books = [:]; loadedBooks = [:]; days = [:]; bookDays = [:]; months = [:]; buckets = [:]; readerViews = [:]; years = [:]
        dirtyBooks = []; dirtyDays = []; dirtyBookDays = []; dirtyMonths = []; dirtyBuckets = []; dirtyReaders = []
        dirtyYears = []
    }

    public func bookView(reader: ReaderID, book: BookID) throws -> BookView? {
        let key = BookKey(reader: reader, book: book)
        precondition(!takenBooks.contains(key), "book \(book) is taken: put it back before reading it")
        if let cached = books[key] { return cached }
        return try base.bookView(reader: reader, book: book)
    }
    /// A book view read from the base store, noted as loaded (the flush passes it as `previous`).
    private mutating func load(_ key: BookKey) throws -> BookView? {
        let view = try base.bookView(reader: key.reader, book: key.book)
        if let view { loadedBooks[key] = view }
        return view
    }
    public mutating func putBookView(_ view: consuming BookView) throws {
        let key = BookKey(reader: view.reader, book: view.book)
        takenBooks.remove(key)
        books[key] = .some(view); dirtyBooks.insert(key)
    }
    /// Hands the view over and drops the cache's reference until it comes back (see
    /// ``ViewStore/takeBookView(reader:book:)``), so the fold changes it in place.
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        let key = BookKey(reader: reader, book: book)
        precondition(!takenBooks.contains(key), "book \(book) is taken already")
        let view = try books.removeValue(forKey: key) ?? load(key)
        if view != nil { takenBooks.insert(key) } else { books[key] = .some(nil) }
        return view
    }
    /// Takes back an unchanged view: cached again, and written at the flush only if it was
    /// changed before it was taken.
    public mutating func restoreBookView(_ view: BookView) throws {
        let key = BookKey(reader: view.reader, book: view.book)
        takenBooks.remove(key)
        books[key] = .some(view)
    }
    public func bookViews(reader: ReaderID) throws -> [BookView] {
        precondition(dirtyBooks.isEmpty, "flush before listing")
        return try base.bookViews(reader: reader)
    }

    public func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal {
        try days[DayKey(reader: reader, day: day)] ?? base.dayTotal(reader: reader, day: day)
    }
    public mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        let key = DayKey(reader: reader, day: day)
        days[key] = total; dirtyDays.insert(key)
    }
    public func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        precondition(dirtyDays.isEmpty, "flush before listing")
        return try base.dayTotals(reader: reader, in: range)
    }

    public func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        try bookDays[BookDayKey(reader: reader, book: book, day: day)] ?? base.bookDayTotal(reader: reader, book: book, day: day)
    }
    public mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        let key = BookDayKey(reader: reader, book: book, day: day)
        bookDays[key] = total; dirtyBookDays.insert(key)
    }
    public func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        precondition(dirtyBookDays.isEmpty, "flush before listing")
        return try base.bookDayTotals(reader: reader, book: book, in: range)
    }

    public func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal {
        try months[MonthKey(reader: reader, month: month)] ?? base.monthTotal(reader: reader, month: month)
    }
    public mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        let key = MonthKey(reader: reader, month: month)
        months[key] = total; dirtyMonths.insert(key)
    }
    public func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        precondition(dirtyMonths.isEmpty, "flush before listing")
        return try base.monthTotals(reader: reader, in: range)
    }

    public func bucketTotals(reader: ReaderID) throws -> BucketTotals {
        try buckets[reader] ?? base.bucketTotals(reader: reader)
    }
    /// The totals, handed over from the cache without a copy when they are there (see
    /// ``ViewStore/takeBucketTotals(reader:)``): put them back with ``putBucketTotals(reader:_:)`` at once.
    public mutating func takeBucketTotals(reader: ReaderID) throws -> BucketTotals? {
        if let cached = buckets.removeValue(forKey: reader) { return cached }
        return try base.bucketTotals(reader: reader)
    }
    public mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws {
        buckets[reader] = totals; dirtyBuckets.insert(reader)
    }

    public func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        try base.streakRun(reader: reader, startingOnOrBefore: day)
    }
    public func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? {
        try base.streakRun(reader: reader, startingOn: day)
    }
    public mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws { try base.putStreakRun(reader: reader, run) }
    public mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws { try base.removeStreakRun(reader: reader, start: start) }
    public func streakRuns(reader: ReaderID) throws -> [StreakRun] { try base.streakRuns(reader: reader) }

    public func goalBooks(reader: ReaderID) throws -> [BookID] { try base.goalBooks(reader: reader) }
    public mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        try base.setGoalBook(reader: reader, book: book, active: active)
    }

    public func yearView(reader: ReaderID, year: Int) throws -> YearView? {
        if let cached = years[YearKey(reader: reader, year: year)] { return cached.isEmpty ? nil : cached }
        return try base.yearView(reader: reader, year: year)
    }
    public mutating func putYearView(reader: ReaderID, _ view: consuming YearView) throws {
        let key = YearKey(reader: reader, year: view.year)
        years[key] = view; dirtyYears.insert(key)
    }
    /// Hands a cached record over, leaving an empty one in its place until it is put back (see
    /// ``ViewStore/takeYearView(reader:year:)``), so the fold changes it without copying it.
    public mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView? {
        let key = YearKey(reader: reader, year: year)
        guard let cached = years[key] else { return try base.yearView(reader: reader, year: year) }
        years[key] = YearView(year: year)
        return cached.isEmpty ? nil : cached
    }
    public func yearViews(reader: ReaderID) throws -> [YearView] {
        precondition(dirtyYears.isEmpty, "flush before listing")
        return try base.yearViews(reader: reader)
    }

    public func readerView(reader: ReaderID) throws -> ReaderView? {
        if let cached = readerViews[reader] { return cached }
        return try base.readerView(reader: reader)
    }
    /// The reader's record, handed over from the cache without a copy when it is there (see
    /// ``ViewStore/takeReaderView(reader:)``): put it back with ``putReaderView(reader:_:)`` at once.
    public mutating func takeReaderView(reader: ReaderID) throws -> ReaderView? {
        if let index = readerViews.index(forKey: reader) { return readerViews.values[index].take() }
        return try base.readerView(reader: reader)
    }
    public mutating func putReaderView(reader: ReaderID, _ view: consuming ReaderView) throws {
        readerViews[reader] = .some(view); dirtyReaders.insert(reader)
    }
    public func readers() throws -> [ReaderID] {
        precondition(dirtyReaders.isEmpty, "flush before listing")
        return try base.readers()
    }
}

struct CacheBookKey: Hashable { var reader: ReaderID; var book: BookID }
struct CacheDayKey: Hashable { var reader: ReaderID; var day: LocalDate }
struct CacheBookDayKey: Hashable { var reader: ReaderID; var book: BookID; var day: LocalDate }
struct CacheMonthKey: Hashable { var reader: ReaderID; var month: YearMonth }
struct CacheYearKey: Hashable { var reader: ReaderID; var year: Int }
