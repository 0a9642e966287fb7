/// What a reader asks to do with one book. ``BookCommand/decide(_:)`` turns it into events or a
/// ``ValidationError``.
///
/// `Sendable`: an enum of Sendable values.
public enum BookCommand: Hashable, Sendable {
    /// Add a book to the library (from a bookstore API or typed in by hand).
    case addBook(BookMetadata, status: ReadingStatus = .wantToRead)
    /// Replace the book's metadata with a corrected one.
    case correctMetadata(BookMetadata)
    /// Remove the book from the library.
    case removeBook
    /// Move the book to want-to-read, reading or did-not-finish (finishing is ``finishBook(on:)``).
    case setStatus(ReadingStatus)
    /// Set a goal to finish the book between two dates.
    case setGoal(startDate: LocalDate, targetDate: LocalDate, theme: Theme?)
    /// Change the active goal's target date and theme.
    case changeGoal(targetDate: LocalDate, theme: Theme?)
    /// Delete the active goal.
    case deleteGoal
    /// Record that the reader reached page `position`.
    case recordPages(position: Int)
    /// Move the position back explicitly (the reader over-recorded).
    case correctProgress(position: Int)
    /// Start re-reading a finished book from page 0.
    case startReadThrough
    /// Start a reading timer.
    case startSession(SessionID)
    /// Pause a running timer.
    case pauseSession(SessionID)
    /// Resume a paused timer.
    case resumeSession(SessionID)
    /// Stop a timer; it counts `durationSeconds` of reading and, when given, records `endPosition`.
    case finishSession(SessionID, endPosition: Int?, durationSeconds: Int)
    /// Throw a timer away without counting it.
    case discardSession(SessionID)
    /// Finish the current read-through on a day.
    case finishBook(on: LocalDate)
    /// Take a finish back.
    case undoFinish
    /// Collect a sentence, optionally with its page.
    case collectSentence(SentenceID, text: String, page: Int?)
    /// Edit a collected sentence.
    case editSentence(SentenceID, text: String, page: Int?)
    /// Remove a collected sentence.
    case removeSentence(SentenceID)
    /// Write a memo, optionally about a page.
    case writeMemo(MemoID, text: String, page: Int?)
    /// Edit a memo.
    case editMemo(MemoID, text: String, page: Int?)
    /// Remove a memo.
    case removeMemo(MemoID)
    /// Rate the book, 0.25 ... 5.0 stars in quarter steps.
    case setRating(stars: Double)
    /// Clear the rating (no event when there is none).
    case clearRating
    /// Like the book (no event when it is liked already).
    case like
    /// Take the like back (no event when it is not liked).
    case unlike
}

/// What a reader asks to do with their own settings.
///
/// `Sendable`: an enum of Sendable values.
public enum ReaderCommand: Hashable, Sendable {
    /// Arrange the home list by hand.
    case setHomeOrder([BookID])
    /// Update the profile.
    case updateProfile(nickname: String, imageFileName: String?, theme: Theme?)
    /// Set or change the yearly challenge of `year`: a target of books, of pages, or both.
    case setChallenge(year: Int, books: Int?, pages: Int?)
}
