import ReadingEvents

// The book-days view: one book's pages and seconds per local day (a book's daily bars). Its key,
// table, accessors, fold step and query; its record is the days view's ``DayTotal``.

/// A book's day, keyed as the persisted table is: book, then day.
///
/// `Sendable`: plain values.
public struct BookDayKey: Hashable, Comparable, Sendable {
    /// The book.
    public var book: BookID
    /// The reading day.
    public var day: LocalDate
    /// A book's day.
    public init(book: BookID, day: LocalDate) {
        self.book = book
        self.day = day
    }
    public static func < (lhs: BookDayKey, rhs: BookDayKey) -> Bool { (lhs.book, lhs.day) < (rhs.book, rhs.day) }
}

extension ViewRecords {
    /// Non-zero totals of one book on one day, by book, then day.
    ///
    /// `Sendable`: a table type.
    public enum BookDays: ViewRecordTable {
        public typealias Key = BookDayKey
        public typealias Record = DayTotal
        public static var kind: ViewRecordKind { .bookDays }
        public static var recordName: String { "DayTotal" }
        public static var summary: String { "a book's pages and seconds per local day" }
        /// The book's 16 ID bytes, then the day's 4.
        public static func encodeKey(_ key: BookDayKey, into bytes: inout [UInt8]) {
            ViewKeyBytes.id(key.book, into: &bytes)
            ViewKeyBytes.day(key.day, into: &bytes)
        }
        /// The book and the day in exactly 20 bytes.
        public static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BookDayKey {
            guard bytes.count == 20 else { throw ViewDecodingError(field: "key", offset: 0, problem: "expected 20 bytes, found \(bytes.count)") }
            return BookDayKey(book: try ViewKeyBytes.id(UnsafeRawBufferPointer(rebasing: bytes[0..<16]), "book"),
                              day: try ViewKeyBytes.day(UnsafeRawBufferPointer(rebasing: bytes[16...])))
        }
        public static func encodeRecord(_ record: DayTotal) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> DayTotal {
            try ViewRecordCodec.decodeDayTotal(bytes)
        }

        /// Adds each book's netted pages and seconds of each day.
        public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {
            for (key, change) in deltas.sortedChanges {
                // Taken, not read: the put that follows finds the slot without a look-up.
                var bookDay = try store.takeRecord(ViewRecords.BookDays.self, reader: deltas.reader,
                                                   BookDayKey(book: key.book, day: key.day)) ?? DayTotal()
                bookDay.pages += change.pages; bookDay.seconds += change.seconds
                try store.putBookDayTotal(reader: deltas.reader, book: key.book, day: key.day, bookDay)
            }
        }
    }
}

extension ViewStore {
    /// The totals of one book on one day.
    public func bookDayTotal(reader: ReaderID, book: BookID, day: LocalDate) throws -> DayTotal {
        try record(ViewRecords.BookDays.self, reader: reader, BookDayKey(book: book, day: day)) ?? DayTotal()
    }
    /// Stores one book's totals on one day; zero removes it.
    public mutating func putBookDayTotal(reader: ReaderID, book: BookID, day: LocalDate, _ total: DayTotal) throws {
        try putRecord(ViewRecords.BookDays.self, reader: reader, BookDayKey(book: book, day: day), total.isZero ? nil : total, replacing: nil)
    }
    /// One book's non-zero days in `range`, in order.
    public func bookDayTotals(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        try records(ViewRecords.BookDays.self, reader: reader, from: BookDayKey(book: book, day: range.lowerBound),
                    through: BookDayKey(book: book, day: range.upperBound)).map { ($0.key.day, $0.record) }
    }
}

extension ViewStore {
    /// One book's pages and seconds per day for every day of `range`.
    public func dailyPages(reader: ReaderID, book: BookID, in range: ClosedRange<LocalDate>) throws -> [(day: LocalDate, total: DayTotal)] {
        fill(try bookDayTotals(reader: reader, book: book, in: range), range)
    }
}
