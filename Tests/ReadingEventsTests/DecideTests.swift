import Testing
@testable import ReadingEvents

/// A small book world: run commands in order, folding the produced events into the state.
struct BookWorld {
    let book = BookID()
    var state = BookState()
    var events: [ReadingEvent] = []
    /// The instant of the next command: one hour after the previous one, unless set.
    var clock = Timestamp(iso8601: "2026-03-01T09:00:00+09:00")!

    static let metadata = BookMetadata(
        title: "채식주의자", authors: "한강 (지은이)", publisher: "창비",
        publicationDate: try! LocalDate(year: 2007, month: 10, day: 30),
        isbn13: try! ISBN13("9788936433598"), pageCount: 300,
        categoryPath: "국내도서>소설/시/희곡>한국소설>2000년대 이후 한국소설")

    @discardableResult
    mutating func run(_ command: BookCommand, at instant: Timestamp? = nil) throws(ValidationError) -> [ReadingEvent] {
        let at = instant ?? clock.adding(seconds: 3600)
        let produced = try command.decide(for: book, in: state, at: at)
        for event in produced { state.apply(event, occurredAt: at) }
        events += produced
        if instant == nil { clock = at }
        return produced
    }

    static func added(pageCount: Int? = 300) -> BookWorld {
        var world = BookWorld()
        var metadata = BookWorld.metadata
        metadata.pageCount = pageCount
        try! world.run(.addBook(metadata, status: .reading))
        return world
    }

    static func finished() -> BookWorld {
        var world = added()
        try! world.run(.recordPages(position: 300))
        try! world.run(.finishBook(on: day(2026, 3, 10)))
        return world
    }
}

func day(_ y: Int, _ m: Int, _ d: Int) -> LocalDate { try! LocalDate(year: y, month: m, day: d) }

/// Runs `command` and returns the rejection, failing the test when there is none.
func rejection(_ world: BookWorld, _ command: BookCommand, sourceLocation: SourceLocation = #_sourceLocation) -> ValidationError? {
    var copy = world
    do {
        let events = try copy.run(command)
        Issue.record("expected a rejection, got \(events)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

func expectRejected(_ world: BookWorld, _ command: BookCommand, field: String, rule: ValidationRule,
                    containing text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error = rejection(world, command, sourceLocation: sourceLocation) else { return }
    #expect(error.field == field, sourceLocation: sourceLocation)
    #expect(error.rule == rule, sourceLocation: sourceLocation)
    #expect(error.description.contains(field), sourceLocation: sourceLocation)
    #expect(error.detail.contains(text), "\(error.detail)", sourceLocation: sourceLocation)
}

@Suite("Decide: library")
struct LibraryDecideTests {
    @Test func addBookProducesBookAdded() throws {
        var world = BookWorld()
        let events = try world.run(.addBook(BookWorld.metadata, status: .wantToRead))
        #expect(events == [.bookAdded(BookAdded(book: world.book, metadata: BookWorld.metadata, status: .wantToRead))])
        #expect(world.state.isInLibrary)
    }

    @Test func addBookTwiceIsRejected() {
        expectRejected(.added(), .addBook(BookWorld.metadata), field: "book", rule: .bookAlreadyAdded, containing: "already in the library")
    }

    @Test func addBookAsFinishedIsRejected() {
        expectRejected(BookWorld(), .addBook(BookWorld.metadata, status: .finished), field: "status", rule: .malformed, containing: "finishBook")
    }

    @Test func addBookWithEmptyTitleIsRejected() {
        var metadata = BookWorld.metadata
        metadata.title = "  "
        expectRejected(BookWorld(), .addBook(metadata), field: "metadata.title", rule: .empty, containing: "title is empty")
    }

    @Test func addBookWithBadPageCountIsRejected() {
        var metadata = BookWorld.metadata
        metadata.pageCount = 0
        expectRejected(BookWorld(), .addBook(metadata), field: "metadata.pageCount", rule: .outOfRange, containing: "0 pages")
    }

    @Test func correctMetadata() throws {
        var world = BookWorld.added()
        var metadata = BookWorld.metadata
        metadata.pageCount = 320
        #expect(try world.run(.correctMetadata(metadata)) == [.metadataCorrected(MetadataCorrected(book: world.book, metadata: metadata))])
        #expect(world.state.metadata?.pageCount == 320)
    }

    @Test func correctMetadataBelowPositionIsRejected() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 200))
        var metadata = BookWorld.metadata
        metadata.pageCount = 150
        expectRejected(world, .correctMetadata(metadata), field: "metadata.pageCount", rule: .outOfRange, containing: "below the position 200")
    }

    @Test func removeBookThenCommandsAreRejected() throws {
        var world = BookWorld.added()
        #expect(try world.run(.removeBook) == [.bookRemoved(BookRemoved(book: world.book))])
        expectRejected(world, .recordPages(position: 10), field: "book", rule: .bookRemoved, containing: "was removed")
    }

    @Test func commandsOnABookNeverAddedAreRejected() {
        expectRejected(BookWorld(), .recordPages(position: 10), field: "book", rule: .bookNotAdded, containing: "never added")
        expectRejected(BookWorld(), .like, field: "book", rule: .bookNotAdded, containing: "never added")
    }

    @Test func setStatus() throws {
        var world = BookWorld.added()
        #expect(try world.run(.setStatus(.didNotFinish)) == [.statusChanged(ReadingStatusChanged(book: world.book, status: .didNotFinish))])
        #expect(try world.run(.setStatus(.didNotFinish)) == [])
    }

    @Test func setStatusFinishedIsRejected() {
        expectRejected(.added(), .setStatus(.finished), field: "status", rule: .malformed, containing: "finishBook")
    }

    @Test func setStatusOnFinishedBookIsRejected() {
        expectRejected(.finished(), .setStatus(.reading), field: "status", rule: .bookFinished, containing: "is finished")
    }
}

@Suite("Decide: goals")
struct GoalDecideTests {
    @Test func setChangeDeleteGoal() throws {
        var world = BookWorld.added()
        #expect(try world.run(.setGoal(startDate: day(2026, 3, 1), targetDate: day(2026, 3, 31), theme: "orange"))
                == [.goalSet(GoalSet(book: world.book, startDate: day(2026, 3, 1), targetDate: day(2026, 3, 31), theme: "orange"))])
        #expect(try world.run(.changeGoal(targetDate: day(2026, 4, 15), theme: nil))
                == [.goalChanged(GoalChanged(book: world.book, targetDate: day(2026, 4, 15), theme: nil))])
        #expect(world.state.goal?.targetDate == day(2026, 4, 15))
        #expect(try world.run(.deleteGoal) == [.goalDeleted(GoalDeleted(book: world.book))])
        #expect(world.state.goal == nil)
    }

    @Test func targetBeforeStartIsRejected() {
        expectRejected(.added(), .setGoal(startDate: day(2026, 3, 10), targetDate: day(2026, 3, 9), theme: nil),
                       field: "targetDate", rule: .targetBeforeStart, containing: "2026-03-09 is before the start date 2026-03-10")
    }

    @Test func changedTargetBeforeStartIsRejected() throws {
        var world = BookWorld.added()
        try world.run(.setGoal(startDate: day(2026, 3, 10), targetDate: day(2026, 3, 20), theme: nil))
        expectRejected(world, .changeGoal(targetDate: day(2026, 3, 1), theme: nil), field: "targetDate", rule: .targetBeforeStart, containing: "before the start date")
    }

    @Test func secondActiveGoalIsRejected() throws {
        var world = BookWorld.added()
        try world.run(.setGoal(startDate: day(2026, 3, 1), targetDate: day(2026, 3, 20), theme: nil))
        expectRejected(world, .setGoal(startDate: day(2026, 3, 2), targetDate: day(2026, 3, 25), theme: nil),
                       field: "goal", rule: .goalAlreadyActive, containing: "already has an active goal")
    }

    @Test func goalOnFinishedBookIsRejected() {
        expectRejected(.finished(), .setGoal(startDate: day(2026, 3, 1), targetDate: day(2026, 3, 20), theme: nil),
                       field: "goal", rule: .bookFinished, containing: "is finished")
    }

    @Test func changeOrDeleteWithoutGoalIsRejected() {
        expectRejected(.added(), .changeGoal(targetDate: day(2026, 3, 1), theme: nil), field: "goal", rule: .noActiveGoal, containing: "no active goal")
        expectRejected(.added(), .deleteGoal, field: "goal", rule: .noActiveGoal, containing: "no active goal")
    }
}

@Suite("Decide: progress")
struct ProgressDecideTests {
    @Test func recordPagesMovesForward() throws {
        var world = BookWorld.added()
        #expect(try world.run(.recordPages(position: 40)) == [.pagesRead(PagesRead(book: world.book, position: 40))])
        #expect(try world.run(.recordPages(position: 40)) == [])
        #expect(world.state.position == 40)
    }

    @Test func negativePositionIsRejected() {
        expectRejected(.added(), .recordPages(position: -1), field: "position", rule: .outOfRange, containing: "-1 is below 0")
    }

    @Test func positionAbovePageCountIsRejected() {
        expectRejected(.added(), .recordPages(position: 301), field: "position", rule: .outOfRange, containing: "301 is above the page count 300")
    }

    @Test func unknownPageCountAcceptsAnyPositionUpToTheCap() throws {
        var world = BookWorld.added(pageCount: nil)
        try world.run(.recordPages(position: 5_000))
        expectRejected(world, .recordPages(position: BookMetadata.maxPageCount + 1), field: "position", rule: .outOfRange, containing: "above the page count")
    }

    @Test func recordingBackwardIsRejected() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 100))
        expectRejected(world, .recordPages(position: 90), field: "position", rule: .notBackward, containing: "use correctProgress")
    }

    @Test func pagesOnFinishedBookAreRejected() {
        expectRejected(.finished(), .recordPages(position: 10), field: "book", rule: .bookFinished, containing: "new read-through")
    }

    @Test func correctProgressMovesBack() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 100))
        #expect(try world.run(.correctProgress(position: 80)) == [.progressCorrected(ProgressCorrected(book: world.book, position: 80))])
        #expect(world.state.position == 80)
    }

    @Test func correctionForwardIsRejected() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 100))
        expectRejected(world, .correctProgress(position: 100), field: "position", rule: .notBackward, containing: "not below the current position 100")
        expectRejected(world, .correctProgress(position: -5), field: "position", rule: .outOfRange, containing: "below 0")
    }

    @Test func readThroughRestartsFromZero() throws {
        var world = BookWorld.finished()
        #expect(try world.run(.startReadThrough) == [.readThroughStarted(ReadThroughStarted(book: world.book, readThrough: 2))])
        #expect(world.state.position == 0)
        #expect(world.state.isFinished == false)
        #expect(try world.run(.recordPages(position: 10)) == [.pagesRead(PagesRead(book: world.book, position: 10))])
    }

    @Test func readThroughOfUnfinishedBookIsRejected() {
        expectRejected(.added(), .startReadThrough, field: "book", rule: .bookNotFinished, containing: "not finished")
    }
}

@Suite("Decide: sessions")
struct SessionDecideTests {
    @Test func fullSessionLifecycle() throws {
        var world = BookWorld.added()
        let s = SessionID()
        #expect(try world.run(.startSession(s)) == [.sessionStarted(SessionStarted(session: s, book: world.book))])
        #expect(try world.run(.pauseSession(s)) == [.sessionPaused(SessionPaused(session: s, book: world.book))])
        #expect(try world.run(.resumeSession(s)) == [.sessionResumed(SessionResumed(session: s, book: world.book))])
        #expect(try world.run(.finishSession(s, endPosition: 42, durationSeconds: 1800))
                == [.sessionFinished(SessionFinished(session: s, book: world.book, endPosition: 42, durationSeconds: 1800))])
        #expect(world.state.position == 42)
        #expect(world.state.openSessions.isEmpty)
    }

    @Test func discardSession() throws {
        var world = BookWorld.added()
        let s = SessionID()
        try world.run(.startSession(s))
        #expect(try world.run(.discardSession(s)) == [.sessionDiscarded(SessionDiscarded(session: s, book: world.book))])
        expectRejected(world, .finishSession(s, endPosition: nil, durationSeconds: 10), field: "session", rule: .sessionNotStarted, containing: "never started")
    }

    @Test func commandsOnASessionNeverStartedAreRejected() {
        let s = SessionID()
        for command: BookCommand in [.pauseSession(s), .resumeSession(s), .finishSession(s, endPosition: nil, durationSeconds: 1), .discardSession(s)] {
            expectRejected(.added(), command, field: "session", rule: .sessionNotStarted, containing: "was never started")
        }
    }

    @Test func pausingTwiceOrResumingARunningSessionIsRejected() throws {
        var world = BookWorld.added()
        let s = SessionID()
        try world.run(.startSession(s))
        expectRejected(world, .resumeSession(s), field: "session", rule: .sessionState, containing: "running, not paused")
        try world.run(.pauseSession(s))
        expectRejected(world, .pauseSession(s), field: "session", rule: .sessionState, containing: "already paused")
    }

    @Test func reusedSessionIDIsRejected() throws {
        var world = BookWorld.added()
        let s = SessionID()
        try world.run(.startSession(s))
        try world.run(.finishSession(s, endPosition: nil, durationSeconds: 60))
        expectRejected(world, .startSession(s), field: "session", rule: .duplicateID, containing: "started before")
    }

    @Test func badDurationAndEndPositionAreRejected() throws {
        var world = BookWorld.added()
        let s = SessionID()
        try world.run(.recordPages(position: 50))
        try world.run(.startSession(s))
        expectRejected(world, .finishSession(s, endPosition: nil, durationSeconds: -1), field: "durationSeconds", rule: .outOfRange, containing: "-1 seconds")
        expectRejected(world, .finishSession(s, endPosition: 400, durationSeconds: 60), field: "endPosition", rule: .outOfRange, containing: "above the page count 300")
        expectRejected(world, .finishSession(s, endPosition: 40, durationSeconds: 60), field: "endPosition", rule: .notBackward, containing: "below the position 50")
    }

    @Test func sessionOnFinishedBookIsRejected() {
        expectRejected(.finished(), .startSession(SessionID()), field: "book", rule: .bookFinished, containing: "is finished")
    }
}

@Suite("Decide: finishing")
struct FinishDecideTests {
    @Test func finishAndUndo() throws {
        var world = BookWorld.added()
        #expect(try world.run(.finishBook(on: day(2026, 3, 10))) == [.bookFinished(BookFinished(book: world.book, finishedOn: day(2026, 3, 10)))])
        #expect(world.state.isFinished)
        #expect(try world.run(.undoFinish) == [.finishUndone(FinishUndone(book: world.book))])
        #expect(world.state.isFinished == false)
    }

    @Test func finishingTwiceIsRejected() {
        expectRejected(.finished(), .finishBook(on: day(2026, 3, 11)), field: "book", rule: .bookFinished, containing: "already finished")
    }

    @Test func undoWithoutFinishIsRejected() {
        expectRejected(.added(), .undoFinish, field: "book", rule: .bookNotFinished, containing: "not finished")
    }
}

@Suite("Decide: sentences and memos")
struct TextDecideTests {
    @Test func sentenceLifecycle() throws {
        var world = BookWorld.added()
        let id = SentenceID()
        #expect(try world.run(.collectSentence(id, text: "사람은 누구나 꽃이다.", page: 12))
                == [.sentenceCollected(SentenceCollected(sentence: id, book: world.book, text: "사람은 누구나 꽃이다.", page: 12))])
        #expect(try world.run(.editSentence(id, text: "고친 문장", page: nil))
                == [.sentenceEdited(SentenceEdited(sentence: id, book: world.book, text: "고친 문장", page: nil))])
        #expect(try world.run(.removeSentence(id)) == [.sentenceRemoved(SentenceRemoved(sentence: id, book: world.book))])
        expectRejected(world, .editSentence(id, text: "x", page: nil), field: "sentence", rule: .notFound, containing: "does not exist")
    }

    @Test func memoLifecycle() throws {
        var world = BookWorld.added()
        let id = MemoID()
        #expect(try world.run(.writeMemo(id, text: "좋았다", page: nil)) == [.memoWritten(MemoWritten(memo: id, book: world.book, text: "좋았다", page: nil))])
        #expect(try world.run(.editMemo(id, text: "아주 좋았다", page: 3)) == [.memoEdited(MemoEdited(memo: id, book: world.book, text: "아주 좋았다", page: 3))])
        #expect(try world.run(.removeMemo(id)) == [.memoRemoved(MemoRemoved(memo: id, book: world.book))])
        expectRejected(world, .removeMemo(id), field: "memo", rule: .notFound, containing: "does not exist")
    }

    @Test func emptyTextIsRejected() {
        expectRejected(.added(), .collectSentence(SentenceID(), text: " \n\t", page: nil), field: "text", rule: .empty, containing: "text is empty")
        expectRejected(.added(), .writeMemo(MemoID(), text: "", page: nil), field: "text", rule: .empty, containing: "text is empty")
    }

    @Test func overlongTextIsRejected() {
        let sentence = String(repeating: "가", count: Limits.sentenceLength + 1)
        expectRejected(.added(), .collectSentence(SentenceID(), text: sentence, page: nil), field: "text", rule: .tooLong, containing: "at most 2000")
        let memo = String(repeating: "a", count: Limits.memoLength + 1)
        expectRejected(.added(), .writeMemo(MemoID(), text: memo, page: nil), field: "text", rule: .tooLong, containing: "at most 10000")
    }

    @Test func textAtTheLimitIsAccepted() throws {
        var world = BookWorld.added()
        try world.run(.collectSentence(SentenceID(), text: String(repeating: "가", count: Limits.sentenceLength), page: nil))
        #expect(world.state.sentences.count == 1)
    }

    @Test func editOrRemoveMissingIsRejected() {
        expectRejected(.added(), .editSentence(SentenceID(), text: "x", page: nil), field: "sentence", rule: .notFound, containing: "does not exist")
        expectRejected(.added(), .removeSentence(SentenceID()), field: "sentence", rule: .notFound, containing: "does not exist")
        expectRejected(.added(), .editMemo(MemoID(), text: "x", page: nil), field: "memo", rule: .notFound, containing: "does not exist")
        expectRejected(.added(), .removeMemo(MemoID()), field: "memo", rule: .notFound, containing: "does not exist")
    }

    @Test func duplicateIDIsRejected() throws {
        var world = BookWorld.added()
        let id = SentenceID()
        try world.run(.collectSentence(id, text: "a", page: nil))
        expectRejected(world, .collectSentence(id, text: "b", page: nil), field: "sentence", rule: .duplicateID, containing: "exists already")
    }

    @Test func pageOutsideTheBookIsRejected() {
        expectRejected(.added(), .collectSentence(SentenceID(), text: "a", page: 301), field: "page", rule: .outOfRange, containing: "page 301")
        expectRejected(.added(), .writeMemo(MemoID(), text: "a", page: 0), field: "page", rule: .outOfRange, containing: "page 0")
    }
}

@Suite("Decide: rating and likes")
struct RatingDecideTests {
    @Test(arguments: [0.25, 1.0, 3.5, 4.75, 5.0])
    func validRatings(stars: Double) throws {
        var world = BookWorld.added()
        let events = try world.run(.setRating(stars: stars))
        #expect(events == [.ratingSet(RatingSet(book: world.book, rating: try Rating(stars: stars)))])
        #expect(world.state.rating?.stars == stars)
    }

    @Test(arguments: [0.0, -1.0, 5.25, 6.0, Double.nan, Double.infinity])
    func outOfRangeRatingsAreRejected(stars: Double) {
        expectRejected(.added(), .setRating(stars: stars), field: "rating", rule: .outOfRange, containing: "outside 0.25 ... 5.0")
    }

    @Test(arguments: [0.3, 1.1, 4.8, 2.125])
    func offStepRatingsAreRejected(stars: Double) {
        expectRejected(.added(), .setRating(stars: stars), field: "rating", rule: .offQuarterStep, containing: "multiple of 0.25")
    }

    @Test func clearRatingAndLikes() throws {
        var world = BookWorld.added()
        #expect(try world.run(.clearRating) == [])
        try world.run(.setRating(stars: 4))
        #expect(try world.run(.clearRating) == [.ratingCleared(RatingCleared(book: world.book))])
        #expect(try world.run(.like) == [.bookLiked(BookLiked(book: world.book))])
        #expect(try world.run(.like) == [])
        #expect(try world.run(.unlike) == [.bookUnliked(BookUnliked(book: world.book))])
        #expect(try world.run(.unlike) == [])
    }
}

@Suite("Decide: reader")
struct ReaderDecideTests {
    @Test func homeOrderAndProfile() throws {
        let books = [BookID(), BookID()]
        #expect(try ReaderCommand.setHomeOrder(books).decide(in: ReaderState()) == [.homeOrderSet(HomeOrderSet(books: books))])
        #expect(try ReaderCommand.updateProfile(nickname: "책벌레", imageFileName: "me.png", theme: "green").decide(in: ReaderState())
                == [.profileUpdated(ProfileUpdated(nickname: "책벌레", imageFileName: "me.png", theme: "green"))])
    }

    @Test func duplicateBookInOrderIsRejected() {
        let b = BookID()
        #expect(throws: ValidationError.self) { try ReaderCommand.setHomeOrder([b, b]).decide(in: ReaderState()) }
        do { _ = try ReaderCommand.setHomeOrder([b, b]).decide(in: ReaderState()) } catch {
            #expect(error.field == "books" && error.rule == .duplicateElement && error.detail.contains("appears twice"))
        }
    }

    @Test func badNicknameIsRejected() {
        for nickname in ["", String(repeating: "n", count: Limits.nicknameLength + 1)] {
            do {
                _ = try ReaderCommand.updateProfile(nickname: nickname, imageFileName: nil, theme: nil).decide(in: ReaderState())
                Issue.record("accepted \(nickname)")
            } catch {
                #expect(error.field == "nickname")
                #expect(error.rule == (nickname.isEmpty ? .empty : .tooLong))
            }
        }
    }
}

@Suite("Decide: back-dated records")
struct BackDatedDecideTests {
    static func at(_ text: String) -> Timestamp { Timestamp(iso8601: text)! }

    @Test func backDatedRecordFitsBetweenItsNeighbours() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 10), at: Self.at("2026-03-01T21:00:00+09:00"))
        try world.run(.recordPages(position: 40), at: Self.at("2026-03-03T21:00:00+09:00"))
        let events = try world.run(.recordPages(position: 25), at: Self.at("2026-03-02T21:00:00+09:00"))
        #expect(events == [.pagesRead(PagesRead(book: world.book, position: 25))])
        #expect(world.state.position == 40)
        #expect(world.state.timeline.credits == [10, 15, 15])
    }

    @Test func backDatedRecordAboveALaterRecordIsRejected() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 10), at: Self.at("2026-03-01T21:00:00+09:00"))
        try world.run(.recordPages(position: 40), at: Self.at("2026-03-03T21:00:00+09:00"))
        var later = world
        later.clock = Self.at("2026-03-02T20:00:00+09:00")
        expectRejected(later, .recordPages(position: 45), field: "position", rule: .notBackward, containing: "above the position 40 recorded later")
        expectRejected(later, .recordPages(position: 5), field: "position", rule: .notBackward, containing: "below the position 10 already reached")
    }

    @Test func correctionClampsEarlierMarks() throws {
        var world = BookWorld.added()
        try world.run(.recordPages(position: 10), at: Self.at("2026-03-01T21:00:00+09:00"))
        try world.run(.recordPages(position: 30), at: Self.at("2026-03-02T21:00:00+09:00"))
        try world.run(.recordPages(position: 40), at: Self.at("2026-03-04T21:00:00+09:00"))
        try world.run(.correctProgress(position: 10), at: Self.at("2026-03-02T22:00:00+09:00"))
        #expect(world.state.timeline.credits == [10, 0, 0, 30])
        #expect(world.state.position == 40)
    }
}
