import LMDB
import Projections
import ReadingEvents

/// The value codec of a book view's tables (its summary, decision state and detail chunks; every
/// other table is read and written as the bytes its table type declares): one record type of
/// ``ViewRecordCodec``, typed, so a table is
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
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> Item { try ViewRecordCodec.decodeBookSummary(inPlace: bytes) }
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
        ArraySlice(try ViewRecordCodec.decodeEntryChunk(inPlace: bytes))
    }
}

/// A chunk of a book view's timed sessions. `Sendable`: a namespace.
enum SessionChunkValue: DetailChunkValue {
    typealias Detail = SessionRecord
    static let record = "SessionChunk"
    static func encode(_ item: ArraySlice<SessionRecord>) -> [UInt8] { ViewRecordCodec.encodeSessionChunk(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ArraySlice<SessionRecord> {
        ArraySlice(try ViewRecordCodec.decodeSessionChunk(inPlace: bytes))
    }
}

/// A chunk of a book view's sentences or memos. `Sendable`: a namespace.
enum TextNoteChunkValue: DetailChunkValue {
    typealias Detail = TextNote
    static let record = "TextNoteChunk"
    static func encode(_ item: ArraySlice<TextNote>) -> [UInt8] { ViewRecordCodec.encodeNoteChunk(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> ArraySlice<TextNote> {
        ArraySlice(try ViewRecordCodec.decodeNoteChunk(inPlace: bytes))
    }
}

/// A book's decision state. `Sendable`: a namespace.
enum BookStateValue: ViewValueCodec {
    static let record = "BookState"
    static func encode(_ item: BookState) -> [UInt8] { ViewRecordCodec.encode(item) }
    static func decodeRecord(_ bytes: UnsafeRawBufferPointer) throws(ViewDecodingError) -> BookState { try ViewRecordCodec.decodeBookState(inPlace: bytes) }
}
