import Foundation

// The mapping between the model's payloads and the generated protobuf messages, both ways.
// Decoding checks every value with `DecodingChecks` and names fields as the JSON form does.

typealias ProtoStoredEvent = Readinghistory_V1_StoredEvent
typealias ProtoPayload = Readinghistory_V1_StoredEvent.OneOf_Payload

// MARK: Model -> protobuf

extension TaggedID {
    /// The 16 bytes as `Data`, for a protobuf `bytes` field.
    var protoBytes: Data { withUnsafeBytes(of: uuid.uuid) { Data($0) } }
}

extension LocalDate {
    var protoDay: Int32 { Int32(truncatingIfNeeded: dayNumber) }
}

extension ReadingStatus {
    var proto: Readinghistory_V1_ReadingStatus {
        switch self {
        case .wantToRead: .wantToRead
        case .reading: .reading
        case .finished: .finished
        case .didNotFinish: .didNotFinish
        }
    }
}

extension BookMetadata {
    /// The serialized `BookMetadata` message that `BookAdded` and `MetadataCorrected` carry.
    var protoBytes: Data {
        do {
            return try Readinghistory_V1_BookMetadata(self).serializedBytes()
        } catch {
            preconditionFailure("book metadata did not serialize: \(error)")  // only beyond 2 GiB
        }
    }
}

extension Readinghistory_V1_BookMetadata {
    init(_ m: BookMetadata) {
        self.init()
        title = m.title
        authors = m.authors
        if let v = m.subtitle { subtitle = v }
        if let v = m.publisher { publisher = v }
        if let v = m.publicationDate { publicationDate = v.protoDay }
        if let v = m.isbn13 { isbn13 = v.digits }
        if let v = m.pageCount { pageCount = Int64(v) }
        if let v = m.categoryPath { categoryPath = v }
        if let v = m.coverURL { coverURL = v }
        if let v = m.productLink { productLink = v }
        if let v = m.thicknessMillimetres { thicknessMillimetres = v }
    }
}

extension ProtoPayload {
    /// The protobuf payload of an event; `nil` for an unknown event (its bytes are kept elsewhere).
    init?(_ event: ReadingEvent) {
        switch event {
        case .bookAdded(let e):
            self = .bookAdded(.with { $0.book = e.book.protoBytes; $0.metadata = e.metadata.protoBytes; $0.status = e.status.proto })
        case .metadataCorrected(let e):
            self = .metadataCorrected(.with { $0.book = e.book.protoBytes; $0.metadata = e.metadata.protoBytes })
        case .bookRemoved(let e):
            self = .bookRemoved(.with { $0.book = e.book.protoBytes })
        case .statusChanged(let e):
            self = .readingStatusChanged(.with { $0.book = e.book.protoBytes; $0.status = e.status.proto })
        case .goalSet(let e):
            self = .goalSet(.with {
                $0.book = e.book.protoBytes; $0.startDate = e.startDate.protoDay; $0.targetDate = e.targetDate.protoDay
                if let theme = e.theme { $0.theme = theme.rawValue }
            })
        case .goalChanged(let e):
            self = .goalChanged(.with {
                $0.book = e.book.protoBytes; $0.targetDate = e.targetDate.protoDay
                if let theme = e.theme { $0.theme = theme.rawValue }
            })
        case .goalDeleted(let e):
            self = .goalDeleted(.with { $0.book = e.book.protoBytes })
        case .pagesRead(let e):
            self = .pagesRead(.with { $0.book = e.book.protoBytes; $0.position = Int64(e.position) })
        case .progressCorrected(let e):
            self = .progressCorrected(.with { $0.book = e.book.protoBytes; $0.position = Int64(e.position) })
        case .readThroughStarted(let e):
            self = .readThroughStarted(.with { $0.book = e.book.protoBytes; $0.readThrough = Int64(e.readThrough) })
        case .sessionStarted(let e):
            self = .sessionStarted(.with { $0.session = e.session.protoBytes; $0.book = e.book.protoBytes })
        case .sessionPaused(let e):
            self = .sessionPaused(.with { $0.session = e.session.protoBytes; $0.book = e.book.protoBytes })
        case .sessionResumed(let e):
            self = .sessionResumed(.with { $0.session = e.session.protoBytes; $0.book = e.book.protoBytes })
        case .sessionFinished(let e):
            self = .sessionFinished(.with {
                $0.session = e.session.protoBytes; $0.book = e.book.protoBytes
                if let end = e.endPosition { $0.endPosition = Int64(end) }
                $0.durationSeconds = Int64(e.durationSeconds)
            })
        case .sessionDiscarded(let e):
            self = .sessionDiscarded(.with { $0.session = e.session.protoBytes; $0.book = e.book.protoBytes })
        case .bookFinished(let e):
            self = .bookFinished(.with { $0.book = e.book.protoBytes; $0.finishedOn = e.finishedOn.protoDay })
        case .finishUndone(let e):
            self = .finishUndone(.with { $0.book = e.book.protoBytes })
        case .sentenceCollected(let e):
            self = .sentenceCollected(.with {
                $0.sentence = e.sentence.protoBytes; $0.book = e.book.protoBytes; $0.text = e.text
                if let page = e.page { $0.page = Int64(page) }
            })
        case .sentenceEdited(let e):
            self = .sentenceEdited(.with {
                $0.sentence = e.sentence.protoBytes; $0.book = e.book.protoBytes; $0.text = e.text
                if let page = e.page { $0.page = Int64(page) }
            })
        case .sentenceRemoved(let e):
            self = .sentenceRemoved(.with { $0.sentence = e.sentence.protoBytes; $0.book = e.book.protoBytes })
        case .memoWritten(let e):
            self = .memoWritten(.with {
                $0.memo = e.memo.protoBytes; $0.book = e.book.protoBytes; $0.text = e.text
                if let page = e.page { $0.page = Int64(page) }
            })
        case .memoEdited(let e):
            self = .memoEdited(.with {
                $0.memo = e.memo.protoBytes; $0.book = e.book.protoBytes; $0.text = e.text
                if let page = e.page { $0.page = Int64(page) }
            })
        case .memoRemoved(let e):
            self = .memoRemoved(.with { $0.memo = e.memo.protoBytes; $0.book = e.book.protoBytes })
        case .ratingSet(let e):
            self = .ratingSet(.with { $0.book = e.book.protoBytes; $0.quarters = Int64(e.rating.quarters) })
        case .ratingCleared(let e):
            self = .ratingCleared(.with { $0.book = e.book.protoBytes })
        case .bookLiked(let e):
            self = .bookLiked(.with { $0.book = e.book.protoBytes })
        case .bookUnliked(let e):
            self = .bookUnliked(.with { $0.book = e.book.protoBytes })
        case .homeOrderSet(let e):
            self = .homeOrderSet(.with { $0.books = e.books.map(\.protoBytes) })
        case .profileUpdated(let e):
            self = .profileUpdated(.with {
                $0.nickname = e.nickname
                if let image = e.imageFileName { $0.imageFileName = image }
                if let theme = e.theme { $0.theme = theme.rawValue }
            })
        case .challengeSet(let e):
            self = .challengeSet(.with {
                $0.year = Int64(e.year)
                if let books = e.books { $0.books = Int64(books) }
                if let pages = e.pages { $0.pages = Int64(pages) }
            })
        case .unknown:
            return nil
        }
    }
}

// MARK: Protobuf -> model

/// Reads identifiers and other fields out of generated messages, with the field names of the
/// JSON form.
enum ProtoRead {
    @inline(__always)
    static func id<Tag>(_ data: Data, _ field: String) throws(EventDecodingError) -> TaggedID<Tag> {
        let id: TaggedID<Tag>? = data.withUnsafeBytes { TaggedID(exactly16: $0) }
        guard let id else {
            if data.isEmpty { throw .missing(field) }
            throw .invalid(field, .malformed, "a UUID has 16 bytes, not \(data.count)")
        }
        return id
    }

    /// An optional identifier: empty bytes mean absent.
    @inline(__always)
    static func optionalID<Tag>(_ data: Data, _ field: String) throws(EventDecodingError) -> TaggedID<Tag>? {
        data.isEmpty ? nil : try id(data, field)
    }

    static func status(_ value: Readinghistory_V1_ReadingStatus, _ field: String) throws(EventDecodingError) -> ReadingStatus {
        switch value {
        case .wantToRead: return .wantToRead
        case .reading: return .reading
        case .finished: return .finished
        case .didNotFinish: return .didNotFinish
        case .unspecified: throw .missing(field)
        case .UNRECOGNIZED(let raw): throw .invalid(field, .outOfRange, "\(raw) is not a reading status")
        }
    }

    static func theme(_ has: Bool, _ value: String) throws(EventDecodingError) -> Theme? {
        try DecodingChecks.theme(has ? value : nil, "data.theme")
    }

    static func page(_ has: Bool, _ value: Int64, _ field: String) throws(EventDecodingError) -> Int? {
        has ? try DecodingChecks.page(value, field) : nil
    }

    /// Parses the serialized `BookMetadata` message of `BookAdded` and `MetadataCorrected`.
    static func metadata(_ bytes: Data) throws(EventDecodingError) -> BookMetadata {
        guard !bytes.isEmpty else { throw .missing("data.metadata") }
        let message: Readinghistory_V1_BookMetadata
        do {
            message = try Readinghistory_V1_BookMetadata(serializedBytes: bytes, partial: true)
        } catch {
            throw EventDecodingError(field: "data.metadata", problem: .malformed,
                                     detail: "the bytes are not a valid BookMetadata protobuf message (\(error))")
        }
        return try metadata(message)
    }

    /// Parses a serialized `BookMetadata` message in a borrowed buffer (the fast path's form).
    static func metadata(_ bytes: UnsafeRawBufferPointer) throws(EventDecodingError) -> BookMetadata {
        guard !bytes.isEmpty else { throw .missing("data.metadata") }
        let message: Readinghistory_V1_BookMetadata
        do {
            message = try Readinghistory_V1_BookMetadata(serializedBytes: bytes.bytes, partial: true)
        } catch {
            throw EventDecodingError(field: "data.metadata", problem: .malformed,
                                     detail: "the bytes are not a valid BookMetadata protobuf message (\(error))")
        }
        return try metadata(message)
    }

    static func metadata(_ m: Readinghistory_V1_BookMetadata) throws(EventDecodingError) -> BookMetadata {
        let metadata = BookMetadata(
            title: m.title,
            subtitle: m.hasSubtitle ? m.subtitle : nil,
            authors: m.authors,
            publisher: m.hasPublisher ? m.publisher : nil,
            publicationDate: m.hasPublicationDate
                ? try DecodingChecks.date(dayNumber: Int64(m.publicationDate), "data.metadata.publicationDate") : nil,
            isbn13: m.hasIsbn13 ? try DecodingChecks.isbn(m.isbn13, "data.metadata.isbn13") : nil,
            pageCount: m.hasPageCount ? try pageCount(m.pageCount) : nil,
            categoryPath: m.hasCategoryPath ? m.categoryPath : nil,
            coverURL: m.hasCoverURL ? m.coverURL : nil,
            productLink: m.hasProductLink ? m.productLink : nil,
            thicknessMillimetres: m.hasThicknessMillimetres ? m.thicknessMillimetres : nil)
        return try DecodingChecks.metadata(metadata)
    }

    private static func pageCount(_ value: Int64) throws(EventDecodingError) -> Int {
        guard (1...Int64(BookMetadata.maxPageCount)).contains(value) else {
            throw .invalid("data.metadata.pageCount", .outOfRange, "\(value) pages is outside 1 ... \(BookMetadata.maxPageCount)")
        }
        return Int(value)
    }

    /// The model payload of a protobuf payload, at the version it was stored with.
    static func payload(_ payload: consuming ProtoPayload) throws(EventDecodingError) -> StoredPayload {
        switch payload {
        case .bookAdded(let m):
            return .event(.bookAdded(BookAdded(book: try id(m.book, "data.book"), metadata: try metadata(m.metadata),
                                               status: try status(m.status, "data.status"))))
        case .metadataCorrected(let m):
            return .event(.metadataCorrected(MetadataCorrected(book: try id(m.book, "data.book"),
                                                               metadata: try metadata(m.metadata))))
        case .bookRemoved(let m):
            return .event(.bookRemoved(BookRemoved(book: try id(m.book, "data.book"))))
        case .readingStatusChanged(let m):
            return .event(.statusChanged(ReadingStatusChanged(book: try id(m.book, "data.book"),
                                                              status: try status(m.status, "data.status"))))
        case .goalSet(let m):
            let start = try DecodingChecks.date(dayNumber: Int64(m.startDate), "data.startDate")
            let target = try DecodingChecks.date(dayNumber: Int64(m.targetDate), "data.targetDate")
            try DecodingChecks.goalDates(start: start, target: target)
            return .event(.goalSet(GoalSet(book: try id(m.book, "data.book"), startDate: start, targetDate: target,
                                           theme: try theme(m.hasTheme, m.theme))))
        case .challengeSet(let m):
            return .event(.challengeSet(try DecodingChecks.challenge(
                year: m.year, books: m.hasBooks ? m.books : nil, pages: m.hasPages ? m.pages : nil)))
        case .goalChanged(let m):
            return .event(.goalChanged(GoalChanged(
                book: try id(m.book, "data.book"),
                targetDate: try DecodingChecks.date(dayNumber: Int64(m.targetDate), "data.targetDate"),
                theme: try theme(m.hasTheme, m.theme))))
        case .goalDeleted(let m):
            return .event(.goalDeleted(GoalDeleted(book: try id(m.book, "data.book"))))
        case .pagesRead(let m):
            return .event(.pagesRead(PagesRead(book: try id(m.book, "data.book"),
                                               position: try DecodingChecks.page(m.position, "data.position"))))
        case .progressCorrected(let m):
            return .event(.progressCorrected(ProgressCorrected(
                book: try id(m.book, "data.book"), position: try DecodingChecks.page(m.position, "data.position"))))
        case .readThroughStarted(let m):
            return .event(.readThroughStarted(ReadThroughStarted(
                book: try id(m.book, "data.book"),
                readThrough: try DecodingChecks.readThrough(m.readThrough, "data.readThrough"))))
        case .sessionStarted(let m):
            return .event(.sessionStarted(SessionStarted(session: try id(m.session, "data.session"),
                                                         book: try id(m.book, "data.book"))))
        case .sessionPaused(let m):
            return .event(.sessionPaused(SessionPaused(session: try id(m.session, "data.session"),
                                                       book: try id(m.book, "data.book"))))
        case .sessionResumed(let m):
            return .event(.sessionResumed(SessionResumed(session: try id(m.session, "data.session"),
                                                         book: try id(m.book, "data.book"))))
        case .sessionFinished(let m):
            return .event(.sessionFinished(SessionFinished(
                session: try id(m.session, "data.session"), book: try id(m.book, "data.book"),
                endPosition: try page(m.hasEndPosition, m.endPosition, "data.endPosition"),
                durationSeconds: try DecodingChecks.duration(m.durationSeconds, "data.durationSeconds"))))
        case .sessionDiscarded(let m):
            return .event(.sessionDiscarded(SessionDiscarded(session: try id(m.session, "data.session"),
                                                             book: try id(m.book, "data.book"))))
        case .bookFinished(let m):
            return .event(.bookFinished(BookFinished(
                book: try id(m.book, "data.book"),
                finishedOn: try DecodingChecks.date(dayNumber: Int64(m.finishedOn), "data.finishedOn"))))
        case .finishUndone(let m):
            return .event(.finishUndone(FinishUndone(book: try id(m.book, "data.book"))))
        case .sentenceCollected(let m):
            return .event(.sentenceCollected(SentenceCollected(
                sentence: try id(m.sentence, "data.sentence"), book: try id(m.book, "data.book"),
                text: try DecodingChecks.text(m.text, limit: Limits.sentenceLength, "data.text"),
                page: try page(m.hasPage, m.page, "data.page"))))
        case .sentenceEdited(let m):
            return .event(.sentenceEdited(SentenceEdited(
                sentence: try id(m.sentence, "data.sentence"), book: try id(m.book, "data.book"),
                text: try DecodingChecks.text(m.text, limit: Limits.sentenceLength, "data.text"),
                page: try page(m.hasPage, m.page, "data.page"))))
        case .sentenceRemoved(let m):
            return .event(.sentenceRemoved(SentenceRemoved(sentence: try id(m.sentence, "data.sentence"),
                                                           book: try id(m.book, "data.book"))))
        case .memoWritten(let m):
            return .event(.memoWritten(MemoWritten(
                memo: try id(m.memo, "data.memo"), book: try id(m.book, "data.book"),
                text: try DecodingChecks.text(m.text, limit: Limits.memoLength, "data.text"),
                page: try page(m.hasPage, m.page, "data.page"))))
        case .memoEdited(let m):
            return .event(.memoEdited(MemoEdited(
                memo: try id(m.memo, "data.memo"), book: try id(m.book, "data.book"),
                text: try DecodingChecks.text(m.text, limit: Limits.memoLength, "data.text"),
                page: try page(m.hasPage, m.page, "data.page"))))
        case .memoRemoved(let m):
            return .event(.memoRemoved(MemoRemoved(memo: try id(m.memo, "data.memo"), book: try id(m.book, "data.book"))))
        case .ratingSetV1(let m):
            // Range-checked by the upcaster, the one place that knows what v1 meant.
            guard let stars = Int(exactly: m.rating) else {
                throw .invalid("data.rating", .outOfRange, "\(m.rating) whole stars is outside 1 ... 5")
            }
            return .ratingSetV1(RatingSetV1(book: try id(m.book, "data.book"), rating: stars))
        case .ratingSet(let m):
            return .event(.ratingSet(RatingSet(book: try id(m.book, "data.book"),
                                               rating: try DecodingChecks.rating(quarters: m.quarters, "data.rating"))))
        case .ratingCleared(let m):
            return .event(.ratingCleared(RatingCleared(book: try id(m.book, "data.book"))))
        case .bookLiked(let m):
            return .event(.bookLiked(BookLiked(book: try id(m.book, "data.book"))))
        case .bookUnliked(let m):
            return .event(.bookUnliked(BookUnliked(book: try id(m.book, "data.book"))))
        case .homeOrderSet(let m):
            var books: [BookID] = []
            books.reserveCapacity(m.books.count)
            for (index, data) in m.books.enumerated() { books.append(try id(data, "data.books[\(index)]")) }
            return .event(.homeOrderSet(HomeOrderSet(books: try DecodingChecks.distinctBooks(books, "data.books"))))
        case .profileUpdated(let m):
            return .event(.profileUpdated(ProfileUpdated(
                nickname: try DecodingChecks.text(m.nickname, limit: Limits.nicknameLength, "data.nickname"),
                imageFileName: try DecodingChecks.limited(m.hasImageFileName ? m.imageFileName : nil,
                                                          limit: Limits.imageFileNameLength, "data.imageFileName"),
                theme: try theme(m.hasTheme, m.theme))))
        }
    }
}
