import ReadingEvents

/// How the home list is ordered.
///
/// `Sendable`: a plain enum.
public enum HomeSort: String, Sendable, Hashable, CaseIterable {
    /// Title A → Z (then by book ID, so ties are stable).
    case titleAscending
    /// Title Z → A.
    case titleDescending
    /// Most recent activity first.
    case recentActivity
    /// The reader's own order; books not in it follow by title.
    case readerOrder
}

/// One active goal on the home list.
///
/// `Sendable`: plain values.
public struct HomeItem: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Title, subtitle, authors, cover, category ...
    public var metadata: BookMetadata
    /// The goal.
    public var goal: BookState.Goal
    /// The page reached in the current read-through.
    public var position: Int
    /// position / page count, 0 ... 1; `nil` when the page count is unknown.
    public var progress: Double?
    /// Pages to the end; `nil` when the page count is unknown.
    public var pagesLeft: Int?
    /// Days from today to the target date: 0 on the day, negative once it has passed (D+n).
    public var daysLeft: Int
    /// Pages a day needed to finish on the target date, counting today; `nil` when the page count
    /// is unknown or the target date has passed.
    public var pagesPerDayNeeded: Int?
    /// The day the reader would finish at their own pace on this book since the goal started
    /// (pages read in this read-through / days since the start); `nil` before any pages.
    public var projectedFinish: LocalDate?
    /// The latest activity on the book.
    public var lastActivity: Timestamp
}

/// The home list: active goals grouped by category, each group in the chosen order.
///
/// `Sendable`: plain values.
public struct HomeList: Hashable, Sendable {
    /// The day "today" was taken to be.
    public var today: LocalDate
    /// All items in the chosen order.
    public var items: [HomeItem]
    /// Items grouped by ``BookMetadata/groupingCategory``, groups by name, items in the chosen order.
    public var byCategory: [(category: String, items: [HomeItem])] {
        var groups: [String: [HomeItem]] = [:]
        for item in items { groups[item.metadata.groupingCategory, default: []].append(item) }
        return groups.keys.sorted().map { ($0, groups[$0]!) }
    }

    /// Compares the day and the items (groups are derived from them).
    public static func == (l: HomeList, r: HomeList) -> Bool { l.today == r.today && l.items == r.items }
    /// Hashes the day and the items.
    public func hash(into hasher: inout Hasher) { hasher.combine(today); hasher.combine(items) }
}

/// Which side of the bookshelf to show.
///
/// `Sendable`: a plain enum.
public enum ShelfFilter: String, Sendable, Hashable, CaseIterable {
    /// Books finished at least once.
    case finished
    /// Books the reader likes.
    case liked
}

/// A book on the shelf.
///
/// `Sendable`: plain values.
public struct ShelfItem: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Its metadata.
    public var metadata: BookMetadata
    /// Finish days, one per finished read-through (a re-read shows the book once, with two days).
    public var finishes: [LocalDate]
    /// Whether the last goal was met; `nil` when the book was finished without a goal.
    public var goalMet: Bool?
    /// What became of the book's latest goal (``BookView/goalStatus``): on a book abandoned while a
    /// goal ran, ``GoalStatus/abandoned``, neither met nor missed.
    public var goalStatus: GoalStatus?
    /// The rating.
    public var rating: Rating?
    /// Whether the reader likes it.
    public var liked: Bool
}

/// The bookshelf: one side, and the height of the stack of finished books.
///
/// `Sendable`: plain values.
public struct Bookshelf: Hashable, Sendable {
    /// The side shown.
    public var filter: ShelfFilter
    /// Books, latest finish (or like) first.
    public var items: [ShelfItem]
    /// Height in millimetres of all finished books stacked (each book once): the thickness when
    /// known, else the page count × 0.06 mm (80 g/m² paper: a 300-page book is 18 mm).
    public var stackHeightMillimetres: Double
}

/// One book with everything about it.
///
/// `Sendable`: plain values.
public struct BookDetail: Hashable, Sendable {
    /// The full book view (metadata, goal, page entries, sentences, memos, sessions, rating).
    public var view: BookView
    /// The page history as a list, every read-through, in the order the reading happened.
    public var pageHistory: [PageEntry] { view.entries }
    /// What became of the book's latest goal (active, met, missed, or abandoned).
    public var goalStatus: GoalStatus? { view.goalStatus }
    /// Pages and seconds per reading day, for the per-day bars.
    public var dailyBars: [(day: LocalDate, total: DayTotal)]

    /// Compares the view and the bars.
    public static func == (l: BookDetail, r: BookDetail) -> Bool {
        l.view == r.view && l.dailyBars.map(\.day) == r.dailyBars.map(\.day) && l.dailyBars.map(\.total) == r.dailyBars.map(\.total)
    }
    /// Hashes the view.
    public func hash(into hasher: inout Hasher) { hasher.combine(view) }
}

/// Books by status and totals.
///
/// `Sendable`: plain values.
public struct SummaryCounts: Hashable, Sendable {
    /// Books in the library being read.
    public var reading: Int
    /// Distinct books finished at least once (a re-read counts once).
    public var finished: Int
    /// Books on the wish list.
    public var wantToRead: Int
    /// Books abandoned.
    public var didNotFinish: Int
    /// Books liked.
    public var liked: Int
    /// Pages credited in all.
    public var totalPages: Int
    /// Seconds of timed reading in all.
    public var totalSeconds: Int
}

/// A timer started and never stopped, so a host app can offer to recover it after a crash.
///
/// `Sendable`: plain values.
public struct OpenSession: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// The book's title.
    public var title: String
    /// The session record.
    public var session: SessionRecord
}

extension ViewStore {
    /// The home list as of an instant in a zone ("today" is the reading day of `asOf` there).
    public func homeList(reader: ReaderID, asOf: Timestamp, zone: ZoneID, sortedBy sort: HomeSort = .titleAscending,
                         clock: LocalClock = LocalClock()) throws -> HomeList {
        let today = clock.localDay(of: asOf, in: zone)
        var items: [HomeItem] = []
        // Only the books with an active goal are read (an index kept by the fold), not the
        // reader's whole library.
        for book in try goalBooks(reader: reader) {
            guard let view = try bookView(reader: reader, book: book), view.isOnHomeList, let goal = view.goal else { continue }
            let position = view.position
            let pageCount = view.metadata.pageCount
            let left = pageCount.map { max(0, $0 - position) }
            let daysLeft = today.days(until: goal.targetDate)
            let needed: Int? = left.flatMap { left in daysLeft >= 0 ? (left + daysLeft) / (daysLeft + 1) : nil }
            var projected: LocalDate?
            let read = view.pagesReadThisReadThrough
            if read > 0, let left {
                let elapsed = max(1, goal.startDate.days(until: today) + 1)
                projected = today.adding(days: Int((Double(left) * Double(elapsed) / Double(read)).rounded(.up)))
            }
            items.append(HomeItem(book: view.book, metadata: view.metadata, goal: goal, position: position,
                                  progress: pageCount.map { Double(position) / Double($0) }, pagesLeft: left,
                                  daysLeft: daysLeft, pagesPerDayNeeded: needed, projectedFinish: projected,
                                  lastActivity: view.lastActivity))
        }
        func byTitle(_ a: HomeItem, _ b: HomeItem) -> Bool { (a.metadata.title, a.book) < (b.metadata.title, b.book) }
        switch sort {
        case .titleAscending: items.sort(by: byTitle)
        case .titleDescending: items.sort { byTitle($1, $0) }
        case .recentActivity: items.sort { ($0.lastActivity, $1.book) > ($1.lastActivity, $0.book) }
        case .readerOrder:
            let order = try readerView(reader: reader)?.homeOrder ?? []
            let rank = Dictionary(order.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            items.sort { a, b in
                switch (rank[a.book], rank[b.book]) {
                case let (x?, y?): return x < y
                case (.some, nil): return true
                case (nil, .some): return false
                case (nil, nil): return byTitle(a, b)
                }
            }
        }
        return HomeList(today: today, items: items)
    }

    /// The bookshelf: finished books (each once, whatever the re-reads) or liked books.
    public func bookshelf(reader: ReaderID, showing filter: ShelfFilter) throws -> Bookshelf {
        let views = try bookViews(reader: reader).filter(\.inLibrary)
        let finished = views.filter { !$0.finishes.isEmpty }
        let shown = filter == .finished ? finished : views.filter(\.liked)
        let items = shown.map { view in
            ShelfItem(book: view.book, metadata: view.metadata, finishes: view.finishes,
                      goalMet: view.goalOutcome?.met, goalStatus: view.goalStatus, rating: view.rating, liked: view.liked)
        }.sorted { a, b in
            let ka = filter == .finished ? a.finishes.last!.dayNumber : 0
            let kb = filter == .finished ? b.finishes.last!.dayNumber : 0
            return (ka, a.metadata.title, a.book) > (kb, b.metadata.title, b.book)
        }
        let height = finished.reduce(0.0) { sum, view in
            sum + (view.metadata.thicknessMillimetres ?? Double(view.metadata.pageCount ?? 0) * 0.06)
        }
        return Bookshelf(filter: filter, items: items, stackHeightMillimetres: height)
    }

    /// One book's detail with its per-day bars.
    public func bookDetail(reader: ReaderID, book: BookID) throws -> BookDetail? {
        guard let view = try bookView(reader: reader, book: book) else { return nil }
        let bars = try bookDayTotals(reader: reader, book: book, in: LocalDate(dayNumber: -719_162)...LocalDate(dayNumber: 2_932_896))
        return BookDetail(view: view, dailyBars: bars.map { (day: $0.0, total: $0.1) })
    }

    /// Books by status, distinct finished books, and totals.
    public func summary(reader: ReaderID) throws -> SummaryCounts {
        let views = try bookViews(reader: reader).filter(\.inLibrary)
        let buckets = try bucketTotals(reader: reader)
        return SummaryCounts(
            reading: views.filter { $0.status == .reading }.count,
            finished: views.filter { !$0.finishes.isEmpty }.count,
            wantToRead: views.filter { $0.status == .wantToRead }.count,
            didNotFinish: views.filter { $0.status == .didNotFinish }.count,
            liked: views.filter(\.liked).count,
            totalPages: buckets.pages.reduce(0, +),
            totalSeconds: buckets.seconds.reduce(0, +))
    }

    /// The instant "today" is taken from when the caller names none: the reader's latest moment
    /// in the history (``ReaderView/latestMoment``: the latest `occurredAt` or `recordedAt`, so a
    /// back-dated entry appended last does not pull it back), or `now` when that is sooner (a
    /// history stamped in the future by a wrong clock). `nil` for a reader without one. The caller
    /// reads the clock; the views never do.
    public func defaultAsOf(reader: ReaderID, now: Timestamp) throws -> Timestamp? {
        try readerView(reader: reader)?.latestMoment.map { min($0, now) }
    }

    /// The reader's last event in canonical order (``ReaderView/lastEvent``): the zone "today" is
    /// taken in, and the instant a range ends on, when a caller names neither. Any two replicas
    /// holding the same events give the same answer, whatever order they appended them in.
    /// `nil` for a reader without events.
    public func lastEvent(reader: ReaderID) throws -> LastEvent? {
        try readerView(reader: reader)?.lastEvent
    }

    /// Timers started and never stopped, oldest first.
    public func openSessions(reader: ReaderID) throws -> [OpenSession] {
        try bookViews(reader: reader).filter(\.inLibrary).flatMap { view in
            view.sessions.filter { !$0.isFinished }.map { OpenSession(book: view.book, title: view.metadata.title, session: $0) }
        }.sorted { $0.session.startedAt < $1.session.startedAt }
    }
}
