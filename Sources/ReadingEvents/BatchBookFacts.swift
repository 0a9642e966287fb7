/// What the earlier events of a batch say about each book, as the batch is checked in order: its
/// page count (the latest `BookAdded`/`MetadataCorrected`, else the page count the store knows,
/// asked once per book) and the start of its goal (the latest `GoalSet` not followed by
/// `GoalDeleted` or `BookRemoved`). The one place of these batch rules: ``RecordedBatch/check(_:stored:storedPageCount:)``
/// and the store's append pipeline (imports, host batches, a replica's lines in an import) use it.
///
/// `Sendable`: dictionaries of Sendable values.
public struct BatchBookFacts: Sendable {
    /// What the batch knows of one book stream so far.
    private struct Facts: Sendable {
        /// The page count as of the envelope being checked (`nil`: not known yet; `.some(nil)`:
        /// the book has none, or the store does not know it).
        var pageCount: Int??
        /// The start of the goal set earlier in the batch (`nil`: none set; `.some(nil)`: ended).
        var goalStart: LocalDate??
    }
    /// The facts of each book stream: one table, so an event's page count and goal start are one
    /// hashed look-up (two tables hashed the stream twice an event; issue 37, the P1 path).
    private var books: [StreamID: Facts] = [:]

    /// No facts yet.
    public init() {}

    /// The page count of the book of `envelope` as of it: from the batch, else `stored` (asked once
    /// per book and batch); `nil` for a non-book event or an unknown book.
    public mutating func pageCount(before envelope: EventEnvelope, stored: (ReaderID, BookID) throws -> Int?) rethrows -> Int? {
        try pageCountAndGoalStart(before: envelope, stored: stored).pageCount
    }

    /// The start of the goal of the book of `envelope` set earlier in the batch, if any.
    public func goalStart(before envelope: EventEnvelope) -> LocalDate? { books[envelope.stream]?.goalStart ?? nil }

    /// ``pageCount(before:stored:)`` and ``goalStart(before:)`` together, with one look-up of the
    /// book.
    public mutating func pageCountAndGoalStart(before envelope: EventEnvelope, stored: (ReaderID, BookID) throws -> Int?) rethrows
        -> (pageCount: Int?, goalStart: LocalDate?) {
        guard case .book(let reader, let book) = envelope.stream else { return (nil, nil) }
        return try Self.resolve(&books[envelope.stream, default: Facts()], reader: reader, book: book, stored: stored)
    }

    /// Fills in the stored page count the first time the book is asked about.
    private static func resolve(_ facts: inout Facts, reader: ReaderID, book: BookID, stored: (ReaderID, BookID) throws -> Int?) rethrows
        -> (pageCount: Int?, goalStart: LocalDate?) {
        if facts.pageCount == nil { facts.pageCount = .some(try stored(reader, book)) }
        return (facts.pageCount ?? nil, facts.goalStart ?? nil)
    }

    /// Notes what `envelope` sets: a page count, or a goal's start or end.
    public mutating func note(_ envelope: EventEnvelope) {
        switch envelope.event {
        case .bookAdded(let e): books[envelope.stream, default: Facts()].pageCount = .some(e.metadata.pageCount)
        case .metadataCorrected(let e): books[envelope.stream, default: Facts()].pageCount = .some(e.metadata.pageCount)
        case .goalSet(let e): books[envelope.stream, default: Facts()].goalStart = .some(e.startDate)
        case .goalDeleted, .bookRemoved: books[envelope.stream, default: Facts()].goalStart = .some(nil)
        case .statusChanged, .goalChanged, .pagesRead, .progressCorrected, .readThroughStarted, .bookFinished, .finishUndone,
             .sessionStarted, .sessionPaused, .sessionResumed, .sessionFinished, .sessionDiscarded, .sentenceCollected,
             .sentenceEdited, .sentenceRemoved, .memoWritten, .memoEdited, .memoRemoved, .ratingSet, .ratingCleared,
             .bookLiked, .bookUnliked, .profileUpdated, .homeOrderSet, .challengeSet, .unknown:
            break
        }
    }
}
