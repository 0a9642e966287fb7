import Projections

/// Every table of the persisted views: the one list that the table set of a generation
/// (`ViewDatabases`), the view digest (``ViewDigest``), ``ReadingStore/rebuild(view:progress:)``
/// (and `replay rebuild --view`) and the DocC overview's table list are built from.
///
/// Each table belongs to one view, the name `rebuild --view` takes (``view``): a book view is six
/// tables (its summary, its decision state and one table per kind of detail), every other view one.
/// Adding a table is a case here; the compiler then asks for its view, its summary, its group
/// (and for a book view's table its part) in `ViewKeys.swift`, which places its records in the
/// generation's one database, its typed table in `ViewDatabases` and its part of the digest (each
/// an exhaustive `switch`), and `ViewTableTests` asks for its line in the DocC overview.
///
/// `Sendable`: a plain enumeration.
public enum ViewTable: String, CaseIterable, Sendable {
    /// Book-view summaries: everything a book view holds but its details and decision state.
    case books
    /// A book view's page entries, in chunks of up to 32 a record under the chunk's number.
    case bookEntries
    /// A book view's timed sessions, in chunks of up to 32 a record.
    case bookSessions
    /// A book view's collected sentences, in chunks of up to 32 a record.
    case bookSentences
    /// A book view's memos, in chunks of up to 32 a record.
    case bookMemos
    /// Each book's decision state (`BookState`), what a command is decided on.
    case decisions
    /// A reader's totals per local day.
    case days
    /// A book's totals per local day.
    case bookDays
    /// A reader's totals per month.
    case months
    /// A reader's time-of-day totals.
    case buckets
    /// A reader's streak runs, keyed by their first day.
    case runs
    /// A reader's own record (profile, home order, last event).
    case readers
    /// The books with an active goal (keys only): the home list.
    case goals
    /// A reader's record per calendar year (challenge, pages and finishes of the year's books).
    case years

    /// The view this table belongs to: the name ``ReadingStore/rebuild(view:progress:)`` takes.
    public var view: String {
        switch self {
        case .books, .bookEntries, .bookSessions, .bookSentences, .bookMemos, .decisions: "books"
        case .days: "days"
        case .bookDays: "bookDays"
        case .months: "months"
        case .buckets: "buckets"
        case .runs: "runs"
        case .readers: "readers"
        case .goals: "goals"
        case .years: "years"
        }
    }

    /// One line on what the table holds (for `--help` and the docs).
    public var summary: String {
        switch self {
        case .books: "book-view summaries (metadata, status, goal, finishes, rating, like)"
        case .bookEntries: "a book's page entries, up to 32 a record"
        case .bookSessions: "a book's timed sessions, up to 32 a record"
        case .bookSentences: "a book's collected sentences, up to 32 a record"
        case .bookMemos: "a book's memos, up to 32 a record"
        case .decisions: "each book's decision state, what commands are decided on"
        case .days: "a reader's pages and seconds per local day"
        case .bookDays: "a book's pages and seconds per local day"
        case .months: "a reader's pages and finishes per month"
        case .buckets: "a reader's time-of-day totals"
        case .runs: "a reader's streak runs"
        case .readers: "a reader's own record (profile, home order, last event)"
        case .goals: "the books with an active goal (the home list)"
        case .years: "a reader's record per calendar year (challenge, year in review)"
        }
    }

    /// The views, in the order of their first table: the names ``ReadingStore/rebuild(view:progress:)``
    /// and `replay rebuild --view` take.
    public static let views: [String] = allCases.reduce(into: []) { names, table in
        if !names.contains(table.view) { names.append(table.view) }
    }

    /// The tables of `view` (one of ``views``), in list order; empty for another name.
    public static func tables(of view: String) -> [ViewTable] { allCases.filter { $0.view == view } }
}

extension ViewTable {
    /// The byte after the reader's ID in the database's key: 0 for a book view's six tables,
    /// each other table its own.
    var group: UInt8 {
        switch self {
        case .books, .decisions, .bookEntries, .bookSessions, .bookSentences, .bookMemos: 0
        case .days: 1
        case .bookDays: 2
        case .months: 3
        case .buckets: 4
        case .runs: 5
        case .readers: 6
        case .goals: 7
        case .years: 8
        }
    }

    /// For a book view's table, the byte after the book's ID (its records in that order: summary,
    /// decision, entries, sessions, sentences, memos); `nil` for the other tables.
    var part: UInt8? {
        switch self {
        case .books: 0
        case .decisions: 1
        case .bookEntries: 2
        case .bookSessions: 3
        case .bookSentences: 4
        case .bookMemos: 5
        case .days, .bookDays, .months, .buckets, .runs, .readers, .goals, .years: nil
        }
    }
}

extension ViewTable {
    /// The table of view records whose records this table stores (``ViewRecordKind``: the kind of
    /// the same name), or `nil` for a part of a book view that is not its summary (its decision
    /// state and its detail chunks).
    var recordKind: ViewRecordKind? { ViewRecordKind.allCases.first { Self.of($0) == self } }

    /// The table that stores the records of `kind` (for a book view, its summaries).
    static func of(_ kind: ViewRecordKind) -> ViewTable { tablesOfKinds[kind.rawValue] }

    /// The table of each kind, in kind order: a table of view records is the table of the same name.
    private static let tablesOfKinds: [ViewTable] = ViewRecordKind.allCases.map { kind in
        guard let table = ViewTable(rawValue: "\(kind)") else { preconditionFailure("no view table is named \(kind), as its table of view records") }
        return table
    }
}
