// The event payloads: one struct per fact. Every payload is `Sendable`, `Hashable` and `Codable`
// (value types of strings, integers, dates and identifiers). Instants and zones live in the
// envelope, not here: a payload says *what* happened, the envelope says *when, where and by whom*.

// MARK: Library

/// A book entered the reader's library, with its metadata and initial status.
public struct BookAdded: Hashable, Sendable, Codable {
    /// The new book.
    public var book: BookID
    /// Its metadata, validated.
    public var metadata: BookMetadata
    /// Where the reader put it (usually `wantToRead` or `reading`).
    public var status: ReadingStatus
    /// Creates the payload.
    public init(book: BookID, metadata: BookMetadata, status: ReadingStatus) {
        self.book = book; self.metadata = metadata; self.status = status
    }
}

/// The reader corrected a book's metadata (a wrong page count, a typo in the title).
public struct MetadataCorrected: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The full corrected metadata (replaces the old one).
    public var metadata: BookMetadata
    /// Creates the payload.
    public init(book: BookID, metadata: BookMetadata) { self.book = book; self.metadata = metadata }
}

/// The book left the reader's library (its history stays in the log).
public struct BookRemoved: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(book: BookID) { self.book = book }
}

/// The reader moved the book to another status (want to read, reading, did not finish).
/// Finishing goes through ``BookFinished``, which carries its date.
public struct ReadingStatusChanged: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The new status.
    public var status: ReadingStatus
    /// Creates the payload.
    public init(book: BookID, status: ReadingStatus) { self.book = book; self.status = status }
}

// MARK: Goals

/// The reader set a goal to finish the book by a date.
public struct GoalSet: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The first day of the goal.
    public var startDate: LocalDate
    /// The day the reader wants to have finished by; not before ``startDate``.
    public var targetDate: LocalDate
    /// The colour theme the reader picked for this goal.
    public var theme: Theme?
    /// Creates the payload.
    public init(book: BookID, startDate: LocalDate, targetDate: LocalDate, theme: Theme?) {
        self.book = book; self.startDate = startDate; self.targetDate = targetDate; self.theme = theme
    }
}

/// The reader changed the goal's target date or theme.
public struct GoalChanged: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The new target date.
    public var targetDate: LocalDate
    /// The new theme.
    public var theme: Theme?
    /// Creates the payload.
    public init(book: BookID, targetDate: LocalDate, theme: Theme?) {
        self.book = book; self.targetDate = targetDate; self.theme = theme
    }
}

/// The reader deleted the goal (the book stays in the library).
public struct GoalDeleted: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(book: BookID) { self.book = book }
}

// MARK: Progress

/// The reader reached a page: like BookyBooky's `totalPagesRead`, the payload states the position,
/// and the pages credited are the new position minus the previous one.
public struct PagesRead: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The page reached, 0 ... page count; not below the current position.
    public var position: Int
    /// Creates the payload.
    public init(book: BookID, position: Int) { self.book = book; self.position = position }
}

/// An explicit move backward (the reader over-recorded). Credits nothing negative to earlier days:
/// views take the difference off the day the over-recorded pages were credited to.
public struct ProgressCorrected: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The corrected position, below the current one.
    public var position: Int
    /// Creates the payload.
    public init(book: BookID, position: Int) { self.book = book; self.position = position }
}

/// A new read-through of a finished book starts again from page 0.
public struct ReadThroughStarted: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The read-through's number: 2 for the first re-read.
    public var readThrough: Int
    /// Creates the payload.
    public init(book: BookID, readThrough: Int) { self.book = book; self.readThrough = readThrough }
}

// MARK: Timed sessions

/// A reading timer started.
public struct SessionStarted: Hashable, Sendable, Codable {
    /// The session.
    public var session: SessionID
    /// The book being read.
    public var book: BookID
    /// Creates the payload.
    public init(session: SessionID, book: BookID) { self.session = session; self.book = book }
}

/// A running timer paused.
public struct SessionPaused: Hashable, Sendable, Codable {
    /// The session.
    public var session: SessionID
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(session: SessionID, book: BookID) { self.session = session; self.book = book }
}

/// A paused timer resumed.
public struct SessionResumed: Hashable, Sendable, Codable {
    /// The session.
    public var session: SessionID
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(session: SessionID, book: BookID) { self.session = session; self.book = book }
}

/// A timer stopped: the session counts, with the reader's end position.
public struct SessionFinished: Hashable, Sendable, Codable {
    /// The session.
    public var session: SessionID
    /// The book.
    public var book: BookID
    /// The page reached at the end, if the reader gave one (recorded like ``PagesRead``).
    public var endPosition: Int?
    /// Seconds of reading, pauses excluded, as the host's timer measured them.
    public var durationSeconds: Int
    /// Creates the payload.
    public init(session: SessionID, book: BookID, endPosition: Int?, durationSeconds: Int) {
        self.session = session; self.book = book; self.endPosition = endPosition; self.durationSeconds = durationSeconds
    }
}

/// A timer was thrown away without counting (also how a crashed app's stale timer is dropped).
public struct SessionDiscarded: Hashable, Sendable, Codable {
    /// The session.
    public var session: SessionID
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(session: SessionID, book: BookID) { self.session = session; self.book = book }
}

// MARK: Finishing

/// The reader finished the book (the current read-through).
public struct BookFinished: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The day the reader finished, in their own calendar.
    public var finishedOn: LocalDate
    /// Creates the payload.
    public init(book: BookID, finishedOn: LocalDate) { self.book = book; self.finishedOn = finishedOn }
}

/// The reader took back a finish (tapped "finished" by mistake).
public struct FinishUndone: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(book: BookID) { self.book = book }
}

// MARK: Sentences and memos

/// The reader collected a sentence from the book.
public struct SentenceCollected: Hashable, Sendable, Codable {
    /// The sentence's identifier.
    public var sentence: SentenceID
    /// The book.
    public var book: BookID
    /// The sentence, 1 ... ``Limits/sentenceLength`` characters.
    public var text: String
    /// The page it is on, if given.
    public var page: Int?
    /// Creates the payload.
    public init(sentence: SentenceID, book: BookID, text: String, page: Int?) {
        self.sentence = sentence; self.book = book; self.text = text; self.page = page
    }
}

/// The reader edited a collected sentence.
public struct SentenceEdited: Hashable, Sendable, Codable {
    /// The sentence.
    public var sentence: SentenceID
    /// The book.
    public var book: BookID
    /// The new text.
    public var text: String
    /// The new page, if given.
    public var page: Int?
    /// Creates the payload.
    public init(sentence: SentenceID, book: BookID, text: String, page: Int?) {
        self.sentence = sentence; self.book = book; self.text = text; self.page = page
    }
}

/// The reader removed a collected sentence.
public struct SentenceRemoved: Hashable, Sendable, Codable {
    /// The sentence.
    public var sentence: SentenceID
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(sentence: SentenceID, book: BookID) { self.sentence = sentence; self.book = book }
}

/// The reader wrote a memo about the book.
public struct MemoWritten: Hashable, Sendable, Codable {
    /// The memo's identifier.
    public var memo: MemoID
    /// The book.
    public var book: BookID
    /// The memo, 1 ... ``Limits/memoLength`` characters.
    public var text: String
    /// The page it refers to, if given.
    public var page: Int?
    /// Creates the payload.
    public init(memo: MemoID, book: BookID, text: String, page: Int?) {
        self.memo = memo; self.book = book; self.text = text; self.page = page
    }
}

/// The reader edited a memo.
public struct MemoEdited: Hashable, Sendable, Codable {
    /// The memo.
    public var memo: MemoID
    /// The book.
    public var book: BookID
    /// The new text.
    public var text: String
    /// The new page, if given.
    public var page: Int?
    /// Creates the payload.
    public init(memo: MemoID, book: BookID, text: String, page: Int?) {
        self.memo = memo; self.book = book; self.text = text; self.page = page
    }
}

/// The reader removed a memo.
public struct MemoRemoved: Hashable, Sendable, Codable {
    /// The memo.
    public var memo: MemoID
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(memo: MemoID, book: BookID) { self.memo = memo; self.book = book }
}

// MARK: Rating and likes

/// The reader rated the book. Schema v2 (quarter stars); v1 held whole stars 1 ... 5 and is upcast.
public struct RatingSet: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// The rating.
    public var rating: Rating
    /// Creates the payload.
    public init(book: BookID, rating: Rating) { self.book = book; self.rating = rating }
}

/// The reader cleared the rating.
public struct RatingCleared: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(book: BookID) { self.book = book }
}

/// The reader liked the book (it shows on the bookshelf's "liked" side).
public struct BookLiked: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(book: BookID) { self.book = book }
}

/// The reader took the like back.
public struct BookUnliked: Hashable, Sendable, Codable {
    /// The book.
    public var book: BookID
    /// Creates the payload.
    public init(book: BookID) { self.book = book }
}

// MARK: Reader

/// The reader arranged the home list by hand.
public struct HomeOrderSet: Hashable, Sendable, Codable {
    /// Books in the reader's order; books not listed follow, by title.
    public var books: [BookID]
    /// Creates the payload.
    public init(books: [BookID]) { self.books = books }
}

/// The reader updated the profile.
public struct ProfileUpdated: Hashable, Sendable, Codable {
    /// The nickname, 1 ... ``Limits/nicknameLength`` characters.
    public var nickname: String
    /// The profile image's file name in the host app's documents folder (the image itself stays there).
    public var imageFileName: String?
    /// The app-wide theme.
    public var theme: Theme?
    /// Creates the payload.
    public init(nickname: String, imageFileName: String?, theme: Theme?) {
        self.nickname = nickname; self.imageFileName = imageFileName; self.theme = theme
    }
}

/// The reader set or changed the yearly challenge: a target of books finished and/or pages read in
/// one calendar year (as Goodreads, StoryGraph, Openreads and BookWyrm have). Setting it again for the
/// same year replaces the target.
public struct ChallengeSet: Hashable, Sendable, Codable {
    /// The calendar year, ``Limits/challengeYears``.
    public var year: Int
    /// Books to finish in the year, 1 ... ``Limits/challengeBooks``; `nil` when only pages count.
    public var books: Int?
    /// Pages to read in the year, 1 ... ``Limits/challengePages``; `nil` when only books count.
    public var pages: Int?
    /// Creates the payload (unchecked; ``validated()`` and the decide step check it).
    public init(year: Int, books: Int?, pages: Int?) { self.year = year; self.books = books; self.pages = pages }

    /// The payload if it keeps the rules: a year in ``Limits/challengeYears``, at least one target,
    /// each target positive and within its limit. The error names the field and the rule.
    public func validated() throws(ValidationError) -> ChallengeSet {
        guard Limits.challengeYears.contains(year) else {
            throw ValidationError(field: "year", rule: .outOfRange,
                                  detail: "year \(year) is outside \(Limits.challengeYears.lowerBound) ... \(Limits.challengeYears.upperBound)")
        }
        guard books != nil || pages != nil else {
            throw ValidationError(field: "books", rule: .empty, detail: "a challenge needs a target of books, of pages, or both")
        }
        if let books, !(1...Limits.challengeBooks).contains(books) {
            throw ValidationError(field: "books", rule: .outOfRange,
                                  detail: "a target of \(books) books is outside 1 ... \(Limits.challengeBooks)")
        }
        if let pages, !(1...Limits.challengePages).contains(pages) {
            throw ValidationError(field: "pages", rule: .outOfRange,
                                  detail: "a target of \(pages) pages is outside 1 ... \(Limits.challengePages)")
        }
        return self
    }
}

// MARK: Unknown

/// An event this build does not know (written by a newer version): kept byte for byte, skipped by
/// views with a count, never dropped.
public struct UnknownEvent: Hashable, Sendable {
    /// The type tag as stored.
    public var type: String
    /// The schema version as stored.
    public var schemaVersion: Int
    /// The payload bytes as stored, in the codec that read them.
    public var payload: [UInt8]
    /// Creates the value.
    public init(type: String, schemaVersion: Int, payload: [UInt8]) {
        self.type = type; self.schemaVersion = schemaVersion; self.payload = payload
    }
}

/// Text length limits, in characters (extended grapheme clusters), and the longest timed session.
/// Commands, both decoders and ``EventEnvelope/validate(pageCount:)`` apply the same limits; a
/// text over its limit is a ``ValidationError`` with rule `tooLong` naming the field and the limit.
public enum Limits {
    /// The longest collected sentence: 2,000 characters.
    public static let sentenceLength = 2_000
    /// The longest memo: 10,000 characters.
    public static let memoLength = 10_000
    /// The longest nickname: 40 characters.
    public static let nicknameLength = 40
    /// The longest timed session: 24 hours.
    public static let sessionSeconds = 86_400
    /// The longest subtitle: 500 characters (titles: ``BookMetadata/maxTitleLength``).
    public static let subtitleLength = 500
    /// The longest author line, roles included: 1,000 characters.
    public static let authorsLength = 1_000
    /// The longest publisher name: 300 characters.
    public static let publisherLength = 300
    /// The longest category path: 500 characters.
    public static let categoryPathLength = 500
    /// The longest cover or product URL: 2,048 characters.
    public static let urlLength = 2_048
    /// The longest theme name: 64 characters.
    public static let themeLength = 64
    /// The longest profile image file name: 255 characters.
    public static let imageFileNameLength = 255
    /// The longest event type tag: 100 ASCII letters, digits, `.`, `_` or `-`, starting with a letter.
    public static let typeTagLength = 100
    /// The years a date may fall in: 1900 ... 2199, the years an event instant may fall in (UTC).
    /// Finish dates, goal dates, a yearly challenge, a report's year and the dates the `replay`
    /// options take all keep to it.
    public static let years = 1900...2199
    /// The years a yearly challenge may be set for: ``years``.
    public static let challengeYears = years
    /// The largest payload of an event type this build does not know (a newer version's), as
    /// imported or merged: 1 MiB, far above any known payload (a memo of 10,000 characters is at
    /// most 40 KB).
    public static let unknownPayloadBytes = 1 << 20
    /// UTF-8 bytes allowed per character of a text's character limit: 4, the most one Unicode
    /// scalar takes. Every text has a byte limit beside its character limit (a memo: 10,000
    /// characters and 40,000 bytes), checked first, by commands, both decoders, imports and the
    /// sync server alike (``utf8Bytes(forCharacters:)``): a character is an extended grapheme
    /// cluster, which can hold any number of scalars (a letter with a million combining marks is
    /// one character of several megabytes), so a character limit alone bounds nothing. Hangul,
    /// CJK and most emoji fit the byte limit at the full character limit; with the largest
    /// texts and an unknown event's payload (``unknownPayloadBytes``), every valid record fits one
    /// push request of the sync server (4 MiB, base64 included).
    public static let bytesPerCharacter = 4
    /// The UTF-8 byte limit of a text whose character limit is `characters`.
    public static func utf8Bytes(forCharacters characters: Int) -> Int { characters * bytesPerCharacter }
    /// The largest yearly target of books: 10,000.
    public static let challengeBooks = 10_000
    /// The largest yearly target of pages: 10,000,000.
    public static let challengePages = 10_000_000
}
