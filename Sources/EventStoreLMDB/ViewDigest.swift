import Crypto
import Projections
import ReadingEvents

/// A SHA-256 digest of every view of every reader, read through the ``ViewStore`` protocol in a
/// canonical order and encoded with the persisted record codec. The persisted views and views
/// folded in memory give the same digest exactly when they hold the same records, so the digest
/// compares a store's views with a fresh fold without writing anything.
///
/// The origins the views keep for replication (a book's last folded origin, the origins of the
/// reader's registers and last event, and of a year's challenge) are left out: they name replicas, not what a
/// reader sees, so two stores that imported the same history on their own give the same digest.
///
/// `Sendable`: a namespace.
public enum ViewDigest {
    /// The whole calendar the views can hold.
    static let allDays = LocalDate(dayNumber: -719_162)...LocalDate(dayNumber: 2_932_896)
    static let allMonths = YearMonth(year: 1, month: 1)...YearMonth(year: 9999, month: 12)

    /// The hex digest of `views`.
    public static func of(_ views: some ViewStore) throws -> String {
        var digest = Accumulator()
        for reader in try views.readers() { try digest.add(reader: reader, of: views) }
        return digest.finalize()
    }

    /// The digest built reader by reader, in reader-ID order: adding every reader of a store in
    /// that order gives ``of(_:)``. A rebuild hashes each reader's views while they are still in
    /// memory instead of reading them all back.
    ///
    /// Not `Sendable`: it holds swift-crypto's SHA-256 state, which is not `Sendable` on Linux.
    public struct Accumulator {
        private var hasher = SHA256()

        /// An empty digest.
        public init() {}

        private mutating func add(_ tag: String, _ bytes: [UInt8]) {
            hasher.update(data: Array(tag.utf8))
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }

        /// Adds a book's details as the table stores them: chunk by chunk, each with the table's encoder.
        private mutating func addChunks<Value: DetailChunkValue>(_ tag: String, _ book: BookView, _ details: [Value.Detail], _: Value.Type) {
            for chunk in ViewRecordCodec.chunked(details) { add(tag, book.book.bytes + Value.encode(chunk.details)) }
        }

        /// Adds the views of `reader` in `views` (after every reader with a lower ID): table by
        /// table in ``ViewTable`` order, each record as that table stores it.
        public mutating func add(reader: ReaderID, of views: some ViewStore) throws {
            add("reader", reader.bytes)
            var bookViews: [BookView]?
            func books() throws -> [BookView] {
                if let bookViews { return bookViews }
                let read = try views.bookViews(reader: reader)
                bookViews = read
                return read
            }
            for table in ViewTable.allCases {
                let tag = table.rawValue
                switch table {
                case .books:
                    for book in try books() {
                        var shown = book
                        shown.lastOrigin = nil
                        add(tag, ViewRecordCodec.encodeSummary(shown))
                    }
                case .bookEntries:
                    for book in try books() { addChunks(tag, book, book.entries, PageEntryChunkValue.self) }
                case .bookSessions:
                    for book in try books() { addChunks(tag, book, book.sessions, SessionChunkValue.self) }
                case .bookSentences:
                    for book in try books() { addChunks(tag, book, book.sentences, TextNoteChunkValue.self) }
                case .bookMemos:
                    for book in try books() { addChunks(tag, book, book.memos, TextNoteChunkValue.self) }
                case .decisions:
                    for book in try books() { add(tag, book.book.bytes + ViewRecordCodec.encode(book.decision)) }
                case .days:
                    for (day, total) in try views.dayTotals(reader: reader, in: allDays) {
                        add(tag, DayKey.encode(day) + ViewRecordCodec.encode(total))
                    }
                case .bookDays:
                    for book in try books() {
                        for (day, total) in try views.bookDayTotals(reader: reader, book: book.book, in: allDays) {
                            add(tag, book.book.bytes + DayKey.encode(day) + ViewRecordCodec.encode(total))
                        }
                    }
                case .months:
                    for (month, total) in try views.monthTotals(reader: reader, in: allMonths) {
                        add(tag, MonthKey.encode(month) + ViewRecordCodec.encode(total))
                    }
                case .buckets:
                    add(tag, ViewRecordCodec.encode(try views.bucketTotals(reader: reader)))
                case .runs:
                    for run in try views.streakRuns(reader: reader) { add(tag, ViewRecordCodec.encode(run)) }
                case .readers:
                    if var view = try views.readerView(reader: reader) {
                        view.homeOrderOrigin = nil; view.profileOrigin = nil; view.lastEvent?.origin = nil
                        add(tag, ViewRecordCodec.encode(view))
                    }
                case .goals:
                    for book in try views.goalBooks(reader: reader) { add(tag, book.bytes) }
                case .years:
                    for var year in try views.yearViews(reader: reader) {
                        year.challengeOrigin = nil
                        add(tag, ViewRecordCodec.encode(year))
                    }
                }
            }
        }

        /// The hex digest of everything added.
        public func finalize() -> String {
            hasher.finalize().map { byte in
                let hex = Array("0123456789abcdef")
                return String([hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            }.joined()
        }
    }
}
