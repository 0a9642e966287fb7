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

    /// A required text: something visible (see ``isBlank(_:)``), at most `limit` characters.
    static func text(_ text: String, field: String, limit: Int) throws(ValidationError) {
        try visible(text, field: field)
        try length(text, field: field, limit: limit)
    }

    /// A required text that shows something: not ``isBlank(_:)`` (`empty`).
    static func visible(_ text: String, field: String) throws(ValidationError) {
        guard !isBlank(text) else {
            throw ValidationError(field: field, rule: .empty,
                                  detail: "the \(field) is empty (it holds only whitespace or invisible characters)")
        }
    }

    /// Whether a text shows nothing: it holds only whitespace and invisible characters: controls
    /// (U+0000 ... U+001F, U+007F ...), format characters (zero-width space and joiners, bidi
    /// marks and isolates, the BOM, the soft hyphen) and other default-ignorable code points.
    /// Such characters next to visible ones are kept (a ZWJ emoji, a bidi mark in a title).
    static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            let p = scalar.properties
            return p.isWhitespace || p.isDefaultIgnorableCodePoint || p.generalCategory == .control || p.generalCategory == .format
        }
    }

    /// A calendar date (a goal's start or target, a finish) in ``Limits/years``.
    static func date(_ date: LocalDate, field: String) throws(ValidationError) {
        guard Limits.years.contains(date.year) else {
            throw ValidationError(field: field, rule: .outOfRange,
                                  detail: "\(field) \(date) is outside the years \(Limits.years.lowerBound) ... \(Limits.years.upperBound)")
        }
    }

    /// An unknown event's payload of at most ``Limits/unknownPayloadBytes`` bytes.
    static func unknownPayload(_ payload: [UInt8]) throws(ValidationError) {
        guard payload.count <= Limits.unknownPayloadBytes else {
            throw ValidationError(field: "rawPayload", rule: .tooLong,
                                  detail: "the payload of an unknown event has \(payload.count) bytes, at most \(Limits.unknownPayloadBytes) are allowed")
        }
    }

    /// A sentence's or memo's text (not empty, at most `limit` characters) and optional page.
    static func passage(_ text: String, limit: Int, page: Int?, pageCount: Int?) throws(ValidationError) {
        try self.text(text, field: "text", limit: limit)
        try self.page(page, pageCount: pageCount)
    }

    /// An optional text of at most `limit` characters (extended grapheme clusters, as everywhere)
    /// and at most ``Limits/utf8Bytes(forCharacters:)`` UTF-8 bytes (checked first: no grapheme
    /// count of megabytes).
    static func length(_ text: String?, field: String, limit: Int) throws(ValidationError) {
        // A character has at least one UTF-8 byte: a short text needs no grapheme count.
        guard let text, text.utf8.count > limit else { return }
        try utf8Length(text, field: field, limit: limit)
        let characters = text.count
        guard characters <= limit else {
            throw ValidationError(field: field, rule: .tooLong,
                                  detail: "the \(field) has \(characters) characters, at most \(limit) are allowed")
        }
    }

    /// A text of at most ``Limits/utf8Bytes(forCharacters:)`` UTF-8 bytes for a limit of `limit`
    /// characters (`tooLong`, naming the byte rule).
    static func utf8Length(_ text: String, field: String, limit: Int) throws(ValidationError) {
        let bytes = text.utf8.count, most = Limits.utf8Bytes(forCharacters: limit)
        guard bytes <= most else {
            throw ValidationError(field: field, rule: .tooLong,
                                  detail: "the \(field) has \(bytes) UTF-8 bytes, at most \(most) are allowed (\(Limits.bytesPerCharacter) per character of its limit of \(limit) characters)")
        }
    }

    /// A theme name of at most ``Limits/themeLength`` characters.
    static func theme(_ theme: Theme?, field: String = "theme") throws(ValidationError) {
        try length(theme?.rawValue, field: field, limit: Limits.themeLength)
    }

    /// A goal's dates: both in ``Limits/years``, the target not before the start.
    static func goalDates(start: LocalDate, target: LocalDate) throws(ValidationError) {
        try date(start, field: "startDate")
        try date(target, field: "targetDate")
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
