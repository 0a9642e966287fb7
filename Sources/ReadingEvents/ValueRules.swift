/// The value rules of single fields, in one place: commands (``BookCommand/decide(for:in:at:)``,
/// ``ReaderCommand/decide(in:)``) check their input with them, and ``EventEnvelope/validate(pageCount:)``
/// checks events made elsewhere (an import) with the same functions, so both accept the same values.
enum ValueRules {
    /// A page position 0 ... the page count (or ``BookMetadata/maxPageCount`` when it is unknown).
    static func position(_ position: Int, field: String, pageCount: Int?) throws(ValidationError) {
        guard position >= 0 else {
            throw ValidationError(field: field, rule: .outOfRange, detail: "\(field) \(position) is below 0")
        }
        let upper = pageCount ?? BookMetadata.maxPageCount
        guard position <= upper else {
            throw ValidationError(field: field, rule: .outOfRange,
                                  detail: "\(field) \(position) is above the page count \(upper)")
        }
    }

    /// An optional page number 1 ... the page count (or ``BookMetadata/maxPageCount``).
    static func page(_ page: Int?, pageCount: Int?) throws(ValidationError) {
        guard let page else { return }
        let upper = pageCount ?? BookMetadata.maxPageCount
        guard (1...upper).contains(page) else {
            throw ValidationError(field: "page", rule: .outOfRange, detail: "page \(page) is outside 1 ... \(upper)")
        }
    }

    /// A required text: not only whitespace, at most `limit` characters.
    static func text(_ text: String, field: String, limit: Int) throws(ValidationError) {
        guard !text.trimmingWhitespace().isEmpty else {
            throw ValidationError(field: field, rule: .empty, detail: "the \(field) is empty")
        }
        try length(text, field: field, limit: limit)
    }

    /// A sentence's or memo's text (not empty, at most `limit` characters) and optional page.
    static func passage(_ text: String, limit: Int, page: Int?, pageCount: Int?) throws(ValidationError) {
        try self.text(text, field: "text", limit: limit)
        try self.page(page, pageCount: pageCount)
    }

    /// An optional text of at most `limit` characters (extended grapheme clusters, as everywhere).
    static func length(_ text: String?, field: String, limit: Int) throws(ValidationError) {
        // A character has at least one UTF-8 byte: a short text needs no grapheme count.
        guard let text, text.utf8.count > limit else { return }
        let characters = text.count
        guard characters <= limit else {
            throw ValidationError(field: field, rule: .tooLong,
                                  detail: "the \(field) has \(characters) characters, at most \(limit) are allowed")
        }
    }

    /// A theme name of at most ``Limits/themeLength`` characters.
    static func theme(_ theme: Theme?, field: String = "theme") throws(ValidationError) {
        try length(theme?.rawValue, field: field, limit: Limits.themeLength)
    }

    /// A goal's target date, not before its start.
    static func goalDates(start: LocalDate, target: LocalDate) throws(ValidationError) {
        guard target >= start else {
            throw ValidationError(field: "targetDate", rule: .targetBeforeStart, detail: "target date \(target) is before the start date \(start)")
        }
    }

    /// The status a book is added with: never `finished` (a finish carries its date).
    static func addedStatus(_ status: ReadingStatus) throws(ValidationError) {
        guard status != .finished else {
            throw ValidationError(field: "status", rule: .malformed,
                                  detail: "a book is added as wantToRead, reading or didNotFinish; finish it with finishBook")
        }
    }

    /// The status a book is moved to: never `finished` (a finish carries its date).
    static func changedStatus(_ status: ReadingStatus) throws(ValidationError) {
        guard status != .finished else {
            throw ValidationError(field: "status", rule: .malformed, detail: "finish a book with finishBook, which records its date")
        }
    }

    /// A timed session's length, 0 ... ``Limits/sessionSeconds``.
    static func duration(_ seconds: Int) throws(ValidationError) {
        guard (0...Limits.sessionSeconds).contains(seconds) else {
            throw ValidationError(field: "durationSeconds", rule: .outOfRange,
                                  detail: "\(seconds) seconds is outside 0 ... \(Limits.sessionSeconds)")
        }
    }

    /// A home-list order without a book twice.
    static func distinctBooks(_ books: [BookID]) throws(ValidationError) {
        var seen = Set<BookID>()
        for book in books where !seen.insert(book).inserted {
            throw ValidationError(field: "books", rule: .duplicateElement, detail: "book \(book) appears twice in the order")
        }
    }

    /// Both instants in 1900 ..< 2200, and the action not recorded before it happened.
    static func instants(occurredAt: Timestamp, recordedAt: Timestamp) throws(ValidationError) {
        _ = try occurredAt.validated(field: "occurredAt")
        _ = try recordedAt.validated(field: "recordedAt")
        guard occurredAt <= recordedAt else {
            throw ValidationError(field: "occurredAt", rule: .inconsistent,
                                  detail: "occurredAt \(occurredAt) is after recordedAt \(recordedAt); an action is recorded when or after it happens")
        }
    }
}
