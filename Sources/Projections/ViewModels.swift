import ReadingEvents

/// One page record of a book as the views see it: where the reader got to, when, and how many
/// pages it credits to its reading day once back-dated entries and corrections are taken into
/// account.
///
/// `Sendable`: plain values.
public struct PageEntry: Hashable, Sendable {
    /// Whether the entry moved forward (a page record, a session's end position) or was an
    /// explicit correction backward.
    public enum Kind: UInt8, Sendable, Hashable { case read = 0, correction = 1 }
    /// The event's ordinal in its book's canonical order (1 = the first event folded into the
    /// book view): orders entries that share an instant, the same way on every replica.
    public var order: UInt64
    /// When the reading happened.
    public var occurredAt: Timestamp
    /// Its reading day (local, day-start hour applied).
    public var day: LocalDate
    /// Its time-of-day bucket.
    public var bucket: TimeOfDay
    /// The read-through it belongs to (1 for the first reading).
    public var readThrough: Int
    /// The position stated by the event.
    public var position: Int
    /// Read or correction.
    public var kind: Kind
    /// The position after later corrections clamp it.
    public var effective: Int
    /// Pages credited to ``day`` after corrections: never negative.
    public var credited: Int
    /// The memberwise initializer, for the store module's record codec.
    package init(order: UInt64, occurredAt: Timestamp, day: LocalDate, bucket: TimeOfDay, readThrough: Int, position: Int, kind: Kind, effective: Int, credited: Int) {
        self.order = order
        self.occurredAt = occurredAt
        self.day = day
        self.bucket = bucket
        self.readThrough = readThrough
        self.position = position
        self.kind = kind
        self.effective = effective
        self.credited = credited
    }
}

/// A timed reading session.
///
/// `Sendable`: plain values.
public struct SessionRecord: Hashable, Sendable {
    /// The session.
    public var session: SessionID
    /// When the timer started.
    public var startedAt: Timestamp
    /// The zone it started in.
    public var timeZone: ZoneID
    /// Closed intervals of reading (pauses excluded), each [start, end).
    public var intervals: [ClosedInterval]
    /// When the running interval began; `nil` when paused or ended.
    public var runningSince: Timestamp?
    /// The zone of the event that began the running interval (the start, or a resume in another
    /// city); `nil` exactly when ``runningSince`` is.
    public var runningZone: ZoneID?
    /// Whether the timer ended (finished); open sessions are started and never stopped.
    public var isFinished: Bool
    /// The duration the host reported when it finished the session.
    public var reportedSeconds: Int?
    /// The end position the reader gave.
    public var endPosition: Int?
    /// The memberwise initializer, for the store module's record codec.
    package init(session: SessionID, startedAt: Timestamp, timeZone: ZoneID, intervals: [ClosedInterval], runningSince: Timestamp? = nil, runningZone: ZoneID? = nil, isFinished: Bool, reportedSeconds: Int? = nil, endPosition: Int? = nil) {
        self.session = session
        self.startedAt = startedAt
        self.timeZone = timeZone
        self.intervals = intervals
        self.runningSince = runningSince
        self.runningZone = runningZone
        self.isFinished = isFinished
        self.reportedSeconds = reportedSeconds
        self.endPosition = endPosition
    }

    /// A reading interval.
    public struct ClosedInterval: Hashable, Sendable {
        /// Start, inclusive.
        public var start: Timestamp
        /// End, exclusive.
        public var end: Timestamp
        /// The zone of the event that began it (the start, or a resume in another city): its
        /// minutes fall on days and in time-of-day buckets of this zone.
        public var timeZone: ZoneID
        /// The memberwise initializer, for the store module's record codec.
        package init(start: Timestamp, end: Timestamp, timeZone: ZoneID) {
            self.start = start
            self.end = end
            self.timeZone = timeZone
        }
    }

    /// Seconds of reading measured from the exact instants of the intervals, the total rounded
    /// half up (a 0.2 s session measures 0 s).
    public var measuredSeconds: Int {
        var rounding = SecondsRounding()
        return rounding.add(intervals.reduce(0) { $0 + ($1.end.microseconds - $1.start.microseconds) })
    }
}

/// A collected sentence or a memo, as the book detail shows it.
///
/// `Sendable`: plain values.
public struct TextNote: Hashable, Sendable {
    /// The sentence's or memo's identifier (as a UUID).
    public var id: UUIDBox
    /// The text, latest edit.
    public var text: String
    /// The page, if given.
    public var page: Int?
    /// When it was first written.
    public var createdAt: Timestamp
    /// When it was last edited.
    public var editedAt: Timestamp
    /// The memberwise initializer, for the store module's record codec.
    package init(id: UUIDBox, text: String, page: Int? = nil, createdAt: Timestamp, editedAt: Timestamp) {
        self.id = id
        self.text = text
        self.page = page
        self.createdAt = createdAt
        self.editedAt = editedAt
    }
}

/// A UUID of any identifier kind, comparable by bytes.
///
/// `Sendable`: a value type.
public struct UUIDBox: Hashable, Sendable, Comparable {
    /// The 16 bytes.
    public var bytes: [UInt8]
    /// Wraps an identifier.
    public init<T>(_ id: TaggedID<T>) { bytes = id.bytes }
    /// Wraps raw bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }
    /// Orders by bytes.
    public static func < (l: UUIDBox, r: UUIDBox) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }
}

/// Whether a goal was met: finished on or before its target date.
///
/// `Sendable`: plain values.
public struct GoalOutcome: Hashable, Sendable {
    /// The goal that ended (restored if the finish is undone).
    public var goal: BookState.Goal
    /// The goal's target date.
    public var targetDate: LocalDate { goal.targetDate }
    /// The day the book was finished.
    public var finishedOn: LocalDate
    /// The memberwise initializer, for the store module's record codec.
    package init(goal: BookState.Goal, finishedOn: LocalDate) {
        self.goal = goal
        self.finishedOn = finishedOn
    }
    /// `finishedOn <= targetDate`.
    public var met: Bool { finishedOn <= targetDate }
}

/// What became of a book's latest goal, as the bookshelf and the book detail say it.
///
/// `Sendable`: a plain enum.
public enum GoalStatus: String, Sendable, Hashable, CaseIterable {
    /// Running: the book is on the home list.
    case active
    /// Finished on or before the target date.
    case met
    /// Finished after the target date.
    case missed
    /// The book was marked did-not-finish while the goal ran: neither met nor missed. It becomes
    /// active again if the reader resumes the book.
    case abandoned
}

/// Everything the views know about one book of one reader. It is the unit the store persists
/// per book; its size grows with that book's own history, never with the reader's.
///
/// A value type with copy-on-write storage: its fields live in one reference, so handing a view
/// to a store or taking it back moves one pointer, not the whole record (the fold takes and puts
/// a book view for every event: moved by value, that was about six copies of a few hundred bytes,
/// issue 37). A change to a view whose storage is shared copies the storage first.
///
/// `Sendable`: a value type; its storage is never changed while shared (see ``Storage``).
public struct BookView: Hashable, Sendable {
    /// The stored fields, compared and hashed as a whole.
    ///
    /// `Sendable`: plain values.
    struct Fields: Hashable, Sendable {
        var reader: ReaderID
        var book: BookID
        var metadata: BookMetadata
        var status: ReadingStatus
        var inLibrary: Bool
        var addedAt: Timestamp
        var lastActivity: Timestamp
        var goal: BookState.Goal?
        var goalOutcome: GoalOutcome?
        var readThrough: Int
        var entries: [PageEntry]
        var finishes: [LocalDate]
        var isFinished: Bool
        var sentences: [TextNote]
        var memos: [TextNote]
        var sessions: [SessionRecord]
        var rating: Rating?
        var liked: Bool
        var likedAt: Timestamp?
        var lastOrigin: EventOrigin? = nil
        var foldedEvents: UInt64 = 0
        var decision: BookState = BookState()
    }

    /// The one reference that holds the fields, in memory of its own.
    ///
    /// The fields are reached through a pointer, not stored in the class: a class's stored
    /// property is checked for exclusive access at run time on every access (about 75
    /// instructions each, ten for one event's copy of the decision state), a pointer's pointee
    /// is not. Exclusivity holds by construction instead: the pointee is written only through
    /// ``BookView``'s accessors, after ``makeUnique()``, by the one view that holds the storage.
    ///
    /// `@unchecked Sendable`: a storage shared by two views (or threads) is never written (a view
    /// copies it before a change unless it holds the only reference).
    final class Storage: @unchecked Sendable {
        let fields: UnsafeMutablePointer<Fields>
        init(_ fields: Fields) {
            self.fields = .allocate(capacity: 1)
            self.fields.initialize(to: fields)
        }
        deinit {
            fields.deinitialize(count: 1)
            fields.deallocate()
        }
    }

    private var storage: Storage

    /// Copies the storage unless this view holds the only reference to it.
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields.pointee) }
    }

    /// Equal when every field is equal (views sharing one storage are equal at once).
    public static func == (lhs: BookView, rhs: BookView) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields.pointee == rhs.storage.fields.pointee
    }

    /// Hashes every field.
    public func hash(into hasher: inout Hasher) { storage.fields.pointee.hash(into: &hasher) }

    /// The reader.
    public var reader: ReaderID {
        get { storage.fields.pointee.reader }
        _modify { makeUnique(); yield &storage.fields.pointee.reader }
    }
    /// The book.
    public var book: BookID {
        get { storage.fields.pointee.book }
        _modify { makeUnique(); yield &storage.fields.pointee.book }
    }
    /// The latest metadata.
    public var metadata: BookMetadata {
        get { storage.fields.pointee.metadata }
        _modify { makeUnique(); yield &storage.fields.pointee.metadata }
    }
    /// The library status.
    public var status: ReadingStatus {
        get { storage.fields.pointee.status }
        _modify { makeUnique(); yield &storage.fields.pointee.status }
    }
    /// In the library now (false once removed).
    public var inLibrary: Bool {
        get { storage.fields.pointee.inLibrary }
        _modify { makeUnique(); yield &storage.fields.pointee.inLibrary }
    }
    /// When it was added.
    public var addedAt: Timestamp {
        get { storage.fields.pointee.addedAt }
        _modify { makeUnique(); yield &storage.fields.pointee.addedAt }
    }
    /// The latest activity on the book (any event), for "recent activity" sorting.
    public var lastActivity: Timestamp {
        get { storage.fields.pointee.lastActivity }
        _modify { makeUnique(); yield &storage.fields.pointee.lastActivity }
    }
    /// The active goal.
    public var goal: BookState.Goal? {
        get { storage.fields.pointee.goal }
        _modify { makeUnique(); yield &storage.fields.pointee.goal }
    }
    /// The outcome of the last goal that ended in a finish.
    public var goalOutcome: GoalOutcome? {
        get { storage.fields.pointee.goalOutcome }
        _modify { makeUnique(); yield &storage.fields.pointee.goalOutcome }
    }
    /// The current read-through (1 = first reading).
    public var readThrough: Int {
        get { storage.fields.pointee.readThrough }
        _modify { makeUnique(); yield &storage.fields.pointee.readThrough }
    }
    /// Page entries of every read-through, in (instant, log position) order per read-through.
    public var entries: [PageEntry] {
        get { storage.fields.pointee.entries }
        _modify { makeUnique(); yield &storage.fields.pointee.entries }
    }
    /// Finish days, one per finished read-through, in order.
    public var finishes: [LocalDate] {
        get { storage.fields.pointee.finishes }
        _modify { makeUnique(); yield &storage.fields.pointee.finishes }
    }
    /// Whether the current read-through is finished.
    public var isFinished: Bool {
        get { storage.fields.pointee.isFinished }
        _modify { makeUnique(); yield &storage.fields.pointee.isFinished }
    }
    /// Collected sentences, in order of collection.
    public var sentences: [TextNote] {
        get { storage.fields.pointee.sentences }
        _modify { makeUnique(); yield &storage.fields.pointee.sentences }
    }
    /// Memos, in order of writing.
    public var memos: [TextNote] {
        get { storage.fields.pointee.memos }
        _modify { makeUnique(); yield &storage.fields.pointee.memos }
    }
    /// Timed sessions, in order of start; open ones have `isFinished == false`.
    public var sessions: [SessionRecord] {
        get { storage.fields.pointee.sessions }
        _modify { makeUnique(); yield &storage.fields.pointee.sessions }
    }
    /// The rating.
    public var rating: Rating? {
        get { storage.fields.pointee.rating }
        _modify { makeUnique(); yield &storage.fields.pointee.rating }
    }
    /// Whether the reader likes it.
    public var liked: Bool {
        get { storage.fields.pointee.liked }
        _modify { makeUnique(); yield &storage.fields.pointee.liked }
    }
    /// When it was last liked (for ordering the liked shelf).
    public var likedAt: Timestamp? {
        get { storage.fields.pointee.likedAt }
        _modify { makeUnique(); yield &storage.fields.pointee.likedAt }
    }
    /// The origin of the latest event folded into this view, in canonical order: an event that
    /// sorts before it refolds the book (see ``ReadingProjector/refold(reader:book:events:in:)``).
    /// `nil` when the folded events carried no origin (a pure fold of unstored envelopes).
    public var lastOrigin: EventOrigin? {
        get { storage.fields.pointee.lastOrigin }
        _modify { makeUnique(); yield &storage.fields.pointee.lastOrigin }
    }
    /// How many of the book's events this view has folded (orphans before the book was added are
    /// not counted); the last one's ordinal is the ``PageEntry/order`` of its page entry.
    public var foldedEvents: UInt64 {
        get { storage.fields.pointee.foldedEvents }
        _modify { makeUnique(); yield &storage.fields.pointee.foldedEvents }
    }
    /// The decision state of the book: what a command on it is decided on, folded by
    /// ``BookState/apply(_:occurredAt:)`` from the same events as this view. It is the one copy of
    /// the rules for the book's library status, goal, finish, read-through, rating and like: the
    /// view's ``metadata``, ``status``, ``inLibrary``, ``goal``, ``readThrough``, ``isFinished``,
    /// ``rating`` and ``liked`` are copied from it after every event. The store persists it as a
    /// record of its own beside the view.
    public var decision: BookState {
        get { storage.fields.pointee.decision }
        _modify { makeUnique(); yield &storage.fields.pointee.decision }
    }
    /// The memberwise initializer, for the store module's record codec.
    package init(reader: ReaderID, book: BookID, metadata: BookMetadata, status: ReadingStatus, inLibrary: Bool, addedAt: Timestamp, lastActivity: Timestamp, goal: BookState.Goal? = nil, goalOutcome: GoalOutcome? = nil, readThrough: Int, entries: [PageEntry], finishes: [LocalDate], isFinished: Bool, sentences: [TextNote], memos: [TextNote], sessions: [SessionRecord], rating: Rating? = nil, liked: Bool, likedAt: Timestamp? = nil, lastOrigin: EventOrigin? = nil, foldedEvents: UInt64 = 0, decision: BookState = BookState()) {
        storage = Storage(Fields(
            reader: reader,
            book: book,
            metadata: metadata,
            status: status,
            inLibrary: inLibrary,
            addedAt: addedAt,
            lastActivity: lastActivity,
            goal: goal,
            goalOutcome: goalOutcome,
            readThrough: readThrough,
            entries: entries,
            finishes: finishes,
            isFinished: isFinished,
            sentences: sentences,
            memos: memos,
            sessions: sessions,
            rating: rating,
            liked: liked,
            likedAt: likedAt,
            lastOrigin: lastOrigin,
            foldedEvents: foldedEvents,
            decision: decision
        ))
    }

    /// The position reached in the current read-through: its highest effective position (see
    /// ``PageTimeline/position``: a lower mark merged from another device after a higher one
    /// does not move the book back).
    public var position: Int {
        entries.lazy.filter { $0.readThrough == self.readThrough }.map(\.effective).max() ?? 0
    }

    /// Whether the home list shows the book: in the library, not finished, not abandoned (marked
    /// did-not-finish), with a goal. An abandoned book keeps its goal and comes back to the list
    /// when the reader resumes it (status reading again, or a page record).
    public var isOnHomeList: Bool {
        // Pattern matches, not `!=`: the fold asks twice per event, and `status != .didNotFinish`
        // ran the generic `RawRepresentable` comparison, `goal != nil` copied both optionals.
        guard inLibrary, !isFinished, case .some = goal else { return false }
        if case .didNotFinish = status { return false }
        return true
    }

    /// What became of the book's latest goal: active, abandoned (the book was marked
    /// did-not-finish while the goal ran: neither met nor missed), or met or missed by the last
    /// finish; `nil` when the book never had a goal (or its goal was deleted unfinished).
    public var goalStatus: GoalStatus? {
        if goal != nil { return status == .didNotFinish ? .abandoned : .active }
        return goalOutcome.map { $0.met ? .met : .missed }
    }

    /// Pages credited in the current read-through.
    public var pagesReadThisReadThrough: Int {
        entries.reduce(0) { $0 + ($1.readThrough == readThrough ? $1.credited : 0) }
    }
}

/// A calendar month.
///
/// `Sendable`: two integers.
public struct YearMonth: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The year.
    public var year: Int
    /// The month, 1 ... 12.
    public var month: Int
    /// A month.
    public init(year: Int, month: Int) { self.year = year; self.month = month }
    /// Hashes the month as one word (year and month packed), as ``LocalDate`` does.
    public func hash(into hasher: inout Hasher) { hasher.combine(year << 4 | month) }
    /// The month of a date.
    public init(_ date: LocalDate) { year = date.year; month = date.month }
    /// `YYYY-MM`.
    public var description: String { String(LocalDate(dayNumber: (try? LocalDate(year: year, month: month, day: 1))?.dayNumber ?? 0).description.prefix(7)) }
    /// Orders by time.
    public static func < (l: YearMonth, r: YearMonth) -> Bool { (l.year, l.month) < (r.year, r.month) }
    /// The month after.
    public var next: YearMonth { month == 12 ? YearMonth(year: year + 1, month: 1) : YearMonth(year: year, month: month + 1) }
    /// The month before.
    public var previous: YearMonth { month == 1 ? YearMonth(year: year - 1, month: 12) : YearMonth(year: year, month: month - 1) }
}

/// What the views keep about a reader besides books and totals.
///
/// `Sendable`: a value type.
public struct ReaderView: Hashable, Sendable {
    /// The nickname, once set.
    public var nickname: String?
    /// The profile image file name.
    public var imageFileName: String?
    /// The app theme.
    public var theme: Theme?
    /// The reader's own home-list order.
    public var homeOrder: [BookID] = []
    /// Events of types this build does not know, skipped by the views.
    public var unknownEvents: Int = 0
    /// All events folded for this reader.
    public var eventCount: Int = 0
    /// The reader's latest moment in the history: the latest `occurredAt` or `recordedAt` of any
    /// of their events (a back-dated entry counts by when it was recorded); events of types this
    /// build does not know are only counted and do not move it. `nil` before any.
    public var latestMoment: Timestamp?
    /// The reader's last event in canonical order (any type, unknown ones included): the zone and
    /// instant a caller takes when it names none (``ViewStore/lastEvent(reader:)``). A register
    /// like ``homeOrder``: the same on every replica that holds the same events, whatever order
    /// they were appended in. `nil` before any.
    public var lastEvent: LastEvent?
    /// The origin of the event that set ``homeOrder`` (last writer wins, by canonical order).
    public var homeOrderOrigin: EventOrigin?
    /// The origin of the event that set the profile (last writer wins, by canonical order).
    public var profileOrigin: EventOrigin?
    /// The reader's longest streak run (the earliest of the longest), kept by the fold as runs
    /// change, so the streaks query need not walk every run. `nil` without runs, and in a record
    /// of an earlier build (the query then walks the runs).
    public var longestRun: StreakRun?
    /// An empty reader.
    public init() {}
}

/// When and where a reader's last event in canonical order happened, and its origin.
///
/// `Sendable`: plain values.
public struct LastEvent: Hashable, Sendable {
    /// When it happened.
    public var occurredAt: Timestamp
    /// The zone it happened in.
    public var timeZone: ZoneID
    /// Its origin; `nil` for an event without one (they sort first, in log order).
    public var origin: EventOrigin?
    /// A last event.
    public init(occurredAt: Timestamp, timeZone: ZoneID, origin: EventOrigin?) {
        self.occurredAt = occurredAt; self.timeZone = timeZone; self.origin = origin
    }
}

