import Foundation

/// What the decide step knows about one book of one reader: the fold of that book's stream.
///
/// This is the one copy of the rules for the facts a command is decided on (library status,
/// goal, finish, read-through, page marks, open sessions, sentences, memos, rating, like): the
/// store's book view embeds it (`BookView.decision` in Projections), folds it with
/// ``apply(_:occurredAt:)`` and copies its status, goal and finish from it, and the store persists
/// it as a small record beside the view, so a command reads that record instead of its stream.
/// Events arriving from other replicas are folded in canonical order, and the rules resolve their
/// conflicts (a second finish of one read-through counts once, also after the book was removed
/// and added again; an undone finish restores the goal it ended; a session closed before its start
/// stays closed).
///
/// `apply(_:)` is total: it never fails, so a state can always be rebuilt from stored events,
/// including events that an older build would have rejected. `Sendable`: a value type.
public struct BookState: Hashable, Sendable {
    /// A goal to finish the book by a date.
    public struct Goal: Hashable, Sendable {
        /// The first day of the goal.
        public var startDate: LocalDate
        /// The day to finish by.
        public var targetDate: LocalDate
        /// The reader's theme for it.
        public var theme: Theme?
        /// Creates a goal.
        public init(startDate: LocalDate, targetDate: LocalDate, theme: Theme?) {
            self.startDate = startDate; self.targetDate = targetDate; self.theme = theme
        }
    }

    /// Whether a timed session is running or paused.
    public enum SessionPhase: Hashable, Sendable {
        /// The timer runs.
        case running
        /// The timer is paused.
        case paused
    }

    /// The book, once added.
    public private(set) var book: BookID?
    /// Whether the book is in the library now (added and not removed since).
    public private(set) var isInLibrary = false
    /// Whether the book was removed (and not added again).
    public private(set) var isRemoved = false
    /// The latest metadata.
    public private(set) var metadata: BookMetadata?
    /// The library status.
    public private(set) var status: ReadingStatus = .wantToRead
    /// The active goal, if any.
    public private(set) var goal: Goal?
    /// The goal that the latest finish ended, restored when the finish is undone.
    public private(set) var goalEndedByFinish: Goal?
    /// The page marks of the current read-through, in the order they happened.
    public private(set) var timeline = PageTimeline()
    /// The page reached in the current read-through.
    public var position: Int { timeline.position }
    /// How many events were folded (the sequence of the latest page mark).
    public private(set) var eventCount: UInt64 = 0
    /// The current read-through: 1 for the first reading, 2 for the first re-read, ...
    public private(set) var readThrough = 1
    /// Whether the current read-through is finished.
    public private(set) var isFinished = false
    /// Sentences collected and not removed.
    public private(set) var sentences: Set<SentenceID> = []
    /// Memos written and not removed.
    public private(set) var memos: Set<MemoID> = []
    /// Every sentence, memo and session ID ever used on this book (IDs are never reused).
    public private(set) var usedIDs: Set<UUIDKey> = []
    /// Timed sessions started and not yet finished or discarded. A session closed before its start
    /// was folded (its ID is in ``usedIDs``) is never opened.
    public private(set) var openSessions: [SessionID: SessionPhase] = [:]
    /// The current rating.
    public private(set) var rating: Rating?
    /// Whether the reader likes the book.
    public private(set) var isLiked = false

    /// A fresh state: the book was never added.
    public init() {}

    /// A state restored field by field (a persisted decision record); every fold goes through
    /// ``apply(_:occurredAt:)`` instead.
    public init(restoring book: BookID?, isInLibrary: Bool, isRemoved: Bool, metadata: BookMetadata?, status: ReadingStatus,
                goal: Goal?, goalEndedByFinish: Goal?, timeline: PageTimeline, eventCount: UInt64, readThrough: Int,
                isFinished: Bool, sentences: Set<SentenceID>, memos: Set<MemoID>, usedIDs: Set<UUIDKey>,
                openSessions: [SessionID: SessionPhase], rating: Rating?, isLiked: Bool) {
        self.book = book; self.isInLibrary = isInLibrary; self.isRemoved = isRemoved; self.metadata = metadata
        self.status = status; self.goal = goal; self.goalEndedByFinish = goalEndedByFinish; self.timeline = timeline
        self.eventCount = eventCount; self.readThrough = readThrough; self.isFinished = isFinished
        self.sentences = sentences; self.memos = memos; self.usedIDs = usedIDs; self.openSessions = openSessions
        self.rating = rating; self.isLiked = isLiked
    }

    /// The state after `envelopes`, in log order.
    public init(envelopes: some Sequence<EventEnvelope>) {
        self.init()
        for envelope in envelopes { apply(envelope.event, occurredAt: envelope.occurredAt) }
    }

    /// A UUID used as a set key regardless of which kind of identifier it came from.
    ///
    /// `Sendable`: a UUID.
    public struct UUIDKey: Hashable, Sendable, Comparable {
        /// The UUID.
        public let uuid: UUID
        /// The key of an identifier.
        public init<T>(_ id: TaggedID<T>) { uuid = id.uuid }
        /// The key of a UUID.
        public init(uuid: UUID) { self.uuid = uuid }
        /// Orders by the UUID's bytes.
        public static func < (l: UUIDKey, r: UUIDKey) -> Bool { TaggedID<SessionTag>(l.uuid) < TaggedID<SessionTag>(r.uuid) }
    }

    /// Folds one event of this book's stream, which happened at `occurredAt`, into the state.
    public mutating func apply(_ event: ReadingEvent, occurredAt: Timestamp) {
        eventCount += 1
        let sequence = eventCount
        switch event {
        case .bookAdded(let e):
            // Adding a book again (after a remove, or from another device) continues its current
            // read-through: a finished one stays finished, so a later finish of it without a new
            // read-through is a second finish of one read-through and counts once.
            let continuesFinished = book != nil && isFinished
            book = e.book; isInLibrary = true; isRemoved = false; metadata = e.metadata
            if continuesFinished { status = .finished } else { status = e.status; isFinished = e.status == .finished }
        case .metadataCorrected(let e):
            metadata = e.metadata
        case .bookRemoved:
            isInLibrary = false; isRemoved = true; goal = nil; openSessions = [:]
        case .statusChanged(let e):
            status = e.status
        case .goalSet(let e):
            goal = Goal(startDate: e.startDate, targetDate: e.targetDate, theme: e.theme)
        case .goalChanged(let e):
            goal?.targetDate = e.targetDate; goal?.theme = e.theme
        case .goalDeleted:
            goal = nil
        case .pagesRead(let e):
            addPageMark(e.position, occurredAt: occurredAt, sequence: sequence)
        case .progressCorrected(let e):
            timeline.insert(.init(occurredAt: occurredAt, sequence: sequence, position: e.position, isCorrection: true))
        case .readThroughStarted(let e):
            readThrough = e.readThrough; timeline = PageTimeline(); isFinished = false; status = .reading
        case .sessionStarted(let e):
            // A session finished or discarded already (its closing event sorts before its start:
            // an import, or a replica that recorded the start after seeing the finish) stays
            // closed; a repeated start leaves an open session as it is.
            if usedIDs.insert(UUIDKey(e.session)).inserted { openSessions[e.session] = .running }
        case .sessionPaused(let e):
            if openSessions[e.session] != nil { openSessions[e.session] = .paused }
        case .sessionResumed(let e):
            if openSessions[e.session] != nil { openSessions[e.session] = .running }
        case .sessionFinished(let e):
            openSessions[e.session] = nil; usedIDs.insert(UUIDKey(e.session))
            if let end = e.endPosition { addPageMark(end, occurredAt: occurredAt, sequence: sequence) }
        case .sessionDiscarded(let e):
            openSessions[e.session] = nil; usedIDs.insert(UUIDKey(e.session))
        case .bookFinished:
            // Two devices finishing the same read-through: the first finish (in canonical order)
            // counts, once.
            guard !isFinished else { break }
            isFinished = true; status = .finished; goalEndedByFinish = goal; goal = nil
        case .finishUndone:
            // An undo restores the goal its finish ended; a second undo (from another device)
            // has none to restore and leaves the goal as it is.
            isFinished = false; status = .reading
            if let ended = goalEndedByFinish { goal = ended }
            goalEndedByFinish = nil
        case .sentenceCollected(let e):
            sentences.insert(e.sentence); usedIDs.insert(UUIDKey(e.sentence))
        case .sentenceEdited:
            break
        case .sentenceRemoved(let e):
            sentences.remove(e.sentence)
        case .memoWritten(let e):
            memos.insert(e.memo); usedIDs.insert(UUIDKey(e.memo))
        case .memoEdited:
            break
        case .memoRemoved(let e):
            memos.remove(e.memo)
        case .ratingSet(let e):
            rating = e.rating
        case .ratingCleared:
            rating = nil
        case .bookLiked:
            isLiked = true
        case .bookUnliked:
            isLiked = false
        case .homeOrderSet, .profileUpdated, .challengeSet, .unknown:
            break
        }
    }

    /// A page mark: a page record, or a session's end position (a page mark like any other). It
    /// resumes a book that is not finished (want-to-read, or did-not-finish: back on the home list
    /// with its goal); a progress correction is not a page mark and resumes nothing.
    private mutating func addPageMark(_ position: Int, occurredAt: Timestamp, sequence: UInt64) {
        timeline.insert(.init(occurredAt: occurredAt, sequence: sequence, position: position, isCorrection: false))
        if status != .finished { status = .reading }
    }
}

/// What the decide step knows about a reader's own stream (profile, home order).
///
/// `Sendable`: a value type.
public struct ReaderState: Hashable, Sendable {
    /// The reader's home-list order.
    public private(set) var homeOrder: [BookID] = []
    /// The nickname, once set.
    public private(set) var nickname: String?
    /// The yearly challenges set, by year.
    public private(set) var challenges: [Int: ChallengeSet] = [:]

    /// A fresh state.
    public init() {}

    /// A state restored from what the views keep (the store decides reader commands on its
    /// persisted reader and year views, which fold the same registers in canonical order).
    public init(homeOrder: [BookID], nickname: String?, challenges: [Int: ChallengeSet]) {
        self.homeOrder = homeOrder; self.nickname = nickname; self.challenges = challenges
    }

    /// Folds one event of the reader's stream into the state.
    public mutating func apply(_ event: ReadingEvent) {
        switch event {
        case .homeOrderSet(let e): homeOrder = e.books
        case .profileUpdated(let e): nickname = e.nickname
        case .challengeSet(let e): challenges[e.year] = e
        case .bookAdded, .metadataCorrected, .bookRemoved, .statusChanged, .goalSet, .goalChanged, .goalDeleted,
             .pagesRead, .progressCorrected, .readThroughStarted, .sessionStarted, .sessionPaused, .sessionResumed,
             .sessionFinished, .sessionDiscarded, .bookFinished, .finishUndone, .sentenceCollected, .sentenceEdited,
             .sentenceRemoved, .memoWritten, .memoEdited, .memoRemoved, .ratingSet, .ratingCleared, .bookLiked,
             .bookUnliked, .unknown:
            break
        }
    }
}
