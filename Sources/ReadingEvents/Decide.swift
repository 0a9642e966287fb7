extension BookCommand {
    /// Decides which events `self` produces for `book` in `state`, when the action happened at
    /// `occurredAt`, or why it is rejected.
    ///
    /// Pure: the same command on the same state always gives the same result. Rejections name the
    /// field and the rule (see ``ValidationRule``). A command that changes nothing (liking a liked
    /// book, recording the page already reached) returns no events.
    ///
    /// Page records may be back-dated: a record at an earlier instant must fit between the
    /// positions recorded before and after it (see ``PageTimeline``).
    public func decide(for book: BookID, in state: BookState, at occurredAt: Timestamp) throws(ValidationError) -> [ReadingEvent] {
        if case .addBook(let metadata, let status) = self {
            guard !state.isInLibrary else {
                throw ValidationError(field: "book", rule: .bookAlreadyAdded, detail: "book \(book) is already in the library")
            }
            try ValueRules.addedStatus(status)
            return [.bookAdded(BookAdded(book: book, metadata: try metadata.validated(), status: status))]
        }
        guard state.isInLibrary else {
            if state.isRemoved {
                throw ValidationError(field: "book", rule: .bookRemoved, detail: "book \(book) was removed from the library")
            }
            throw ValidationError(field: "book", rule: .bookNotAdded, detail: "book \(book) was never added to the library")
        }
        let pageCount = state.metadata?.pageCount

        switch self {
        case .addBook:
            return [] // handled above
        case .correctMetadata(let metadata):
            let checked = try metadata.validated()
            if let pages = checked.pageCount, state.position > pages {
                throw ValidationError(field: "metadata.pageCount", rule: .outOfRange,
                                      detail: "\(pages) pages is below the position \(state.position) already reached; correct the progress first")
            }
            return [.metadataCorrected(MetadataCorrected(book: book, metadata: checked))]
        case .removeBook:
            return [.bookRemoved(BookRemoved(book: book))]
        case .setStatus(let status):
            try ValueRules.changedStatus(status)
            guard !state.isFinished else {
                throw ValidationError(field: "status", rule: .bookFinished,
                                      detail: "book \(book) is finished; undo the finish or start a read-through first")
            }
            return status == state.status ? [] : [.statusChanged(ReadingStatusChanged(book: book, status: status))]
        case .setGoal(let start, let target, let theme):
            guard state.goal == nil else {
                throw ValidationError(field: "goal", rule: .goalAlreadyActive, detail: "book \(book) already has an active goal; change or delete it")
            }
            guard !state.isFinished else {
                throw ValidationError(field: "goal", rule: .bookFinished, detail: "book \(book) is finished; start a read-through to set a new goal")
            }
            try ValueRules.goalDates(start: start, target: target)
            try ValueRules.theme(theme)
            return [.goalSet(GoalSet(book: book, startDate: start, targetDate: target, theme: theme))]
        case .changeGoal(let target, let theme):
            guard let goal = state.goal else {
                throw ValidationError(field: "goal", rule: .noActiveGoal, detail: "book \(book) has no active goal")
            }
            try ValueRules.goalDates(start: goal.startDate, target: target)
            try ValueRules.theme(theme)
            return [.goalChanged(GoalChanged(book: book, targetDate: target, theme: theme))]
        case .deleteGoal:
            guard state.goal != nil else {
                throw ValidationError(field: "goal", rule: .noActiveGoal, detail: "book \(book) has no active goal")
            }
            return [.goalDeleted(GoalDeleted(book: book))]
        case .recordPages(let position):
            try Self.checkNotFinished(state, book)
            try ValueRules.position(position, field: "position", pageCount: pageCount)
            try Self.checkFits(position, field: "position", at: occurredAt, in: state)
            guard position > state.timeline.position(before: occurredAt) else { return [] }
            return [.pagesRead(PagesRead(book: book, position: position))]
        case .correctProgress(let position):
            try ValueRules.position(position, field: "position", pageCount: pageCount)
            let current = state.timeline.position(before: occurredAt)
            guard position < current else {
                throw ValidationError(field: "position", rule: .notBackward,
                                      detail: "a correction moves back: \(position) is not below the current position \(current)")
            }
            return [.progressCorrected(ProgressCorrected(book: book, position: position))]
        case .startReadThrough:
            guard state.isFinished else {
                throw ValidationError(field: "book", rule: .bookNotFinished, detail: "book \(book) is not finished; a new read-through starts after a finish")
            }
            return [.readThroughStarted(ReadThroughStarted(book: book, readThrough: state.readThrough + 1))]
        case .startSession(let session):
            try Self.checkNotFinished(state, book)
            guard !state.usedIDs.contains(BookState.UUIDKey(session)) else {
                throw ValidationError(field: "session", rule: .duplicateID, detail: "session \(session) was started before")
            }
            return [.sessionStarted(SessionStarted(session: session, book: book))]
        case .pauseSession(let session):
            let phase = try Self.openSession(session, in: state)
            guard phase == .running else {
                throw ValidationError(field: "session", rule: .sessionState, detail: "session \(session) is already paused")
            }
            return [.sessionPaused(SessionPaused(session: session, book: book))]
        case .resumeSession(let session):
            let phase = try Self.openSession(session, in: state)
            guard phase == .paused else {
                throw ValidationError(field: "session", rule: .sessionState, detail: "session \(session) is running, not paused")
            }
            return [.sessionResumed(SessionResumed(session: session, book: book))]
        case .finishSession(let session, let endPosition, let duration):
            _ = try Self.openSession(session, in: state)
            try ValueRules.duration(duration)
            if let end = endPosition {
                try ValueRules.position(end, field: "endPosition", pageCount: pageCount)
                try Self.checkFits(end, field: "endPosition", at: occurredAt, in: state)
            }
            return [.sessionFinished(SessionFinished(session: session, book: book, endPosition: endPosition, durationSeconds: duration))]
        case .discardSession(let session):
            _ = try Self.openSession(session, in: state)
            return [.sessionDiscarded(SessionDiscarded(session: session, book: book))]
        case .finishBook(let day):
            guard !state.isFinished else {
                throw ValidationError(field: "book", rule: .bookFinished, detail: "book \(book) is already finished")
            }
            try ValueRules.date(day, field: "finishedOn")
            return [.bookFinished(BookFinished(book: book, finishedOn: day))]
        case .undoFinish:
            guard state.isFinished else {
                throw ValidationError(field: "book", rule: .bookNotFinished, detail: "book \(book) is not finished")
            }
            return [.finishUndone(FinishUndone(book: book))]
        case .collectSentence(let id, let text, let page):
            guard !state.usedIDs.contains(BookState.UUIDKey(id)) else {
                throw ValidationError(field: "sentence", rule: .duplicateID, detail: "sentence \(id) exists already")
            }
            try ValueRules.passage(text, limit: Limits.sentenceLength, page: page, pageCount: pageCount)
            return [.sentenceCollected(SentenceCollected(sentence: id, book: book, text: text, page: page))]
        case .editSentence(let id, let text, let page):
            guard state.sentences.contains(id) else {
                throw ValidationError(field: "sentence", rule: .notFound, detail: "sentence \(id) does not exist")
            }
            try ValueRules.passage(text, limit: Limits.sentenceLength, page: page, pageCount: pageCount)
            return [.sentenceEdited(SentenceEdited(sentence: id, book: book, text: text, page: page))]
        case .removeSentence(let id):
            guard state.sentences.contains(id) else {
                throw ValidationError(field: "sentence", rule: .notFound, detail: "sentence \(id) does not exist")
            }
            return [.sentenceRemoved(SentenceRemoved(sentence: id, book: book))]
        case .writeMemo(let id, let text, let page):
            guard !state.usedIDs.contains(BookState.UUIDKey(id)) else {
                throw ValidationError(field: "memo", rule: .duplicateID, detail: "memo \(id) exists already")
            }
            try ValueRules.passage(text, limit: Limits.memoLength, page: page, pageCount: pageCount)
            return [.memoWritten(MemoWritten(memo: id, book: book, text: text, page: page))]
        case .editMemo(let id, let text, let page):
            guard state.memos.contains(id) else {
                throw ValidationError(field: "memo", rule: .notFound, detail: "memo \(id) does not exist")
            }
            try ValueRules.passage(text, limit: Limits.memoLength, page: page, pageCount: pageCount)
            return [.memoEdited(MemoEdited(memo: id, book: book, text: text, page: page))]
        case .removeMemo(let id):
            guard state.memos.contains(id) else {
                throw ValidationError(field: "memo", rule: .notFound, detail: "memo \(id) does not exist")
            }
            return [.memoRemoved(MemoRemoved(memo: id, book: book))]
        case .setRating(let stars):
            let rating = try Rating(stars: stars)
            return rating == state.rating ? [] : [.ratingSet(RatingSet(book: book, rating: rating))]
        case .clearRating:
            return state.rating == nil ? [] : [.ratingCleared(RatingCleared(book: book))]
        case .like:
            return state.isLiked ? [] : [.bookLiked(BookLiked(book: book))]
        case .unlike:
            return state.isLiked ? [.bookUnliked(BookUnliked(book: book))] : []
        }
    }

    private static func checkNotFinished(_ state: BookState, _ book: BookID) throws(ValidationError) {
        guard !state.isFinished else {
            throw ValidationError(field: "book", rule: .bookFinished,
                                  detail: "book \(book) is finished; start a new read-through to record pages")
        }
    }

    /// A page record at `instant` must not fall below what was reached before it, nor exceed a
    /// page record made later in time (a back-dated record slots in between).
    private static func checkFits(_ position: Int, field: String, at instant: Timestamp, in state: BookState) throws(ValidationError) {
        let before = state.timeline.position(before: instant)
        guard position >= before else {
            throw ValidationError(field: field, rule: .notBackward,
                                  detail: "\(field) \(position) is below the position \(before) already reached; use correctProgress to move back")
        }
        if let later = state.timeline.firstRecord(after: instant), position > later.position {
            throw ValidationError(field: field, rule: .notBackward,
                                  detail: "\(field) \(position) is above the position \(later.position) recorded later, at \(later.occurredAt)")
        }
    }

    private static func openSession(_ session: SessionID, in state: BookState) throws(ValidationError) -> BookState.SessionPhase {
        guard let phase = state.openSessions[session] else {
            throw ValidationError(field: "session", rule: .sessionNotStarted,
                                  detail: "session \(session) was never started, or has ended")
        }
        return phase
    }
}

extension ReaderCommand {
    /// Decides which events `self` produces in `state`, or why it is rejected.
    public func decide(in state: ReaderState) throws(ValidationError) -> [ReadingEvent] {
        switch self {
        case .setHomeOrder(let books):
            try ValueRules.distinctBooks(books)
            return books == state.homeOrder ? [] : [.homeOrderSet(HomeOrderSet(books: books))]
        case .updateProfile(let nickname, let image, let theme):
            try ValueRules.text(nickname, field: "nickname", limit: Limits.nicknameLength)
            try ValueRules.length(image, field: "imageFileName", limit: Limits.imageFileNameLength)
            try ValueRules.theme(theme)
            return [.profileUpdated(ProfileUpdated(nickname: nickname, imageFileName: image, theme: theme))]
        case .setChallenge(let year, let books, let pages):
            let challenge = try ChallengeSet(year: year, books: books, pages: pages).validated()
            return state.challenges[year] == challenge ? [] : [.challengeSet(challenge)]
        }
    }
}
