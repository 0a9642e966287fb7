import Foundation
import PropertyBased
import Testing
@testable import ReadingEvents

/// Random, valid envelopes of every event type, for the codec property tests.
///
/// Runs are reproducible: `seeded(_:count:seed:_:)` drives the generators with a fixed `Xoshiro`
/// seed. (PropertyBased's `.fixedSeed` trait is meant for reproducing a failure and records an
/// issue whenever the test passes, so it cannot stay on a committed test.)
enum CodecSamples {
    /// Every event type the generator produces, one case each; the coverage test checks that these
    /// are exactly ``EventType/known``.
    enum Kind: CaseIterable {
        case bookAdded, metadataCorrected, bookRemoved, statusChanged, goalSet, goalChanged, goalDeleted
        case pagesRead, progressCorrected, readThroughStarted
        case sessionStarted, sessionPaused, sessionResumed, sessionFinished, sessionDiscarded
        case bookFinished, finishUndone
        case sentenceCollected, sentenceEdited, sentenceRemoved, memoWritten, memoEdited, memoRemoved
        case ratingSet, ratingCleared, bookLiked, bookUnliked, homeOrderSet, profileUpdated
        case challengeSet
    }

    static let zones = ["Asia/Seoul", "America/New_York", "Europe/Berlin", "UTC", "Australia/Lord_Howe",
                        "America/St_Johns", "Asia/Kathmandu", "Pacific/Chatham", "America/Sao_Paulo"]

    /// Text pieces: Korean, emoji, combining marks, JSON-escaped characters, whitespace.
    static let pieces = ["채식주의자", "소년이 온다", "읽은 문장", "한강", " ", "\n", "\t", "🙂", "👩‍👩‍👧", "e\u{301}",
                         "\"quoted\"", "back\\slash", "a/b", "\u{0}", "\u{1F}", "<tag>", "&", "ascii text", "1234",
                         "\u{2028}", "ﬁ", "Ω"]

    static func id<Tag>(_ rng: inout some RandomNumberGenerator) -> TaggedID<Tag> {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
        return TaggedID(bytes: bytes)!
    }

    /// A text of at most `limit` characters that is not only whitespace.
    static func text(_ rng: inout some RandomNumberGenerator, maxPieces: Int = 12, limit: Int) -> String {
        var text = ["가", "A", "책", "z", "🙂"].randomElement(using: &rng)!
        for _ in 0..<Int.random(in: 0...maxPieces, using: &rng) { text += pieces.randomElement(using: &rng)! }
        while text.count > limit { text.removeLast() }
        return text
    }

    static func optionalText(_ rng: inout some RandomNumberGenerator) -> String? {
        Bool.random(using: &rng) ? text(&rng, limit: 200) : nil
    }

    static func date(_ rng: inout some RandomNumberGenerator) -> LocalDate {
        // Mostly recent dates, sometimes anywhere in 0001 ... 9999.
        if Int.random(in: 0..<8, using: &rng) == 0 {
            return LocalDate(dayNumber: Int(Int64.random(in: DecodingChecks.dayNumberRange, using: &rng)))
        }
        return LocalDate(dayNumber: Int.random(in: 18_000...22_000, using: &rng))
    }

    static func theme(_ rng: inout some RandomNumberGenerator) -> Theme? {
        Bool.random(using: &rng) ? Theme(rawValue: ["orange", "mint", "보라", ""].randomElement(using: &rng)!) : nil
    }

    static func isbn(_ rng: inout some RandomNumberGenerator) -> ISBN13 {
        var digits = [978, 979].randomElement(using: &rng)!.description.map { Int(String($0))! }
        while digits.count < 12 { digits.append(Int.random(in: 0...9, using: &rng)) }
        var sum = 0
        for (i, d) in digits.enumerated() { sum += i % 2 == 0 ? d : 3 * d }
        digits.append((10 - sum % 10) % 10)
        return try! ISBN13(digits.map(String.init).joined())
    }

    static func metadata(_ rng: inout some RandomNumberGenerator) -> BookMetadata {
        BookMetadata(
            title: text(&rng, limit: BookMetadata.maxTitleLength),
            subtitle: optionalText(&rng),
            authors: Bool.random(using: &rng) ? "한강 (지은이), Deborah Smith (옮긴이)" : "",
            publisher: optionalText(&rng),
            publicationDate: Bool.random(using: &rng) ? date(&rng) : nil,
            isbn13: Bool.random(using: &rng) ? isbn(&rng) : nil,
            pageCount: Bool.random(using: &rng) ? Int.random(in: 1...BookMetadata.maxPageCount, using: &rng) : nil,
            categoryPath: Bool.random(using: &rng) ? "국내도서>소설/시/희곡>한국소설>2000년대 이후 한국소설" : nil,
            coverURL: Bool.random(using: &rng) ? "https://image.aladin.co.kr/product/123/45/cover.jpg" : nil,
            productLink: optionalText(&rng),
            thicknessMillimetres: Bool.random(using: &rng) ? max(0.001, Double.random(in: 0...1000, using: &rng)) : nil)
    }

    static func page(_ rng: inout some RandomNumberGenerator) -> Int {
        Int.random(in: 0...BookMetadata.maxPageCount, using: &rng)
    }

    static func optionalPage(_ rng: inout some RandomNumberGenerator) -> Int? {
        Bool.random(using: &rng) ? page(&rng) : nil
    }

    static func status(_ rng: inout some RandomNumberGenerator) -> ReadingStatus {
        ReadingStatus.allCases.randomElement(using: &rng)!
    }

    static func event(_ kind: Kind, _ rng: inout some RandomNumberGenerator) -> ReadingEvent {
        let book: BookID = id(&rng)
        switch kind {
        case .bookAdded: return .bookAdded(BookAdded(book: book, metadata: metadata(&rng), status: status(&rng)))
        case .metadataCorrected: return .metadataCorrected(MetadataCorrected(book: book, metadata: metadata(&rng)))
        case .bookRemoved: return .bookRemoved(BookRemoved(book: book))
        case .statusChanged: return .statusChanged(ReadingStatusChanged(book: book, status: status(&rng)))
        case .goalSet:
            let start = date(&rng)
            let target = LocalDate(dayNumber: min(start.dayNumber + Int.random(in: 0...400, using: &rng), 2_932_896))
            return .goalSet(GoalSet(book: book, startDate: start, targetDate: target, theme: theme(&rng)))
        case .goalChanged: return .goalChanged(GoalChanged(book: book, targetDate: date(&rng), theme: theme(&rng)))
        case .goalDeleted: return .goalDeleted(GoalDeleted(book: book))
        case .pagesRead: return .pagesRead(PagesRead(book: book, position: page(&rng)))
        case .progressCorrected: return .progressCorrected(ProgressCorrected(book: book, position: page(&rng)))
        case .readThroughStarted:
            return .readThroughStarted(ReadThroughStarted(book: book, readThrough: Int.random(in: 1...50, using: &rng)))
        case .sessionStarted: return .sessionStarted(SessionStarted(session: id(&rng), book: book))
        case .sessionPaused: return .sessionPaused(SessionPaused(session: id(&rng), book: book))
        case .sessionResumed: return .sessionResumed(SessionResumed(session: id(&rng), book: book))
        case .sessionFinished:
            return .sessionFinished(SessionFinished(session: id(&rng), book: book, endPosition: optionalPage(&rng),
                                                    durationSeconds: Int.random(in: 0...Limits.sessionSeconds, using: &rng)))
        case .sessionDiscarded: return .sessionDiscarded(SessionDiscarded(session: id(&rng), book: book))
        case .bookFinished: return .bookFinished(BookFinished(book: book, finishedOn: date(&rng)))
        case .finishUndone: return .finishUndone(FinishUndone(book: book))
        case .sentenceCollected:
            return .sentenceCollected(SentenceCollected(sentence: id(&rng), book: book,
                                                        text: text(&rng, limit: Limits.sentenceLength), page: optionalPage(&rng)))
        case .sentenceEdited:
            return .sentenceEdited(SentenceEdited(sentence: id(&rng), book: book,
                                                  text: text(&rng, limit: Limits.sentenceLength), page: optionalPage(&rng)))
        case .sentenceRemoved: return .sentenceRemoved(SentenceRemoved(sentence: id(&rng), book: book))
        case .memoWritten:
            return .memoWritten(MemoWritten(memo: id(&rng), book: book, text: text(&rng, maxPieces: 60, limit: Limits.memoLength),
                                            page: optionalPage(&rng)))
        case .memoEdited:
            return .memoEdited(MemoEdited(memo: id(&rng), book: book, text: text(&rng, limit: Limits.memoLength),
                                          page: optionalPage(&rng)))
        case .memoRemoved: return .memoRemoved(MemoRemoved(memo: id(&rng), book: book))
        case .ratingSet:
            return .ratingSet(RatingSet(book: book, rating: try! Rating(quarters: Int.random(in: 1...20, using: &rng))))
        case .ratingCleared: return .ratingCleared(RatingCleared(book: book))
        case .bookLiked: return .bookLiked(BookLiked(book: book))
        case .bookUnliked: return .bookUnliked(BookUnliked(book: book))
        case .homeOrderSet:
            return .homeOrderSet(HomeOrderSet(books: (0..<Int.random(in: 0...12, using: &rng)).map { _ in id(&rng) }))
        case .profileUpdated:
            return .profileUpdated(ProfileUpdated(nickname: text(&rng, maxPieces: 6, limit: Limits.nicknameLength),
                                                  imageFileName: Bool.random(using: &rng) ? "profile-\(UInt16.random(in: 0...999, using: &rng)).png" : nil,
                                                  theme: theme(&rng)))
        case .challengeSet:
            // At least one target; each in its full range, often at the edges.
            let which = Int.random(in: 0...2, using: &rng)
            return .challengeSet(ChallengeSet(
                year: Int.random(in: Limits.challengeYears, using: &rng),
                books: which == 1 ? nil : [1, Limits.challengeBooks, Int.random(in: 1...60, using: &rng)].randomElement(using: &rng)!,
                pages: which == 2 ? nil : [1, Limits.challengePages, Int.random(in: 1...30_000, using: &rng)].randomElement(using: &rng)!))
        }
    }

    static func instant(_ rng: inout some RandomNumberGenerator) -> Timestamp {
        if Int.random(in: 0..<8, using: &rng) == 0 {
            return Timestamp(microseconds: Int64.random(
                in: Timestamp.earliestAllowed.microseconds..<Timestamp.latestAllowed.microseconds, using: &rng))
        }
        // 2020 ... 2030
        return Timestamp(microseconds: Int64.random(in: 1_577_836_800_000_000...1_893_456_000_000_000, using: &rng))
    }

    static func envelope(with event: ReadingEvent, _ rng: inout some RandomNumberGenerator) -> EventEnvelope {
        let reader: ReaderID = id(&rng)
        return EventEnvelope(
            position: UInt64.random(in: 1...UInt64.max, using: &rng) >> UInt64.random(in: 0...63, using: &rng),
            eventID: id(&rng), streamVersion: UInt64.random(in: 1...100_000, using: &rng), reader: reader,
            occurredAt: instant(&rng), timeZone: ZoneID(unchecked: zones.randomElement(using: &rng)!),
            recordedAt: instant(&rng), event: event,
            correlationID: Bool.random(using: &rng) ? id(&rng) : nil,
            causationID: Bool.random(using: &rng) ? id(&rng) : nil)
    }

    static func envelope(_ rng: inout some RandomNumberGenerator) -> EventEnvelope {
        envelope(with: event(Kind.allCases.randomElement(using: &rng)!, &rng), &rng)
    }

    static func unknownEnvelope(_ rng: inout some RandomNumberGenerator) -> EventEnvelope {
        let payload = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let unknown = UnknownEvent(type: ["ShelfRenamed", "PagesRead", "RatingSet", "X"].randomElement(using: &rng)!,
                                   schemaVersion: Int.random(in: 3...9, using: &rng), payload: payload)
        return envelope(with: .unknown(unknown), &rng)
    }

    /// PropertyBased generators over the samples above.
    static let envelopes = Generator<EventEnvelope, Shrink.None<EventEnvelope>>(run: { rng in envelope(&rng) })
    static let unknownEnvelopes = Generator<EventEnvelope, Shrink.None<EventEnvelope>>(run: { rng in unknownEnvelope(&rng) })
}

/// Runs `body` on `count` values of `generator`, drawn with a fixed seed so every run sees the same
/// values; a failure names the iteration and the value.
func seeded<Value>(_ generator: Generator<Value, some Sequence>, count: Int,
                   seed: (UInt64, UInt64, UInt64, UInt64),
                   _ body: (Value) throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
    var rng = Xoshiro(seed: seed)
    for iteration in 0..<count {
        let value = generator.run(using: &rng)
        do {
            try body(value)
        } catch {
            Issue.record("iteration \(iteration): \(error)\nvalue: \(value)", sourceLocation: sourceLocation)
            return
        }
    }
}
