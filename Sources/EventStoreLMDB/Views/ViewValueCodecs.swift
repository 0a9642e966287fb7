import LMDB
import Projections
import ReadingEvents

/// A view table's value codec: one record type of ``ViewRecordCodec``, typed, so a table is
/// declared as `LMDBDatabase<KeyCodec, ValueCodec>` and its reads and writes take and return the
/// record's Swift type. A record that does not decode is an `LMDBError` of kind
/// `badValueSize` whose operation is `decode(<record>)` and whose message is the
/// ``ViewDecodingError`` (the view store reports it as ``EventStoreError/corruptView(detail:)``).
protocol ViewValueCodec: LMDBValueCodec {
    /// The record's name in errors.
    static var record: String { get }
    /// Decodes the record, with a typed error naming the field.
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> Item
}

extension ViewValueCodec {
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        do { return try decodeRecord(bytes) } catch { throw LMDBError.undecodable(codec: record, error.description) }
    }
}

/// A book view's summary record (``ViewRecordCodec/encodeSummary(_:)``), read with an empty
/// decision state and empty details; `isSummary` is false for a whole view of an earlier build.
///
/// `Sendable`: a namespace.
enum BookSummaryValue: ViewValueCodec {
    typealias Item = (view: BookView, isSummary: Bool)
    static let record = "BookSummary"
    /// Encodes the summary of `item.view` (a whole view is never written any more).
    static func encode(_ item: Item) -> [UInt8] { ViewRecordCodec.encodeSummary(item.view) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> Item { try ViewRecordCodec.decodeBookSummary(bytes) }
}

/// A chunk of a book view's details (``ViewRecordCodec/chunked(_:)``): the value of the
/// `bookEntries`, `bookSessions`, `bookSentences` and `bookMemos` tables. Its `encode` is the one
/// encoder of the table's records: the store's writes and ``ViewDigest`` both call it.
protocol DetailChunkValue: ViewValueCodec where Item == ArraySlice<Detail> {
    associatedtype Detail: Equatable
}

/// A chunk of a book view's page entries. `Sendable`: a namespace.
enum PageEntryChunkValue: DetailChunkValue {
    typealias Detail = PageEntry
    static let record = "PageEntryChunk"
    static func encode(_ item: ArraySlice<PageEntry>) -> [UInt8] { ViewRecordCodec.encodeEntryChunk(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ArraySlice<PageEntry> {
        ArraySlice(try ViewRecordCodec.decodeEntryChunk(bytes))
    }
}

/// A chunk of a book view's timed sessions. `Sendable`: a namespace.
enum SessionChunkValue: DetailChunkValue {
    typealias Detail = SessionRecord
    static let record = "SessionChunk"
    static func encode(_ item: ArraySlice<SessionRecord>) -> [UInt8] { ViewRecordCodec.encodeSessionChunk(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ArraySlice<SessionRecord> {
        ArraySlice(try ViewRecordCodec.decodeSessionChunk(bytes))
    }
}

/// A chunk of a book view's sentences or memos. `Sendable`: a namespace.
enum TextNoteChunkValue: DetailChunkValue {
    typealias Detail = TextNote
    static let record = "TextNoteChunk"
    static func encode(_ item: ArraySlice<TextNote>) -> [UInt8] { ViewRecordCodec.encodeNoteChunk(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ArraySlice<TextNote> {
        ArraySlice(try ViewRecordCodec.decodeNoteChunk(bytes))
    }
}

/// A book's decision state. `Sendable`: a namespace.
enum BookStateValue: ViewValueCodec {
    static let record = "BookState"
    static func encode(_ item: BookState) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BookState { try ViewRecordCodec.decodeBookState(bytes) }
}

/// A day's (or a book's day's) totals. `Sendable`: a namespace.
enum DayTotalValue: ViewValueCodec {
    static let record = "DayTotal"
    static func encode(_ item: DayTotal) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> DayTotal { try ViewRecordCodec.decodeDayTotal(bytes) }
}

/// A month's totals. `Sendable`: a namespace.
enum MonthTotalValue: ViewValueCodec {
    static let record = "MonthTotal"
    static func encode(_ item: MonthTotal) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> MonthTotal { try ViewRecordCodec.decodeMonthTotal(bytes) }
}

/// A reader's time-of-day totals. `Sendable`: a namespace.
enum BucketTotalsValue: ViewValueCodec {
    static let record = "BucketTotals"
    static func encode(_ item: BucketTotals) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BucketTotals { try ViewRecordCodec.decodeBucketTotals(bytes) }
}

/// A streak run. `Sendable`: a namespace.
enum StreakRunValue: ViewValueCodec {
    static let record = "StreakRun"
    static func encode(_ item: StreakRun) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> StreakRun { try ViewRecordCodec.decodeStreakRun(bytes) }
}

/// A reader's own record. `Sendable`: a namespace.
enum ReaderViewValue: ViewValueCodec {
    static let record = "ReaderView"
    static func encode(_ item: ReaderView) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ReaderView { try ViewRecordCodec.decodeReaderView(bytes) }
}

/// A reader's record of one year. `Sendable`: a namespace.
enum YearViewValue: ViewValueCodec {
    static let record = "YearView"
    static func encode(_ item: YearView) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> YearView { try ViewRecordCodec.decodeYearView(bytes) }
}

/// No value: a table whose keys are the whole record (the books with an active goal). Any stored
/// bytes read as present. `Sendable`: a namespace.
enum NoValue: LMDBValueCodec {
    typealias Item = Void
    static func encode(_ item: Void) -> [UInt8] { [] }
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) {}
}
