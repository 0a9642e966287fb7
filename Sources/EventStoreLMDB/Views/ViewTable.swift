import Projections

/// Every table of the persisted views: the list that the table set of a generation
/// (`ViewDatabases`), the view digest (``ViewDigest``), ``ReadingStore/rebuild(view:progress:)``
/// (and `replay rebuild --view`) and the DocC overview's table list are built from.
///
/// Each table belongs to one view, the name `rebuild --view` takes (``view``): a book view is six
/// tables (its summary, its decision state and one table per kind of detail), every other view
/// one. The book view's five tables beside its summary are this store's own and are listed here;
/// every other table is a table of view records (``ViewRecordKind``, the one list of them),
/// named as its kind, with the summary its table type declares and its kind's raw value as its
/// group byte. Adding a table of view records needs nothing here; `ViewTableTests` asks for its
/// line in the DocC overview.
///
/// `Sendable`: plain values.
public struct ViewTable: RawRepresentable, Hashable, CaseIterable, Sendable, CustomStringConvertible {
    /// The table's name (its database name after the generation: `views.g1.<name>`).
    public let rawValue: String
    /// The view this table belongs to: the name ``ReadingStore/rebuild(view:progress:)`` takes.
    public let view: String
    /// One line on what the table holds (for `--help` and the docs).
    public let summary: String
    /// The byte after the reader's ID in the database's key: 0 for a book view's six tables,
    /// each other table its kind's raw value.
    let group: UInt8
    /// For a book view's table, the byte after the book's ID (its records in that order: summary,
    /// decision, entries, sessions, sentences, memos); `nil` for the other tables.
    let part: UInt8?
    /// The table of view records whose records this table stores, or `nil` for a part of a book
    /// view that is not its summary (its decision state and its detail chunks).
    let recordKind: ViewRecordKind?

    /// The table named `rawValue`, if there is one.
    public init?(rawValue: String) {
        guard let table = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = table
    }

    /// A part of a book view that is not a table of view records.
    private init(bookPart name: String, part: UInt8, summary: String) {
        rawValue = name; view = "books"; self.summary = summary; group = 0; self.part = part; recordKind = nil
    }

    /// The table of the records of `kind`: named as the kind, in a view of that name.
    private init(kind: ViewRecordKind) {
        rawValue = "\(kind)"; view = rawValue; summary = kind.summary
        group = UInt8(kind.rawValue); part = kind == .books ? 0 : nil; recordKind = kind
    }

    /// The name.
    public var description: String { rawValue }

    /// Book-view summaries: everything a book view holds but its details and decision state.
    public static let books = ViewTable(kind: .books)
    /// A book view's page entries, in chunks of up to 32 a record under the chunk's number.
    public static let bookEntries = ViewTable(bookPart: "bookEntries", part: 2, summary: "a book's page entries, up to 32 a record")
    /// A book view's timed sessions, in chunks of up to 32 a record.
    public static let bookSessions = ViewTable(bookPart: "bookSessions", part: 3, summary: "a book's timed sessions, up to 32 a record")
    /// A book view's collected sentences, in chunks of up to 32 a record.
    public static let bookSentences = ViewTable(bookPart: "bookSentences", part: 4, summary: "a book's collected sentences, up to 32 a record")
    /// A book view's memos, in chunks of up to 32 a record.
    public static let bookMemos = ViewTable(bookPart: "bookMemos", part: 5, summary: "a book's memos, up to 32 a record")
    /// Each book's decision state (`BookState`), what a command is decided on.
    public static let decisions = ViewTable(bookPart: "decisions", part: 1, summary: "each book's decision state, what commands are decided on")
    /// A reader's totals per local day.
    public static var days: ViewTable { of(.days) }
    /// A book's totals per local day.
    public static var bookDays: ViewTable { of(.bookDays) }
    /// A reader's totals per month.
    public static var months: ViewTable { of(.months) }
    /// A reader's time-of-day totals.
    public static var buckets: ViewTable { of(.buckets) }
    /// A reader's streak runs, keyed by their first day.
    public static var runs: ViewTable { of(.runs) }
    /// A reader's own record (profile, home order, last event).
    public static var readers: ViewTable { of(.readers) }
    /// The books with an active goal (keys only): the home list.
    public static var goals: ViewTable { of(.goals) }
    /// A reader's record per calendar year (challenge, pages and finishes of the year's books).
    public static var years: ViewTable { of(.years) }

    /// Every table: the book view's six (its summary, its parts), then the table of each other
    /// kind of view records, in kind order.
    public static let allCases: [ViewTable] = [books, bookEntries, bookSessions, bookSentences, bookMemos, decisions]
        + tablesOfKinds.filter { $0.recordKind != .books }

    /// The views, in the order of their first table: the names ``ReadingStore/rebuild(view:progress:)``
    /// and `replay rebuild --view` take.
    public static let views: [String] = allCases.reduce(into: []) { names, table in
        if !names.contains(table.view) { names.append(table.view) }
    }

    /// The tables of `view` (one of ``views``), in list order; empty for another name.
    public static func tables(of view: String) -> [ViewTable] { allCases.filter { $0.view == view } }

    /// The table that stores the records of `kind` (for a book view, its summaries).
    static func of(_ kind: ViewRecordKind) -> ViewTable { tablesOfKinds[kind.rawValue] }

    /// The table of each kind, in kind order.
    private static let tablesOfKinds: [ViewTable] = ViewRecordKind.allCases.map { $0 == .books ? books : ViewTable(kind: $0) }

    /// Equal when named alike (a name is one table).
    public static func == (lhs: ViewTable, rhs: ViewTable) -> Bool { lhs.rawValue == rhs.rawValue }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
