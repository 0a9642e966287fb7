extension ReadingEvent {
    /// The book command that decides exactly this event, or `nil` for reader-level and unknown
    /// events. Used to check events made elsewhere (an import) against a book's stored history:
    /// the event fits when `command.decide(for:in:at:)` on that history returns `[self]`.
    public var bookCommand: BookCommand? {
        switch self {
        case .bookAdded(let e): .addBook(e.metadata, status: e.status)
        case .metadataCorrected(let e): .correctMetadata(e.metadata)
        case .bookRemoved: .removeBook
        case .statusChanged(let e): .setStatus(e.status)
        case .goalSet(let e): .setGoal(startDate: e.startDate, targetDate: e.targetDate, theme: e.theme)
        case .goalChanged(let e): .changeGoal(targetDate: e.targetDate, theme: e.theme)
        case .goalDeleted: .deleteGoal
        case .pagesRead(let e): .recordPages(position: e.position)
        case .progressCorrected(let e): .correctProgress(position: e.position)
        case .readThroughStarted: .startReadThrough
        case .sessionStarted(let e): .startSession(e.session)
        case .sessionPaused(let e): .pauseSession(e.session)
        case .sessionResumed(let e): .resumeSession(e.session)
        case .sessionFinished(let e): .finishSession(e.session, endPosition: e.endPosition, durationSeconds: e.durationSeconds)
        case .sessionDiscarded(let e): .discardSession(e.session)
        case .bookFinished(let e): .finishBook(on: e.finishedOn)
        case .finishUndone: .undoFinish
        case .sentenceCollected(let e): .collectSentence(e.sentence, text: e.text, page: e.page)
        case .sentenceEdited(let e): .editSentence(e.sentence, text: e.text, page: e.page)
        case .sentenceRemoved(let e): .removeSentence(e.sentence)
        case .memoWritten(let e): .writeMemo(e.memo, text: e.text, page: e.page)
        case .memoEdited(let e): .editMemo(e.memo, text: e.text, page: e.page)
        case .memoRemoved(let e): .removeMemo(e.memo)
        case .ratingSet(let e): .setRating(stars: e.rating.stars)
        case .ratingCleared: .clearRating
        case .bookLiked: .like
        case .bookUnliked: .unlike
        case .homeOrderSet, .profileUpdated, .challengeSet, .unknown: nil
        }
    }
}
