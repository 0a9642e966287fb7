import ReadingEvents

/// The views of one reader, held in memory: what a rebuild folds one reader's events into before
/// it writes the reader's records to disk in key order.
///
/// It keeps exactly the records a persisted store would keep after the same writes (a zero day,
/// book-day or month total, an empty year and an inactive goal are removed; book views, bucket
/// totals and the reader's record are kept once written), so writing its contents gives the
/// same tables as folding the same events through the persisted store.
///
/// Reads for another reader find nothing; writes for another reader throw
/// ``SingleReaderViewStore/OtherReader`` (a fold of one reader's events never makes them).
///
/// `Sendable`: a value type of Sendable collections.
public struct SingleReaderViewStore: ViewStore, Sendable {
    /// A write for a reader other than the store's (nothing is written).
    ///
    /// `Sendable`: identifiers only.
    public struct OtherReader: Error, Sendable, CustomStringConvertible {
        /// The store's reader.
        public let expected: ReaderID
        /// The reader of the refused write.
        public let found: ReaderID
        /// Names the field and the rule.
        public var description: String {
            "reader: a store of reader \(expected) holds only that reader's views, and was given a write for reader \(found)"
        }
    }

    /// A book's total on one day, keyed as the persisted table is: book, then day.
    ///
    /// `Sendable`: plain values.
    public struct BookDay: Hashable, Sendable {
        /// The book.
        public var book: BookID
        /// The reading day.
        public var day: LocalDate
    }

    /// The reader whose views these are.
    public let reader: ReaderID
    /// Book views by book: a dictionary built from the store's slots on each read.
    public var books: [BookID: BookView] {
        var books = [BookID: BookView](minimumCapacity: bookIndex.count)
        for (book, slot) in bookIndex { if let view = bookSlots[slot] { books[book] = view } }
        return books
    }
    /// Book views in the order their books were first written; a taken view's slot is empty until
    /// it is put back. Slots, not a dictionary of views: taking a view out of a dictionary and
    /// putting it back deletes and inserts an entry (hashing its neighbours again), where a slot
    /// is emptied and filled in place (issue 37).
    private var bookSlots: [BookView?] = []
    /// The slot of each book.
    private var bookIndex: [BookID: Int] = [:]
    /// The book and slot of the last ``takeBookView(reader:book:)``: the put that follows finds
    /// the slot without hashing the book again.
    private var lastTaken: (book: BookID, slot: Int)?
    /// Non-zero day totals by day.
    public private(set) var days: [LocalDate: DayTotal] = [:]
    /// Non-zero book-day totals.
    public private(set) var bookDays: [BookDay: DayTotal] = [:]
    /// Non-zero month totals by month.
    public private(set) var months: [YearMonth: MonthTotal] = [:]
    /// The time-of-day totals, once written.
    public private(set) var buckets: BucketTotals?
    /// Streak runs, in order of their start.
    public private(set) var runs: [StreakRun] = []
    /// The reader's own record, once written.
    public private(set) var readerRecord: ReaderView?
    /// Books with an active goal.
    public private(set) var goals: Set<BookID> = []
    /// Non-empty year records by year.
    public private(set) var years: [Int: YearView] = [:]

    /// An empty store for `reader`.
    public init(reader: ReaderID) { self.reader = reader }

    private func check(_ other: ReaderID) throws(OtherReader) {
        if other != reader { throw OtherReader(expected: reader, found: other) }
    }

    /// The index of the first run starting after `day`.
    private func runIndex(after day: LocalDate) -> Int {
        var low = 0, high = runs.count
        while low < high {
            let mid = (low + high) / 2
            if runs[mid].start <= day { low = mid + 1 } else { high = mid }
        }
        return low
    }

    public func bookView(reader: ReaderID, book: BookID) throws -> BookView? {
        guard reader == self.reader, let slot = bookIndex[book] else { return nil }
        return bookSlots[slot]
    }
    public mutating func putBookView(_ view: consuming BookView) throws {
        try check(view.reader)
        if let last = lastTaken, last.book == view.book {
            lastTaken = nil
            bookSlots[last.slot] = view
        } else if let slot = bookIndex[view.book] {
            bookSlots[slot] = view
        } else {
            bookIndex[view.book] = bookSlots.count
            bookSlots.append(view)
        }
    }
    public func bookViews(reader: ReaderID) throws -> [BookView] {
        reader == self.reader ? bookSlots.compactMap { $0 }.sorted { $0.book < $1.book } : []
    }
    /// Empties the view's slot while the caller changes it (see ``ViewStore/takeBookView(reader:book:)``).
    public mutating func takeBookView(reader: ReaderID, book: BookID) throws -> BookView? {
        guard reader == self.reader, let slot = bookIndex[book] else { return nil }
        lastTaken = (book, slot)
        return bookSlots[slot].take()
    }
    /// Puts a taken view back.
    public mutating func restoreBookView(_ view: BookView) throws { try putBookView(view) }

    public func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal {
        reader == self.reader ? days[day] ?? DayTotal() : DayTotal()
    }
    public mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        try check(reader)
        days[day] = total.isZero ? nil : total
    }
    public func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        guard reader == self.reader else { return [] }
        return days.filter { range.contains($0.key) }.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        reader == self.reader ? bookDays[BookDay(book: book, day: day)] ?? DayTotal() : DayTotal()
    }
    public mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        try check(reader)
        bookDays[BookDay(book: book, day: day)] = total.isZero ? nil : total
    }
    public func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        guard reader == self.reader else { return [] }
        return bookDays.filter { $0.key.book == book && range.contains($0.key.day) }.map { ($0.key.day, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal {
        reader == self.reader ? months[month] ?? MonthTotal() : MonthTotal()
    }
    public mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        try check(reader)
        months[month] = total == MonthTotal() ? nil : total
    }
    public func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        guard reader == self.reader else { return [] }
        return months.filter { range.contains($0.key) }.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
    }

    public func bucketTotals(reader: ReaderID) throws -> BucketTotals {
        reader == self.reader ? buckets ?? BucketTotals() : BucketTotals()
    }
    /// Removes the totals while the caller changes them (see ``ViewStore/takeBucketTotals(reader:)``).
    public mutating func takeBucketTotals(reader: ReaderID) throws -> BucketTotals? {
        reader == self.reader ? buckets.take() : nil
    }
    public mutating func putBucketTotals(reader: ReaderID, _ totals: BucketTotals) throws {
        try check(reader)
        buckets = totals
    }

    public func streakRun(reader: ReaderID, startingOnOrBefore day: LocalDate) throws -> StreakRun? {
        guard reader == self.reader else { return nil }
        let index = runIndex(after: day)
        return index > 0 ? runs[index - 1] : nil
    }
    public func streakRun(reader: ReaderID, startingOn day: LocalDate) throws -> StreakRun? {
        guard reader == self.reader else { return nil }
        let index = runIndex(after: day)
        return index > 0 && runs[index - 1].start == day ? runs[index - 1] : nil
    }
    public mutating func putStreakRun(reader: ReaderID, _ run: StreakRun) throws {
        try check(reader)
        let index = runIndex(after: run.start)
        if index > 0, runs[index - 1].start == run.start { runs[index - 1] = run } else { runs.insert(run, at: index) }
    }
    public mutating func removeStreakRun(reader: ReaderID, start: LocalDate) throws {
        try check(reader)
        let index = runIndex(after: start)
        if index > 0, runs[index - 1].start == start { runs.remove(at: index - 1) }
    }
    public func streakRuns(reader: ReaderID) throws -> [StreakRun] { reader == self.reader ? runs : [] }

    public func goalBooks(reader: ReaderID) throws -> [BookID] { reader == self.reader ? goals.sorted() : [] }
    public mutating func setGoalBook(reader: ReaderID, book: BookID, active: Bool) throws {
        try check(reader)
        if active { goals.insert(book) } else { goals.remove(book) }
    }

    public func yearView(reader: ReaderID, year: Int) throws -> YearView? { reader == self.reader ? years[year] : nil }
    public mutating func putYearView(reader: ReaderID, _ view: consuming YearView) throws {
        try check(reader)
        years[view.year] = view.isEmpty ? nil : view
    }
    /// Removes the record while the caller changes it (see ``ViewStore/takeYearView(reader:year:)``).
    public mutating func takeYearView(reader: ReaderID, year: Int) throws -> YearView? {
        reader == self.reader ? years.removeValue(forKey: year) : nil
    }
    public func yearViews(reader: ReaderID) throws -> [YearView] {
        reader == self.reader ? years.values.sorted { $0.year < $1.year } : []
    }

    public func readerView(reader: ReaderID) throws -> ReaderView? { reader == self.reader ? readerRecord : nil }
    /// Removes the record while the caller changes it (see ``ViewStore/takeReaderView(reader:)``).
    public mutating func takeReaderView(reader: ReaderID) throws -> ReaderView? {
        reader == self.reader ? readerRecord.take() : nil
    }
    public mutating func putReaderView(reader: ReaderID, _ view: consuming ReaderView) throws {
        try check(reader)
        readerRecord = view
    }
    public func readers() throws -> [ReaderID] { readerRecord == nil ? [] : [reader] }

    /// Folds one event into these views with `projector` (``ReadingProjector/apply(_:to:)``).
    ///
    /// The same call as `projector.apply(envelope, to: &views)`, made inside this module so the
    /// projector's generic fold is specialized for this store: called from another module it
    /// would run unspecialized, through the protocol's witness table, at every record access.
    @discardableResult
    public mutating func apply(_ envelope: EventEnvelope, with projector: ReadingProjector) throws -> ReadingProjector.Outcome {
        try projector.apply(envelope, to: &self)
    }
}
