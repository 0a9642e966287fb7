/// What the earlier events of a batch say about each book, as the batch is checked in order: its
/// page count (the latest `BookAdded`/`MetadataCorrected`, else the page count the store knows,
/// asked once per book) and the start of its goal (the latest `GoalSet` not followed by
/// `GoalDeleted` or `BookRemoved`). The one place of these batch rules: ``RecordedBatch/check(_:stored:storedPageCount:)``
/// and the store's append pipeline (imports, host batches, a replica's lines in an import) use it.
///
/// `Sendable`: dictionaries of Sendable values.
public struct BatchBookFacts: Sendable {
    /// The page count of each book stream as of the envelope being checked (nil inside: unknown).
    private var pageCounts: [StreamID: Int?] = [:]
    /// The start of each book's goal set earlier in the batch (absent: unknown, nil inside: none).
    private var goalStarts: [StreamID: LocalDate?] = [:]

    /// No facts yet.
    public init() {}

    /// The page count of the book of `envelope` as of it: from the batch, else `stored` (asked once
    /// per book and batch); `nil` for a non-book event or an unknown book.
    public mutating func pageCount(before envelope: EventEnvelope, stored: (ReaderID, BookID) throws -> Int?) rethrows -> Int? {
        guard case .book(let reader, let book) = envelope.stream else { return nil }
        if let known = pageCounts[envelope.stream] { return known }
        let count = try stored(reader, book)
        pageCounts[envelope.stream] = .some(count)
        return count
    }

    /// The start of the goal of the book of `envelope` set earlier in the batch, if any.
    public func goalStart(before envelope: EventEnvelope) -> LocalDate? { goalStarts[envelope.stream] ?? nil }

    /// Notes what `envelope` sets: a page count, or a goal's start or end.
    public mutating func note(_ envelope: EventEnvelope) {
        switch envelope.event {
        case .bookAdded(let e): pageCounts[envelope.stream] = .some(e.metadata.pageCount)
        case .metadataCorrected(let e): pageCounts[envelope.stream] = .some(e.metadata.pageCount)
        case .goalSet(let e): goalStarts[envelope.stream] = .some(e.startDate)
        case .goalDeleted, .bookRemoved: goalStarts[envelope.stream] = .some(nil)
        case .statusChanged, .goalChanged, .pagesRead, .progressCorrected, .readThroughStarted, .bookFinished, .finishUndone,
             .sessionStarted, .sessionPaused, .sessionResumed, .sessionFinished, .sessionDiscarded, .sentenceCollected,
             .sentenceEdited, .sentenceRemoved, .memoWritten, .memoEdited, .memoRemoved, .ratingSet, .ratingCleared,
             .bookLiked, .bookUnliked, .profileUpdated, .homeOrderSet, .challengeSet, .unknown:
            break
        }
    }
}
