import ReadingEvents

// The months view: a reader's pages and finishes per calendar month. Its record, table, codec,
// accessors, fold step and query.

/// Pages read and books finished in one month.
///
/// `Sendable`: two integers.
public struct MonthTotal: Hashable, Sendable {
    /// Pages credited to days of the month.
    public var pages: Int
    /// Finishes whose finish day falls in the month (a re-read finished again counts again).
    public var finishes: Int
    /// A total.
    public init(pages: Int = 0, finishes: Int = 0) { self.pages = pages; self.finishes = finishes }
}

extension ViewRecords {
    /// Non-zero month totals by month.
    ///
    /// `Sendable`: a table type.
    public enum Months: ViewRecordTable {
        public typealias Key = YearMonth
        public typealias Record = MonthTotal
        public static var kind: ViewRecordKind { .months }
        public static var recordName: String { "MonthTotal" }
        public static var summary: String { "a reader's pages and finishes per month" }
        /// The month's 4 bytes (``ViewKeyBytes/month(_:into:)``: months before year 0 clamped).
        public static func encodeKey(_ key: YearMonth, into bytes: inout [UInt8]) { ViewKeyBytes.month(key, into: &bytes) }
        /// The month in exactly 4 bytes.
        public static func decodeKey(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> YearMonth { try ViewKeyBytes.month(bytes) }
        public static func encodeRecord(_ record: MonthTotal) -> [UInt8] { ViewRecordCodec.encode(record) }
        public static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> MonthTotal {
            try ViewRecordCodec.decodeMonthTotal(bytes)
        }

        /// Adds the netted pages of each month's days and its finishes.
        public static func fold<S: ViewStore>(_ deltas: inout ViewDeltas, into store: inout S) throws {
            let reader = deltas.reader
            var months = SmallMap<YearMonth, MonthTotal>()
            for (key, change) in deltas.sortedChanges {
                let month = YearMonth(key.day)
                try months.update(month, default: try store.monthTotal(reader: reader, month: month)) { $0.pages += change.pages }
            }
            for (month, count) in deltas.finishes.elements where count != 0 {
                try months.update(month, default: try store.monthTotal(reader: reader, month: month)) { $0.finishes += count }
            }
            for (month, total) in months.takeSortedElements() { try store.putMonthTotal(reader: reader, month: month, total) }
        }
    }
}

extension ViewRecordCodec {
    /// Encodes a month total.
    public static func encode(_ t: MonthTotal) -> [UInt8] { var w = ByteWriter(); w.u8(format); w.int(t.pages); w.int(t.finishes); return w.bytes }
    /// Decodes a month total.
    public static func decodeMonthTotal(_ bytes: some Collection<UInt8>) throws(ViewDecodingError) -> MonthTotal {
        try ByteReader.read(bytes, record: "MonthTotal") { (r: inout ByteReader) throws(ViewDecodingError) -> MonthTotal in
            _ = try r.expectFormat()
            let t = MonthTotal(pages: try r.int("pages"), finishes: try r.int("finishes")); try r.expectEnd(); return t
        }
    }
}

extension ViewStore {
    /// The totals of one month.
    public func monthTotal(reader: ReaderID, month: YearMonth) throws -> MonthTotal {
        try record(ViewRecords.Months.self, reader: reader, month) ?? MonthTotal()
    }
    /// Stores one month's totals; zero removes it.
    public mutating func putMonthTotal(reader: ReaderID, month: YearMonth, _ total: MonthTotal) throws {
        try putRecord(ViewRecords.Months.self, reader: reader, month, total == MonthTotal() ? nil : total, replacing: nil)
    }
    /// Months with a non-zero total in `range`, in order.
    public func monthTotals(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(YearMonth, MonthTotal)] {
        try records(ViewRecords.Months.self, reader: reader, from: range.lowerBound, through: range.upperBound).map { ($0.key, $0.record) }
    }
}

extension ViewStore {
    /// Pages and finishes per month of `range`, every month included.
    public func monthly(reader: ReaderID, in range: ClosedRange<YearMonth>) throws -> [(month: YearMonth, total: MonthTotal)] {
        let stored = Dictionary(try monthTotals(reader: reader, in: range).map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
        var result: [(month: YearMonth, total: MonthTotal)] = []
        var month = range.lowerBound
        while month <= range.upperBound {
            result.append((month, stored[month] ?? MonthTotal()))
            month = month.next
        }
        return result
    }
}
