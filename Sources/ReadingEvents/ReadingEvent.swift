import Foundation

/// Every fact about reading that this package records: one case per event type.
///
/// A `switch` over this enum has no `default:` anywhere in the package, so adding a case is a
/// compile error in every view until it is handled. `Sendable`: every payload is.
public enum ReadingEvent: Hashable, Sendable {
    /// ``BookAdded``
    case bookAdded(BookAdded)
    /// ``MetadataCorrected``
    case metadataCorrected(MetadataCorrected)
    /// ``BookRemoved``
    case bookRemoved(BookRemoved)
    /// ``ReadingStatusChanged``
    case statusChanged(ReadingStatusChanged)
    /// ``GoalSet``
    case goalSet(GoalSet)
    /// ``GoalChanged``
    case goalChanged(GoalChanged)
    /// ``GoalDeleted``
    case goalDeleted(GoalDeleted)
    /// ``PagesRead``
    case pagesRead(PagesRead)
    /// ``ProgressCorrected``
    case progressCorrected(ProgressCorrected)
    /// ``ReadThroughStarted``
    case readThroughStarted(ReadThroughStarted)
    /// ``SessionStarted``
    case sessionStarted(SessionStarted)
    /// ``SessionPaused``
    case sessionPaused(SessionPaused)
    /// ``SessionResumed``
    case sessionResumed(SessionResumed)
    /// ``SessionFinished``
    case sessionFinished(SessionFinished)
    /// ``SessionDiscarded``
    case sessionDiscarded(SessionDiscarded)
    /// ``BookFinished``
    case bookFinished(BookFinished)
    /// ``FinishUndone``
    case finishUndone(FinishUndone)
    /// ``SentenceCollected``
    case sentenceCollected(SentenceCollected)
    /// ``SentenceEdited``
    case sentenceEdited(SentenceEdited)
    /// ``SentenceRemoved``
    case sentenceRemoved(SentenceRemoved)
    /// ``MemoWritten``
    case memoWritten(MemoWritten)
    /// ``MemoEdited``
    case memoEdited(MemoEdited)
    /// ``MemoRemoved``
    case memoRemoved(MemoRemoved)
    /// ``RatingSet``
    case ratingSet(RatingSet)
    /// ``RatingCleared``
    case ratingCleared(RatingCleared)
    /// ``BookLiked``
    case bookLiked(BookLiked)
    /// ``BookUnliked``
    case bookUnliked(BookUnliked)
    /// ``HomeOrderSet``
    case homeOrderSet(HomeOrderSet)
    /// ``ProfileUpdated``
    case profileUpdated(ProfileUpdated)
    /// ``ChallengeSet``
    case challengeSet(ChallengeSet)
    /// An event of a type this build does not know; see ``UnknownEvent``.
    case unknown(UnknownEvent)

    /// The stable type tag and current schema version of this event ("PagesRead", 1); an unknown
    /// event's own tag and version.
    public var type: EventType {
        switch identity {
        case .known(let kind): kind.type
        case .unknown(let unknown): EventType(tag: unknown.type, schemaVersion: unknown.schemaVersion)
        }
    }

    /// The type of this event as a case of ``EventKind``; `nil` for an unknown event.
    public var kind: EventKind? {
        switch identity {
        case .known(let kind): kind
        case .unknown: nil
        }
    }

    /// A known event's kind, or the unknown event: the one `switch` from an event to its type.
    private enum Identity {
        case known(EventKind)
        case unknown(UnknownEvent)
    }

    private var identity: Identity {
        switch self {
        case .bookAdded: .known(.bookAdded)
        case .metadataCorrected: .known(.metadataCorrected)
        case .bookRemoved: .known(.bookRemoved)
        case .statusChanged: .known(.statusChanged)
        case .goalSet: .known(.goalSet)
        case .goalChanged: .known(.goalChanged)
        case .goalDeleted: .known(.goalDeleted)
        case .pagesRead: .known(.pagesRead)
        case .progressCorrected: .known(.progressCorrected)
        case .readThroughStarted: .known(.readThroughStarted)
        case .sessionStarted: .known(.sessionStarted)
        case .sessionPaused: .known(.sessionPaused)
        case .sessionResumed: .known(.sessionResumed)
        case .sessionFinished: .known(.sessionFinished)
        case .sessionDiscarded: .known(.sessionDiscarded)
        case .bookFinished: .known(.bookFinished)
        case .finishUndone: .known(.finishUndone)
        case .sentenceCollected: .known(.sentenceCollected)
        case .sentenceEdited: .known(.sentenceEdited)
        case .sentenceRemoved: .known(.sentenceRemoved)
        case .memoWritten: .known(.memoWritten)
        case .memoEdited: .known(.memoEdited)
        case .memoRemoved: .known(.memoRemoved)
        case .ratingSet: .known(.ratingSet)
        case .ratingCleared: .known(.ratingCleared)
        case .bookLiked: .known(.bookLiked)
        case .bookUnliked: .known(.bookUnliked)
        case .homeOrderSet: .known(.homeOrderSet)
        case .profileUpdated: .known(.profileUpdated)
        case .challengeSet: .known(.challengeSet)
        case .unknown(let unknown): .unknown(unknown)
        }
    }

    /// The book this event is about; `nil` for reader-level events (home order, profile, challenge) and
    /// unknown events.
    public var book: BookID? {
        switch self {
        case .bookAdded(let e): e.book
        case .metadataCorrected(let e): e.book
        case .bookRemoved(let e): e.book
        case .statusChanged(let e): e.book
        case .goalSet(let e): e.book
        case .goalChanged(let e): e.book
        case .goalDeleted(let e): e.book
        case .pagesRead(let e): e.book
        case .progressCorrected(let e): e.book
        case .readThroughStarted(let e): e.book
        case .sessionStarted(let e): e.book
        case .sessionPaused(let e): e.book
        case .sessionResumed(let e): e.book
        case .sessionFinished(let e): e.book
        case .sessionDiscarded(let e): e.book
        case .bookFinished(let e): e.book
        case .finishUndone(let e): e.book
        case .sentenceCollected(let e): e.book
        case .sentenceEdited(let e): e.book
        case .sentenceRemoved(let e): e.book
        case .memoWritten(let e): e.book
        case .memoEdited(let e): e.book
        case .memoRemoved(let e): e.book
        case .ratingSet(let e): e.book
        case .ratingCleared(let e): e.book
        case .bookLiked(let e): e.book
        case .bookUnliked(let e): e.book
        case .homeOrderSet, .profileUpdated, .challengeSet, .unknown: nil
        }
    }

    /// The stream this event belongs to for a given reader: the reader's book, or the reader.
    public func stream(for reader: ReaderID) -> StreamID {
        if let book { return .book(reader: reader, book: book) }
        return .reader(reader)
    }
}

/// A stable event type tag with its schema version ("PagesRead", v1).
///
/// `Sendable`: a string and an integer.
public struct EventType: Hashable, Sendable, CustomStringConvertible {
    /// The tag, stable across versions ("PagesRead").
    public let tag: String
    /// The schema version of the payload.
    public let schemaVersion: Int

    /// Creates a type tag.
    public init(tag: String, schemaVersion: Int) { self.tag = tag; self.schemaVersion = schemaVersion }

    /// `"PagesRead@1"`.
    public var description: String { "\(tag)@\(schemaVersion)" }

    /// ``BookAdded`` v1.
    public static let bookAdded = EventKind.bookAdded.type
    /// ``MetadataCorrected`` v1.
    public static let metadataCorrected = EventKind.metadataCorrected.type
    /// ``BookRemoved`` v1.
    public static let bookRemoved = EventKind.bookRemoved.type
    /// ``ReadingStatusChanged`` v1.
    public static let statusChanged = EventKind.statusChanged.type
    /// ``GoalSet`` v1.
    public static let goalSet = EventKind.goalSet.type
    /// ``GoalChanged`` v1.
    public static let goalChanged = EventKind.goalChanged.type
    /// ``GoalDeleted`` v1.
    public static let goalDeleted = EventKind.goalDeleted.type
    /// ``PagesRead`` v1.
    public static let pagesRead = EventKind.pagesRead.type
    /// ``ProgressCorrected`` v1.
    public static let progressCorrected = EventKind.progressCorrected.type
    /// ``ReadThroughStarted`` v1.
    public static let readThroughStarted = EventKind.readThroughStarted.type
    /// ``SessionStarted`` v1.
    public static let sessionStarted = EventKind.sessionStarted.type
    /// ``SessionPaused`` v1.
    public static let sessionPaused = EventKind.sessionPaused.type
    /// ``SessionResumed`` v1.
    public static let sessionResumed = EventKind.sessionResumed.type
    /// ``SessionFinished`` v1.
    public static let sessionFinished = EventKind.sessionFinished.type
    /// ``SessionDiscarded`` v1.
    public static let sessionDiscarded = EventKind.sessionDiscarded.type
    /// ``BookFinished`` v1.
    public static let bookFinished = EventKind.bookFinished.type
    /// ``FinishUndone`` v1.
    public static let finishUndone = EventKind.finishUndone.type
    /// ``SentenceCollected`` v1.
    public static let sentenceCollected = EventKind.sentenceCollected.type
    /// ``SentenceEdited`` v1.
    public static let sentenceEdited = EventKind.sentenceEdited.type
    /// ``SentenceRemoved`` v1.
    public static let sentenceRemoved = EventKind.sentenceRemoved.type
    /// ``MemoWritten`` v1.
    public static let memoWritten = EventKind.memoWritten.type
    /// ``MemoEdited`` v1.
    public static let memoEdited = EventKind.memoEdited.type
    /// ``MemoRemoved`` v1.
    public static let memoRemoved = EventKind.memoRemoved.type
    /// ``RatingSet`` v2 (quarter stars; v1 held whole stars and is upcast).
    public static let ratingSet = EventKind.ratingSet.type
    /// ``RatingCleared`` v1.
    public static let ratingCleared = EventKind.ratingCleared.type
    /// ``BookLiked`` v1.
    public static let bookLiked = EventKind.bookLiked.type
    /// ``BookUnliked`` v1.
    public static let bookUnliked = EventKind.bookUnliked.type
    /// ``HomeOrderSet`` v1.
    public static let homeOrderSet = EventKind.homeOrderSet.type
    /// ``ProfileUpdated`` v1.
    public static let profileUpdated = EventKind.profileUpdated.type
    /// ``ChallengeSet`` v1.
    public static let challengeSet = EventKind.challengeSet.type

    /// Every type this build knows, at its current schema version, in the order of
    /// ``EventKind/allCases``.
    public static let known: [EventType] = EventKind.allCases.map(\.type)
}

/// The aggregate an event belongs to: a reader's book, or the reader itself.
///
/// Its text form is the store's stream name: `book:<reader>:<book>` or `reader:<reader>`.
/// `Sendable`: an enum of identifiers.
public enum StreamID: Hashable, Sendable, CustomStringConvertible {
    /// One book of one reader.
    case book(reader: ReaderID, book: BookID)
    /// The reader's own stream (home order, profile).
    case reader(ReaderID)

    /// The reader the stream belongs to.
    public var reader: ReaderID {
        switch self {
        case .book(let reader, _): reader
        case .reader(let reader): reader
        }
    }

    /// The stream name used by the store.
    public var description: String {
        switch self {
        case .book(let reader, let book): "book:\(reader):\(book)"
        case .reader(let reader): "reader:\(reader)"
        }
    }

    /// Parses a stream name; `nil` when it has another form.
    public init?(_ name: String) {
        // Fast path for the canonical names the store writes (parsed in place: replays parse one
        // stream name per event).
        let fast: StreamID?? = name.utf8.withContiguousStorageIfAvailable { u -> StreamID? in
            func matches(_ prefix: StaticString) -> Bool {
                prefix.withUTF8Buffer { p in u.count >= p.count && zip(p, u).allSatisfy { $0 == $1 } }
            }
            if u.count == 78, matches("book:"), u[41] == UInt8(ascii: ":"),
               let r = UUID.parseCanonical(u, at: 5), let b = UUID.parseCanonical(u, at: 42) {
                return .book(reader: ReaderID(UUID(uuid: r)), book: BookID(UUID(uuid: b)))
            }
            if u.count == 43, matches("reader:"), let r = UUID.parseCanonical(u, at: 7) {
                return .reader(ReaderID(UUID(uuid: r)))
            }
            return nil
        }
        if let fast, let stream = fast {
            self = stream
            return
        }
        let parts = name.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0] == "book", let r = ReaderID(uuidString: String(parts[1])),
           let b = BookID(uuidString: String(parts[2])) {
            self = .book(reader: r, book: b)
        } else if parts.count == 2, parts[0] == "reader", let r = ReaderID(uuidString: String(parts[1])) {
            self = .reader(r)
        } else {
            return nil
        }
    }
}
