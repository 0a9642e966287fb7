import ReadingEvents

// The days view: a reader's pages and seconds per local day (the daily page chart, the page
// calendar, what makes a reading day). Its record, table, codec, accessors, fold step and queries.

/// Pages and reading seconds of one day (or one book on one day).
///
/// `Sendable`: two integers.
public struct DayTotal: Hashable, Sendable {
    /// Pages credited.
    public var pages: Int
    /// Seconds of timed reading.
    public var seconds: Int
    /// A total.
    public init(pages: Int = 0, seconds: Int = 0) { self.pages = pages; self.seconds = seconds }
    /// The least timed reading that makes a day a reading day without pages: one whole minute,
    /// the smallest amount the views show (a timer tapped on and off by mistake is not reading).
    public static let minimumReadingSeconds = 60
    /// Whether the day counts as a reading day: at least one page credited, or at least
    /// ``minimumReadingSeconds`` of timed reading.
    public var isReadingDay: Bool { pages > 0 || seconds >= Self.minimumReadingSeconds }
    /// Whether there is nothing recorded.
    public var isZero: Bool { pages == 0 && seconds == 0 }
}


extension ViewRecords {
    /// Non-zero day totals by day.
    ///
    /// `Sendable`: a table type.
    public enum Days: ViewRecordTable {
        public typealias Key = LocalDate
        public typealias Record = DayTotal
        public static var kind: ViewRecordKind { .days }
        public static var recordName: String { "DayTotal" }
        public static var summary: String { "a reader's pages and seconds per local day" }
        public static func encodeRecord(_ record: DayTotal) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> DayTotal {
            try ViewRecordCodec.decodeDayTotal(bytes)
        }

        /// Adds each day's netted pages and seconds, and notes each day that became a reading day
        /// or stopped being one (``ViewDeltas/readingDays``, for the streak runs' step).
        public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {
            for (key, change) in deltas.sortedChanges {
                // Taken, not read: the put that follows finds the slot without a look-up.
                var day = try store.takeRecord(ViewRecords.Days.self, reader: deltas.reader, key.day) ?? DayTotal()
                let wasReading = day.isReadingDay
                day.pages += change.pages; day.seconds += change.seconds
                try store.putDayTotal(reader: deltas.reader, day: key.day, day)
                if wasReading != day.isReadingDay { deltas.readingDays.append((key.day, day.isReadingDay)) }
            }
        }
    }
}

extension ViewRecordCodec {
    /// Encodes a day total.
    public static func encode(_ t: DayTotal) -> [UInt8] { var w = ByteWriter(); w.u8(format); w.int(t.pages); w.int(t.seconds); return w.bytes }
    /// Decodes a day total.
    public static func decodeDayTotal(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> DayTotal {
        try ByteReader.read(bytes, record: "DayTotal") { (r: inout ByteReader) throws(ViewDecodingError) -> DayTotal in
            _ = try r.expectFormat()
            let t = DayTotal(pages: try r.int("pages"), seconds: try r.int("seconds")); try r.expectEnd(); return t
        }
    }
}

extension ViewStore {
    /// The totals of one day (zero when nothing was read).
    public func dayTotal(reader: ReaderID, day: LocalDate) throws -> DayTotal {
        try record(ViewRecords.Days.self, reader: reader, day) ?? DayTotal()
    }
    /// Stores one day's totals; a zero total removes the day.
    public mutating func putDayTotal(reader: ReaderID, day: LocalDate, _ total: DayTotal) throws {
        try putRecord(ViewRecords.Days.self, reader: reader, day, total.isZero ? nil : total, replacing: nil)
    }
    /// Days with a non-zero total in `range`, in order.
    public func dayTotals(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(LocalDate, DayTotal)] {
        try records(ViewRecords.Days.self, reader: reader, from: range.lowerBound, through: range.upperBound).map { ($0.key, $0.record) }
    }
}

extension ViewStore {
    /// Pages and seconds per day for every day of `range` (days without reading are zero).
    public func dailyPages(reader: ReaderID, in range: ClosedRange<LocalDate>) throws -> [(day: LocalDate, total: DayTotal)] {
        fill(try dayTotals(reader: reader, in: range), range)
    }

    /// A page-calendar month: every day of the month with its totals.
    public func calendarMonth(reader: ReaderID, month: YearMonth) throws -> [(day: LocalDate, total: DayTotal)] {
        let first = try! LocalDate(year: month.year, month: month.month, day: 1)
        let last = first.adding(days: LocalDate.daysIn(month: month.month, year: month.year) - 1)
        return try dailyPages(reader: reader, in: first...last)
    }


    /// Every day of `range` with its stored total, zero where none is stored.
    func fill(_ stored: [(LocalDate, DayTotal)], _ range: ClosedRange<LocalDate>) -> [(day: LocalDate, total: DayTotal)] {
        var index = 0
        var result: [(day: LocalDate, total: DayTotal)] = []
        var day = range.lowerBound
        while day <= range.upperBound {
            if index < stored.count, stored[index].0 == day { result.append((day, stored[index].1)); index += 1 }
            else { result.append((day, DayTotal())) }
            day = day.adding(days: 1)
        }
        return result
    }
}
