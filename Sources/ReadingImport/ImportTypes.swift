import Foundation
import ReadingEvents

/// The apps whose exports can be imported.
///
/// `Sendable`: a plain enum.
public enum ImportSource: String, Sendable, Hashable, CaseIterable, Codable {
    /// Goodreads' library export (`goodreads_library_export.csv`).
    case goodreads
    /// The StoryGraph's export CSV.
    case storygraph
    /// KOReader's statistics plugin database (`statistics.sqlite3`).
    case koreader
}

/// What to do with a book marked read that has no finish date.
///
/// `Sendable`: a plain enum.
public enum UndatedFinishPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// Import the book as being read, without a finish (the default), and report it.
    case leaveUnfinished = "leave"
    /// Finish it on the day it was added to the other app, and report it as flagged.
    case finishOnDateAdded = "date-added"
}

/// Who the history belongs to and how to read the source's dates.
///
/// `Sendable`: a value type.
public struct ImportOptions: Sendable, Hashable {
    /// The reader the events are for.
    public var reader: ReaderID
    /// The reader's IANA zone: dates without a zone (CSV dates) are that calendar day in it, and
    /// KOReader's instants are put on days and hours in it.
    public var zone: ZoneID
    /// The `recordedAt` of every event (the CLI uses the time of the import).
    public var importedAt: Timestamp
    /// Books marked read without a finish date.
    public var undatedFinish: UndatedFinishPolicy
    /// The Goodreads exclusive shelf that means "did not finish" (compared case-insensitively).
    public var didNotFinishShelf: String
    /// KOReader: a gap between page stays longer than this ends a timed session.
    public var sessionGapSeconds: Int
    /// KOReader: where the private copy of the database is made (a new directory inside, removed
    /// on every exit path); nil for the system's temporary directory (`TMPDIR`).
    public var temporaryDirectory: URL?
    /// KOReader: the most rows read from `page_stat_data` (and from `book`); a larger file is
    /// refused with ``ImportError/limitExceeded(_:)``.
    public var maxRows: Int = 5_000_000
    /// KOReader: the most seconds SQLite may spend reading the file; past it the import is
    /// refused with ``ImportError/limitExceeded(_:)``.
    public var readTimeLimitSeconds: Int = 600
    /// KOReader: the device's clock showed local time while the device was set to UTC, so the
    /// stored instants are local wall-clock times; they are moved back by the zone's offset.
    public var deviceClockIsLocal: Bool
    /// Whether the report lists every book (``ImportReport/books``, a few hundred bytes a book
    /// while the file is read: about 190 MiB for a million books); when false it only counts them
    /// (``ImportReport/bookCount``). `replay import-from` lists them only for `--json`.
    public var listsBooks = true

    /// Creates options; `importedAt` is usually now.
    public init(reader: ReaderID, zone: ZoneID, importedAt: Timestamp, undatedFinish: UndatedFinishPolicy = .leaveUnfinished,
                didNotFinishShelf: String = "did-not-finish", sessionGapSeconds: Int = 300, deviceClockIsLocal: Bool = false) {
        self.reader = reader; self.zone = zone; self.importedAt = importedAt; self.undatedFinish = undatedFinish
        self.didNotFinishShelf = didNotFinishShelf; self.sessionGapSeconds = sessionGapSeconds
        self.deviceClockIsLocal = deviceClockIsLocal
    }
}

/// A file that cannot be imported at all: nothing of it is imported.
///
/// `Sendable`: an enum of strings and integers.
public enum ImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file is not the format asked for; `expected` says what was looked for.
    case wrongFormat(source: ImportSource, expected: String)
    /// The file is structurally broken (bad quoting, a wrong column count) at `line`.
    case malformed(line: Int, detail: String)
    /// The file cannot be read (missing, unreadable, not UTF-8).
    case unreadable(path: String, detail: String)
    /// SQLite failed while reading the KOReader database.
    case database(code: Int32, message: String)
    /// An option is out of range.
    case invalidOption(name: String, detail: String)
    /// The file is larger than an import reads (rows, time): `detail` names the bound.
    case limitExceeded(String)

    /// One line for people.
    public var description: String {
        switch self {
        case .wrongFormat(let source, let expected): "not a \(source.rawValue) file: expected \(expected)"
        case .malformed(let line, let detail): "line \(line): \(detail); nothing was imported"
        case .unreadable(let path, let detail): "cannot read \(path): \(detail)"
        case .database(let code, let message): "SQLite error \(code): \(message)"
        case .invalidOption(let name, let detail): "\(name): \(detail)"
        case .limitExceeded(let detail): "\(detail); nothing was imported"
        }
    }
}

/// What an import found: books, events by type, rows skipped and warnings.
///
/// `Sendable`: a value type.
public struct ImportReport: Sendable, Hashable, Codable {
    /// One book of the source. `Sendable`: a value type.
    public struct Book: Sendable, Hashable, Codable {
        /// Its identifier in this package (derived from the reader, the source and ``identity``).
        public var book: BookID
        /// The source's own identity of the row ("goodreads:123", "md5:…", "isbn:…").
        public var identity: String
        /// Its title.
        public var title: String
        /// The status it ends in.
        public var status: ReadingStatus
        /// How many events it produced.
        public var events: Int
    }

    /// A row that was not imported, with where it is and why. `Sendable`: a value type.
    public struct Skipped: Sendable, Hashable, Codable {
        /// The CSV line the row starts on, or the KOReader `page_stat_data` rowid.
        public var line: Int
        /// Why (names the field and the rule).
        public var reason: String
    }

    /// Something imported with a caveat (an undated finish, a reversed range, a capped position).
    /// `Sendable`: a value type.
    public struct Warning: Sendable, Hashable, Codable {
        /// The CSV line, the KOReader rowid, or nil for the whole book.
        public var line: Int?
        /// What happened.
        public var message: String
    }

    /// The source.
    public var source: ImportSource
    /// Rows of the source read: CSV data rows, KOReader `page_stat_data` rows.
    public var rows = 0
    /// Every book imported, in source order (empty when ``ImportOptions/listsBooks`` is false).
    public var books: [Book] = []
    /// How many books were imported (the length of ``books`` when they are listed).
    public var bookCount = 0
    /// Events produced, by type tag.
    public var eventsByType: [String: Int] = [:]
    /// Rows not imported.
    public var skipped: [Skipped] = []
    /// Caveats.
    public var warnings: [Warning] = []

    /// An empty report for `source`.
    public init(source: ImportSource) { self.source = source }

    /// Decodes a report; one encoded before ``bookCount`` existed counts the books it lists.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        source = try container.decode(ImportSource.self, forKey: .source)
        rows = try container.decode(Int.self, forKey: .rows)
        books = try container.decode([Book].self, forKey: .books)
        bookCount = try container.decodeIfPresent(Int.self, forKey: .bookCount) ?? books.count
        eventsByType = try container.decode([String: Int].self, forKey: .eventsByType)
        skipped = try container.decode([Skipped].self, forKey: .skipped)
        warnings = try container.decode([Warning].self, forKey: .warnings)
    }

    /// All events produced.
    public var eventCount: Int { eventsByType.values.reduce(0, +) }

    /// Rows not imported, counted as rows (a row several of whose events were refused is one).
    public var skippedRows: Int { Set(skipped.map(\.line)).count }

    /// A short text report: a line of counts, then events by type, skipped rows and warnings, with
    /// text from the file escaped for a terminal (``ReportText/printable(_:)``).
    public var text: String {
        var lines = ["\(source.rawValue): \(bookCount) books, \(eventCount) events, \(skippedRows) rows skipped, \(warnings.count) warnings"]
        for (type, count) in eventsByType.sorted(by: { $0.key < $1.key }) { lines.append("  \(type): \(count)") }
        for row in skipped { lines.append("  skipped \(source == .koreader ? "rowid" : "line") \(row.line): \(ReportText.printable(row.reason))") }
        for warning in warnings { lines.append("  warning\(warning.line.map { " line \($0)" } ?? ""): \(ReportText.printable(warning.message))") }
        return lines.joined(separator: "\n")
    }
}

/// The result of reading a source: the events, in the order to append them, and the report.
///
/// The events are staged in a private temporary file while the source is read, so memory does
/// not grow with the file; ``forEachBatch(of:skipping:_:)`` reads them back a batch at a time (what
/// `ReadingStore.importHistory(batches:)` takes), ``envelopes`` all at once. The file has no name
/// (unlinked when created) and is closed when the last copy of the result is released.
///
/// `Sendable`: the report is a value and the staged events are immutable.
public struct ImportResult: Sendable, Hashable {
    private let staged: StagedEvents
    /// What was found, skipped and warned about.
    public var report: ImportReport

    init(staged: StagedEvents, report: ImportReport) {
        self.staged = staged
        self.report = report
    }

    /// How many events there are.
    public var eventCount: Int { staged.count }

    /// Validated envelopes for the reader, all in memory: each book's events in the order the
    /// decide step accepted them, with deterministic event IDs. For a large file, prefer
    /// ``forEachBatch(of:skipping:_:)``.
    ///
    /// - Throws: ``ImportError/unreadable(path:detail:)`` when the staged events cannot be read back.
    public var envelopes: [EventEnvelope] {
        get throws {
            var all: [EventEnvelope] = []
            all.reserveCapacity(staged.count)
            try staged.forEachBatch(of: 4_096) { all += $0 }
            return all
        }
    }

    /// Calls `body` with the envelopes in order, at most `size` at a time, from the envelope at
    /// index `skipping` on (the envelopes before it are not read): what
    /// `ReadingStore.importHistory(partsOf:batches:committed:)` asks of each part.
    public func forEachBatch(of size: Int = 4_096, skipping: Int = 0, _ body: ([EventEnvelope]) throws -> Void) throws {
        try staged.forEachBatch(of: max(1, size), skipping: max(0, skipping), body)
    }

    /// Results are equal when their reports and their events are.
    public static func == (a: ImportResult, b: ImportResult) -> Bool {
        a.report == b.report && (try? a.envelopes) == (try? b.envelopes)
    }

    /// Hashes the report and the event count.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(report)
        hasher.combine(staged.count)
    }
}

/// Progress of a long import: rows done of all rows.
public typealias ImportProgress = @Sendable (_ done: Int, _ total: Int) -> Void
