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

    /// The stable type tag and current schema version of this event ("PagesRead", 1).
    public var type: EventType {
        switch self {
        case .bookAdded: .bookAdded
        case .metadataCorrected: .metadataCorrected
        case .bookRemoved: .bookRemoved
        case .statusChanged: .statusChanged
        case .goalSet: .goalSet
        case .goalChanged: .goalChanged
        case .goalDeleted: .goalDeleted
        case .pagesRead: .pagesRead
        case .progressCorrected: .progressCorrected
        case .readThroughStarted: .readThroughStarted
        case .sessionStarted: .sessionStarted
        case .sessionPaused: .sessionPaused
        case .sessionResumed: .sessionResumed
        case .sessionFinished: .sessionFinished
        case .sessionDiscarded: .sessionDiscarded
        case .bookFinished: .bookFinished
        case .finishUndone: .finishUndone
        case .sentenceCollected: .sentenceCollected
        case .sentenceEdited: .sentenceEdited
        case .sentenceRemoved: .sentenceRemoved
        case .memoWritten: .memoWritten
        case .memoEdited: .memoEdited
        case .memoRemoved: .memoRemoved
        case .ratingSet: .ratingSet
        case .ratingCleared: .ratingCleared
        case .bookLiked: .bookLiked
        case .bookUnliked: .bookUnliked
        case .homeOrderSet: .homeOrderSet
        case .profileUpdated: .profileUpdated
        case .challengeSet: .challengeSet
        case .unknown(let unknown): EventType(tag: unknown.type, schemaVersion: unknown.schemaVersion)
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
    public static let bookAdded = EventType(tag: "BookAdded", schemaVersion: 1)
    /// ``MetadataCorrected`` v1.
    public static let metadataCorrected = EventType(tag: "MetadataCorrected", schemaVersion: 1)
    /// ``BookRemoved`` v1.
    public static let bookRemoved = EventType(tag: "BookRemoved", schemaVersion: 1)
    /// ``ReadingStatusChanged`` v1.
    public static let statusChanged = EventType(tag: "ReadingStatusChanged", schemaVersion: 1)
    /// ``GoalSet`` v1.
    public static let goalSet = EventType(tag: "GoalSet", schemaVersion: 1)
    /// ``GoalChanged`` v1.
    public static let goalChanged = EventType(tag: "GoalChanged", schemaVersion: 1)
    /// ``GoalDeleted`` v1.
    public static let goalDeleted = EventType(tag: "GoalDeleted", schemaVersion: 1)
    /// ``PagesRead`` v1.
    public static let pagesRead = EventType(tag: "PagesRead", schemaVersion: 1)
    /// ``ProgressCorrected`` v1.
    public static let progressCorrected = EventType(tag: "ProgressCorrected", schemaVersion: 1)
    /// ``ReadThroughStarted`` v1.
    public static let readThroughStarted = EventType(tag: "ReadThroughStarted", schemaVersion: 1)
    /// ``SessionStarted`` v1.
    public static let sessionStarted = EventType(tag: "SessionStarted", schemaVersion: 1)
    /// ``SessionPaused`` v1.
    public static let sessionPaused = EventType(tag: "SessionPaused", schemaVersion: 1)
    /// ``SessionResumed`` v1.
    public static let sessionResumed = EventType(tag: "SessionResumed", schemaVersion: 1)
    /// ``SessionFinished`` v1.
    public static let sessionFinished = EventType(tag: "SessionFinished", schemaVersion: 1)
    /// ``SessionDiscarded`` v1.
    public static let sessionDiscarded = EventType(tag: "SessionDiscarded", schemaVersion: 1)
    /// ``BookFinished`` v1.
    public static let bookFinished = EventType(tag: "BookFinished", schemaVersion: 1)
    /// ``FinishUndone`` v1.
    public static let finishUndone = EventType(tag: "FinishUndone", schemaVersion: 1)
    /// ``SentenceCollected`` v1.
    public static let sentenceCollected = EventType(tag: "SentenceCollected", schemaVersion: 1)
    /// ``SentenceEdited`` v1.
    public static let sentenceEdited = EventType(tag: "SentenceEdited", schemaVersion: 1)
    /// ``SentenceRemoved`` v1.
    public static let sentenceRemoved = EventType(tag: "SentenceRemoved", schemaVersion: 1)
    /// ``MemoWritten`` v1.
    public static let memoWritten = EventType(tag: "MemoWritten", schemaVersion: 1)
    /// ``MemoEdited`` v1.
    public static let memoEdited = EventType(tag: "MemoEdited", schemaVersion: 1)
    /// ``MemoRemoved`` v1.
    public static let memoRemoved = EventType(tag: "MemoRemoved", schemaVersion: 1)
    /// ``RatingSet`` v2 (quarter stars; v1 held whole stars and is upcast).
    public static let ratingSet = EventType(tag: "RatingSet", schemaVersion: 2)
    /// ``RatingCleared`` v1.
    public static let ratingCleared = EventType(tag: "RatingCleared", schemaVersion: 1)
    /// ``BookLiked`` v1.
    public static let bookLiked = EventType(tag: "BookLiked", schemaVersion: 1)
    /// ``BookUnliked`` v1.
    public static let bookUnliked = EventType(tag: "BookUnliked", schemaVersion: 1)
    /// ``HomeOrderSet`` v1.
    public static let homeOrderSet = EventType(tag: "HomeOrderSet", schemaVersion: 1)
    /// ``ProfileUpdated`` v1.
    public static let profileUpdated = EventType(tag: "ProfileUpdated", schemaVersion: 1)
    /// ``ChallengeSet`` v1.
    public static let challengeSet = EventType(tag: "ChallengeSet", schemaVersion: 1)

    /// Every type this build knows, at its current schema version.
    public static let known: [EventType] = [
        .bookAdded, .metadataCorrected, .bookRemoved, .statusChanged, .goalSet, .goalChanged, .goalDeleted,
        .pagesRead, .progressCorrected, .readThroughStarted, .sessionStarted, .sessionPaused, .sessionResumed,
        .sessionFinished, .sessionDiscarded, .bookFinished, .finishUndone, .sentenceCollected, .sentenceEdited,
        .sentenceRemoved, .memoWritten, .memoEdited, .memoRemoved, .ratingSet, .ratingCleared, .bookLiked,
        .bookUnliked, .homeOrderSet, .profileUpdated, .challengeSet,
    ]
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
