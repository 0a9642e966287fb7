import ReadingEvents

/// The bytes of the keys view tables are stored under (after the reader's ID): the one place each
/// key type's byte form is written, so that byte order is key order. A table declares its key's
/// bytes with these (``ViewRecordTable/encodeKey(_:into:)``), and the store's key codecs of the
/// same types (EventStoreLMDB's `DayKey`, `MonthKey`, `YearKey`) call them.
///
/// `Sendable`: a namespace.
package enum ViewKeyBytes {
    /// The day numbers `LocalDate` can hold: 0001-01-01 ... 9999-12-31.
    package static let dayNumbers = -719_162...2_932_896

    /// Appends `value` as 4 big-endian bytes.
    @inline(__always)
    package static func bigEndian(_ value: UInt32, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// The integer in exactly 4 big-endian bytes.
    package static func bigEndian(_ bytes: UnsafeRawBufferPointer, _ field: String) throws(ViewDecodingError) -> UInt32 {
        guard bytes.count == 4 else { throw ViewDecodingError(field: field, offset: 0, problem: "expected 4 bytes, found \(bytes.count)") }
        return UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    /// A date: big-endian `UInt32(dayNumber + 1_000_000)`.
    package static func day(_ day: LocalDate, into bytes: inout [UInt8]) { bigEndian(UInt32(day.dayNumber + 1_000_000), into: &bytes) }

    /// The date in exactly 4 bytes, one of years 1 ... 9999.
    package static func day(_ bytes: UnsafeRawBufferPointer, _ field: String = "day") throws(ViewDecodingError) -> LocalDate {
        let dayNumber = Int(try bigEndian(bytes, field)) - 1_000_000
        guard dayNumbers.contains(dayNumber) else {
            throw ViewDecodingError(field: field, offset: 0, problem: "day number \(dayNumber) is outside years 1 ... 9999")
        }
        return LocalDate(dayNumber: dayNumber)
    }

    /// A month: big-endian `UInt32(clamping: year * 12 + month - 1)` (years before 0 are clamped
    /// to 0, as they always were).
    package static func month(_ month: YearMonth, into bytes: inout [UInt8]) {
        bigEndian(UInt32(clamping: month.year * 12 + month.month - 1), into: &bytes)
    }

    /// The month in exactly 4 bytes.
    package static func month(_ bytes: UnsafeRawBufferPointer, _ field: String = "month") throws(ViewDecodingError) -> YearMonth {
        let value = Int(try bigEndian(bytes, field))
        return YearMonth(year: value / 12, month: value % 12 + 1)
    }

    /// A year: big-endian `UInt32(clamping: year)`.
    package static func year(_ year: Int, into bytes: inout [UInt8]) { bigEndian(UInt32(clamping: year), into: &bytes) }

    /// The year in exactly 4 bytes.
    package static func year(_ bytes: UnsafeRawBufferPointer, _ field: String = "year") throws(ViewDecodingError) -> Int {
        Int(try bigEndian(bytes, field))
    }

    /// An identifier's 16 UUID bytes.
    package static func id<Tag>(_ id: TaggedID<Tag>, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: id.uuid.uuid) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// The identifier in exactly 16 bytes.
    package static func id<Tag>(_ bytes: UnsafeRawBufferPointer, _ field: String) throws(ViewDecodingError) -> TaggedID<Tag> {
        guard let id = TaggedID<Tag>(bytes: bytes) else {
            throw ViewDecodingError(field: field, offset: 0, problem: "expected 16 bytes, found \(bytes.count)")
        }
        return id
    }

    /// Checks that `bytes` is empty: the key of a table with one record per reader.
    package static func none(_ bytes: UnsafeRawBufferPointer, _ field: String) throws(ViewDecodingError) {
        guard bytes.isEmpty else { throw ViewDecodingError(field: field, offset: 0, problem: "expected no bytes, found \(bytes.count)") }
    }
}
