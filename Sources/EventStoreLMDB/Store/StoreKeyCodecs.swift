import Foundation
import LMDB
import Projections
import ReadingEvents

// The key codecs of the store's tables. Each one writes exactly the bytes the store has always
// written (no format change); decoding checks lengths and ranges and throws an `LMDBError` of
// kind `badValueSize`, never traps. All are caseless enums, so `Sendable`.

/// An identifier (reader, book, ...) as its 16 UUID bytes (RFC 4122 order). `Tag` is constrained
/// where it conforms (as in ``KeyPair``): its metadata then needs no conformance lookup at run time.
enum IDKey<Tag>: Sendable {}

extension IDKey: LMDBKeyCodec where Tag: IdentifierTag {}

extension IDKey: LMDBFixedWidthKeyCodec where Tag: IdentifierTag {
    /// Always 16 bytes.
    static var byteCount: Int { 16 }
}

extension IDKey: LMDBValueCodec where Tag: IdentifierTag {
    typealias Item = TaggedID<Tag>
    /// The identifier's 16 UUID bytes.
    static func encode(_ item: TaggedID<Tag>) -> [UInt8] { item.bytes }
    /// Appends the identifier's 16 UUID bytes in place.
    static func encode(_ item: TaggedID<Tag>, into bytes: inout [UInt8]) { UUIDKey.encode(item.uuid, into: &bytes) }
    /// The identifier in exactly 16 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> TaggedID<Tag> {
        guard let id = TaggedID<Tag>(bytes: bytes) else {
            throw LMDBError.undecodable(codec: "IDKey<\(Tag.self)>", "expected 16 bytes, found \(bytes.count)")
        }
        return id
    }
}

/// A reader as its 16 UUID bytes.
typealias ReaderIDKey = IDKey<ReaderTag>
/// A book as its 16 UUID bytes.
typealias BookIDKey = IDKey<BookTag>

/// `eventIDs`: an event ID as its 16 UUID bytes (as in the record).
enum UUIDKey: LMDBFixedWidthKeyCodec {
    typealias Item = UUID
    /// Always 16 bytes.
    static var byteCount: Int { 16 }
    /// The UUID's 16 bytes.
    static func encode(_ item: UUID) -> [UInt8] { EventRecord.uuidBytes(item) }
    /// Appends the UUID's 16 bytes in place.
    static func encode(_ item: UUID, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: item.uuid) { bytes.append(contentsOf: $0) }
    }
    /// The UUID in exactly 16 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> UUID {
        guard bytes.count == 16 else {
            throw LMDBError.undecodable(codec: "UUIDKey", "expected 16 bytes, found \(bytes.count)")
        }
        return EventRecord.uuid(bytes, at: 0)
    }
}

/// A date as big-endian `UInt32(dayNumber + 1_000_000)`, so byte order is date order. Dates
/// outside years 1 ... 9999 (which `LocalDate` cannot hold) are rejected when decoding.
enum DayKey: LMDBFixedWidthKeyCodec {
    typealias Item = LocalDate
    /// Always 4 bytes.
    static var byteCount: Int { 4 }
    /// The day numbers `LocalDate` can hold: 0001-01-01 ... 9999-12-31.
    static var dayNumbers: ClosedRange<Int> { ViewKeyBytes.dayNumbers }
    /// The 4 bytes of `item`.
    static func encode(_ item: LocalDate) -> [UInt8] { encoded(item, reserving: byteCount) }
    /// Appends the 4 bytes of `item` in place (``ViewKeyBytes/day(_:into:)``).
    static func encode(_ item: LocalDate, into bytes: inout [UInt8]) { ViewKeyBytes.day(item, into: &bytes) }
    /// The date in exactly 4 bytes; throws for other lengths and for days outside years 1 ... 9999.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> LocalDate {
        do { return try ViewKeyBytes.day(bytes) } catch { throw LMDBError.undecodable(codec: "DayKey", error.description) }
    }
}

/// A month as big-endian `UInt32(year * 12 + month - 1)`, so byte order is month order.
enum MonthKey: LMDBFixedWidthKeyCodec {
    typealias Item = YearMonth
    /// Always 4 bytes.
    static var byteCount: Int { 4 }
    /// The 4 bytes of `item` (years before 0 are clamped to 0, as they always were).
    static func encode(_ item: YearMonth) -> [UInt8] { encoded(item, reserving: byteCount) }
    /// Appends the 4 bytes of `item` in place (``ViewKeyBytes/month(_:into:)``).
    static func encode(_ item: YearMonth, into bytes: inout [UInt8]) { ViewKeyBytes.month(item, into: &bytes) }
    /// The month in exactly 4 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> YearMonth {
        do { return try ViewKeyBytes.month(bytes) } catch { throw LMDBError.undecodable(codec: "MonthKey", error.description) }
    }
}

/// A year as big-endian `UInt32(clamping: year)`, so byte order is year order.
enum YearKey: LMDBFixedWidthKeyCodec {
    typealias Item = Int
    /// Always 4 bytes.
    static var byteCount: Int { 4 }
    /// The 4 bytes of `item` (clamped to 0 ... `UInt32.max`, as it always was).
    static func encode(_ item: Int) -> [UInt8] { encoded(item, reserving: byteCount) }
    /// Appends the 4 bytes of `item` in place (``ViewKeyBytes/year(_:into:)``).
    static func encode(_ item: Int, into bytes: inout [UInt8]) { ViewKeyBytes.year(item, into: &bytes) }
    /// The year in exactly 4 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Int {
        do { return try ViewKeyBytes.year(bytes) } catch { throw LMDBError.undecodable(codec: "YearKey", error.description) }
    }
}

/// The `streamIndex` key (log format 3): the stream's key bytes (``StreamKey``, self-delimiting)
/// and the big-endian stream version, so one stream's keys are contiguous and sort by version.
/// (Formats 1 and 2 keyed it by the stream name's UTF-8 bytes, a 0x00 and the version.)
enum StreamIndexKey: LMDBKeyCodec {
    typealias Item = (stream: StreamKey, version: UInt64)
    /// The stream key's bytes, then the 8 big-endian version bytes. Precondition: a valid key
    /// (a named key's rules are checked before any write or read by ``StreamKey/encoded()``).
    static func encode(_ item: Item) -> [UInt8] {
        var bytes = prefix(item.stream)
        BigEndianUInt64.encode(item.version, into: &bytes)
        return bytes
    }
    /// The bytes every key of `stream` starts with: its key's bytes.
    static func prefix(_ stream: StreamKey) -> [UInt8] { (try? stream.encoded()) ?? [] }
    /// The stream and version; throws unless the bytes are a stream key followed by exactly 8
    /// version bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        let stream: StreamKey, count: Int
        do {
            (stream, count) = try StreamKey.decodePrefix(of: bytes)
        } catch {
            throw LMDBError.undecodable(codec: "StreamIndexKey", error.rule)
        }
        guard bytes.count == count + 8 else {
            throw LMDBError.undecodable(codec: "StreamIndexKey", "expected 8 version bytes after the stream key, found \(bytes.count - count)")
        }
        return (stream, try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[count...])))
    }
}

/// `index.reader`: reader ID bytes, then the event's big-endian log position.
typealias ReaderPositionKey = KeyPair<ReaderIDKey, BigEndianUInt64>
/// Views keyed by reader and book (`books`, `goals`): reader ID bytes, then book ID bytes.
typealias ReaderBookKey = KeyPair<ReaderIDKey, BookIDKey>
/// Views keyed by reader and day (`days`, `runs`).
typealias ReaderDayKey = KeyPair<ReaderIDKey, DayKey>
/// `bookDays`: reader, book, day.
typealias ReaderBookDayKey = KeyPair<ReaderBookKey, DayKey>
/// (reader, book, chunk number): a book view's detail chunks (page entries, sessions, sentences,
/// memos; ``ViewRecordCodec/detailsPerChunk`` a chunk), so they read back in the view's order.
typealias ReaderBookIndexKey = KeyPair<ReaderBookKey, BigEndianUInt32>
/// `months`: reader, month.
typealias ReaderMonthKey = KeyPair<ReaderIDKey, MonthKey>
/// `years`: reader, year.
typealias ReaderYearKey = KeyPair<ReaderIDKey, YearKey>
