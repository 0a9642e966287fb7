/// Every event type this build knows, one case each: the one place that gives a type its tag, its
/// current schema version and its member of the stored record's protobuf `payload` oneof.
///
/// Each of those is an exhaustive `switch` over this enum, and ``ReadingEvent/kind``, the binary
/// fast path and the JSON payload decoder switch over it too (all without `default:`), so a new
/// event type does not compile until each of them handles it. The decoders' lookups (tag to kind,
/// field number to kind) are tables built from ``allCases``, never written out by hand.
///
/// `Sendable`: a plain enum.
public enum EventKind: CaseIterable, Hashable, Sendable {
    /// ``BookAdded``
    case bookAdded
    /// ``MetadataCorrected``
    case metadataCorrected
    /// ``BookRemoved``
    case bookRemoved
    /// ``ReadingStatusChanged``
    case statusChanged
    /// ``GoalSet``
    case goalSet
    /// ``GoalChanged``
    case goalChanged
    /// ``GoalDeleted``
    case goalDeleted
    /// ``PagesRead``
    case pagesRead
    /// ``ProgressCorrected``
    case progressCorrected
    /// ``ReadThroughStarted``
    case readThroughStarted
    /// ``SessionStarted``
    case sessionStarted
    /// ``SessionPaused``
    case sessionPaused
    /// ``SessionResumed``
    case sessionResumed
    /// ``SessionFinished``
    case sessionFinished
    /// ``SessionDiscarded``
    case sessionDiscarded
    /// ``BookFinished``
    case bookFinished
    /// ``FinishUndone``
    case finishUndone
    /// ``SentenceCollected``
    case sentenceCollected
    /// ``SentenceEdited``
    case sentenceEdited
    /// ``SentenceRemoved``
    case sentenceRemoved
    /// ``MemoWritten``
    case memoWritten
    /// ``MemoEdited``
    case memoEdited
    /// ``MemoRemoved``
    case memoRemoved
    /// ``RatingSet``
    case ratingSet
    /// ``RatingCleared``
    case ratingCleared
    /// ``BookLiked``
    case bookLiked
    /// ``BookUnliked``
    case bookUnliked
    /// ``HomeOrderSet``
    case homeOrderSet
    /// ``ProfileUpdated``
    case profileUpdated
    /// ``ChallengeSet``
    case challengeSet

    /// The stable type tag and the current schema version of this type ("PagesRead", 1).
    public var type: EventType {
        switch self {
        case .bookAdded: EventType(tag: "BookAdded", schemaVersion: 1)
        case .metadataCorrected: EventType(tag: "MetadataCorrected", schemaVersion: 1)
        case .bookRemoved: EventType(tag: "BookRemoved", schemaVersion: 1)
        case .statusChanged: EventType(tag: "ReadingStatusChanged", schemaVersion: 1)
        case .goalSet: EventType(tag: "GoalSet", schemaVersion: 1)
        case .goalChanged: EventType(tag: "GoalChanged", schemaVersion: 1)
        case .goalDeleted: EventType(tag: "GoalDeleted", schemaVersion: 1)
        case .pagesRead: EventType(tag: "PagesRead", schemaVersion: 1)
        case .progressCorrected: EventType(tag: "ProgressCorrected", schemaVersion: 1)
        case .readThroughStarted: EventType(tag: "ReadThroughStarted", schemaVersion: 1)
        case .sessionStarted: EventType(tag: "SessionStarted", schemaVersion: 1)
        case .sessionPaused: EventType(tag: "SessionPaused", schemaVersion: 1)
        case .sessionResumed: EventType(tag: "SessionResumed", schemaVersion: 1)
        case .sessionFinished: EventType(tag: "SessionFinished", schemaVersion: 1)
        case .sessionDiscarded: EventType(tag: "SessionDiscarded", schemaVersion: 1)
        case .bookFinished: EventType(tag: "BookFinished", schemaVersion: 1)
        case .finishUndone: EventType(tag: "FinishUndone", schemaVersion: 1)
        case .sentenceCollected: EventType(tag: "SentenceCollected", schemaVersion: 1)
        case .sentenceEdited: EventType(tag: "SentenceEdited", schemaVersion: 1)
        case .sentenceRemoved: EventType(tag: "SentenceRemoved", schemaVersion: 1)
        case .memoWritten: EventType(tag: "MemoWritten", schemaVersion: 1)
        case .memoEdited: EventType(tag: "MemoEdited", schemaVersion: 1)
        case .memoRemoved: EventType(tag: "MemoRemoved", schemaVersion: 1)
        // v2: quarter stars; v1 held whole stars and is upcast (see ``EventUpcaster``).
        case .ratingSet: EventType(tag: "RatingSet", schemaVersion: 2)
        case .ratingCleared: EventType(tag: "RatingCleared", schemaVersion: 1)
        case .bookLiked: EventType(tag: "BookLiked", schemaVersion: 1)
        case .bookUnliked: EventType(tag: "BookUnliked", schemaVersion: 1)
        case .homeOrderSet: EventType(tag: "HomeOrderSet", schemaVersion: 1)
        case .profileUpdated: EventType(tag: "ProfileUpdated", schemaVersion: 1)
        case .challengeSet: EventType(tag: "ChallengeSet", schemaVersion: 1)
        }
    }

    /// The field number of this type's current payload in the `payload` oneof of
    /// `readinghistory.v1.StoredEvent` (`Schema/reading_events.proto`). Field 39 is `RatingSet` v1,
    /// which is no type's current payload (``EventUpcaster`` reads it).
    var payloadField: Int {
        switch self {
        case .bookAdded: 16
        case .metadataCorrected: 17
        case .bookRemoved: 18
        case .statusChanged: 19
        case .goalSet: 20
        case .goalChanged: 21
        case .goalDeleted: 22
        case .pagesRead: 23
        case .progressCorrected: 24
        case .readThroughStarted: 25
        case .sessionStarted: 26
        case .sessionPaused: 27
        case .sessionResumed: 28
        case .sessionFinished: 29
        case .sessionDiscarded: 30
        case .bookFinished: 31
        case .finishUndone: 32
        case .sentenceCollected: 33
        case .sentenceEdited: 34
        case .sentenceRemoved: 35
        case .memoWritten: 36
        case .memoEdited: 37
        case .memoRemoved: 38
        case .ratingSet: 40
        case .ratingCleared: 41
        case .bookLiked: 42
        case .bookUnliked: 43
        case .homeOrderSet: 44
        case .profileUpdated: 45
        case .challengeSet: 46
        }
    }

    /// The kind whose tag is `tag` (at any schema version); `nil` for a tag this build does not know.
    public init?(tag: String) {
        guard let kind = Self.byTag[tag] else { return nil }
        self = kind
    }

    /// The kind whose current payload is `payload` member `field`; `nil` for any other field number.
    /// A lookup in a small array, for the fast path.
    @inline(__always)
    init?(payloadField field: Int) {
        let table = Self.byPayloadField
        guard field >= 0, field < table.count, let kind = table[field] else { return nil }
        self = kind
    }

    /// Tag to kind, built from ``allCases``. Should two kinds share a tag, the first keeps it (and
    /// `EventKindTableTests` fails); building it never traps.
    private static let byTag: [String: EventKind] =
        Dictionary(allCases.map { ($0.type.tag, $0) }, uniquingKeysWith: { first, _ in first })

    /// Field number to kind, indexed by field number, built from ``allCases``. Should two kinds
    /// share a number, the first keeps it (and `EventKindTableTests` fails).
    private static let byPayloadField: [EventKind?] = {
        var table = [EventKind?](repeating: nil, count: (allCases.map(\.payloadField).max() ?? 0) + 1)
        for kind in allCases where table[kind.payloadField] == nil { table[kind.payloadField] = kind }
        return table
    }()
}
