import Crypto
import Projections
import ReadingEvents

/// A SHA-256 digest of every view of every reader, read through the ``ViewStore`` protocol in a
/// canonical order and encoded with the persisted record codec. The persisted views and views
/// folded in memory give the same digest exactly when they hold the same records, so the digest
/// compares a store's views with a fresh fold without writing anything.
///
/// The origins the views keep for replication (a book's last folded origin, the origins of the
/// reader's registers and of a year's challenge) are left out: they name replicas, not what a
/// reader sees, so two stores that imported the same history on their own give the same digest.
///
/// `Sendable`: a namespace.
public enum ViewDigest {
    /// The whole calendar the views can hold.
    static let allDays = LocalDate(dayNumber: -719_162)...LocalDate(dayNumber: 2_932_896)
    static let allMonths = YearMonth(year: 1, month: 1)...YearMonth(year: 9999, month: 12)

    /// The hex digest of `views`.
    public static func of(_ views: some ViewStore) throws -> String {
        var hasher = SHA256()
        func add(_ tag: String, _ bytes: [UInt8]) {
            hasher.update(data: Array(tag.utf8))
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }
        for reader in try views.readers() {
            add("reader", reader.bytes)
            if var view = try views.readerView(reader: reader) {
                view.homeOrderOrigin = nil; view.profileOrigin = nil
                add("readerView", ViewRecordCodec.encode(view))
            }
            for book in try views.bookViews(reader: reader) {
                var shown = book
                shown.lastOrigin = nil
                add("book", ViewRecordCodec.encode(shown))
                add("decision", ViewRecordCodec.encode(book.decision))
                for (day, total) in try views.bookDayTotals(reader: reader, book: book.book, in: allDays) {
                    add("bookDay", DayKey.encode(day) + ViewRecordCodec.encode(total))
                }
            }
            for (day, total) in try views.dayTotals(reader: reader, in: allDays) {
                add("day", DayKey.encode(day) + ViewRecordCodec.encode(total))
            }
            for (month, total) in try views.monthTotals(reader: reader, in: allMonths) {
                add("month", MonthKey.encode(month) + ViewRecordCodec.encode(total))
            }
            add("buckets", ViewRecordCodec.encode(try views.bucketTotals(reader: reader)))
            for run in try views.streakRuns(reader: reader) { add("run", ViewRecordCodec.encode(run)) }
            for book in try views.goalBooks(reader: reader) { add("goal", book.bytes) }
            for var year in try views.yearViews(reader: reader) {
                year.challengeOrigin = nil
                add("year", ViewRecordCodec.encode(year))
            }
        }
        return hasher.finalize().map { byte in
            let hex = Array("0123456789abcdef")
            return String([hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        }.joined()
    }
}
