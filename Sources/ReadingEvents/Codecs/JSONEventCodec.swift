import Foundation

/// The exchange codec: one ``EventEnvelope`` as one line of JSON (JSON Lines), for export, import
/// and audit. The format is described, key by key, in the Codecs article.
///
/// Output is byte-stable: keys sorted, no whitespace, `/` not escaped, absent optional fields left
/// out, instants as ISO 8601 UTC with microseconds. Payload keys are the property names of the
/// payload types (``PagesRead/position``), ratings are star numbers (`4.25`), dates `YYYY-MM-DD`,
/// identifiers lowercase UUIDs. An unknown event is written as `"data":null` with its payload bytes
/// in `"rawPayload"` (base64), so it survives an export and an import unchanged.
///
/// Decoding checks everything the binary codec checks, and looks the time zone up in the tz
/// database for real (imported data was never checked); it goes through
/// ``EventUpcaster/upcast(type:schemaVersion:payload:)``, so a v1 `RatingSet` line
/// (`{"rating":4}`, whole stars) becomes quarters 16. Failures throw ``EventDecodingError`` naming
/// the key path (`data.position: expected an integer`).
///
/// `Sendable`: an uninhabited namespace.
public enum JSONEventCodec {
    /// The envelope as one JSON object, UTF-8, without a line break.
    public static func encode(_ envelope: EventEnvelope) -> [UInt8] {
        do {
            return Array(try encoder().encode(Line(envelope: envelope)))
        } catch {
            preconditionFailure("an event did not encode as JSON: \(error)")
        }
    }

    /// The `data` object of an event's line alone, keys sorted as in ``encode(_:)``; `nil` for an
    /// event this build does not know (its line carries `"data":null` and a `rawPayload`).
    public static func encodeData(_ event: ReadingEvent) -> [UInt8]? {
        if case .unknown = event { return nil }
        do {
            return Array(try encoder().encode(Payload(event: event)))
        } catch {
            preconditionFailure("an event's data did not encode as JSON: \(error)")
        }
    }

    /// The encoder of lines and their `data`: keys sorted, `/` not escaped.
    private static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Validated events hold finite numbers only; should one not, it must not stop an export:
        // the line then carries a string the decoder rejects with a typed error.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "+Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }

    /// The envelope as one JSON line, without a line break.
    public static func encodeLine(_ envelope: EventEnvelope) -> String {
        String(decoding: encode(envelope), as: UTF8.self)
    }

    /// JSON Lines: each envelope on its own line, each line ended by `\n`.
    public static func encodeLines(_ envelopes: some Sequence<EventEnvelope>) -> [UInt8] {
        var out: [UInt8] = []
        for envelope in envelopes {
            out.append(contentsOf: encode(envelope))
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// Decodes one line (one JSON object; surrounding whitespace is allowed). A key written twice
    /// in one object is refused (`invalid`, rule `duplicateElement`, naming the key path).
    public static func decode(_ line: some Collection<UInt8>) throws(EventDecodingError) -> EventEnvelope {
        if let path = JSONDuplicateKeys.first(in: line) {
            throw EventDecodingError.invalid(path, .duplicateElement, "the key appears twice in one object; a line states each field once")
        }
        do {
            return try JSONDecoder().decode(DecodedLine.self, from: Data(line)).envelope
        } catch let error as EventDecodingError {
            throw error
        } catch {
            throw EventDecodingError(field: "line", problem: .malformed, detail: "the line is not valid JSON")
        }
    }

    /// Decodes one line given as text.
    public static func decode(_ line: String) throws(EventDecodingError) -> EventEnvelope {
        try decode(Array(line.utf8))
    }
}

/// The JSON keys of an envelope.
private enum EnvelopeKey: String, CodingKey {
    case position, eventID, stream, streamVersion, reader, occurredAt, timeZone, recordedAt, type, schemaVersion
    case correlationID, causationID, replica, sequence, stamp, data, rawPayload
}

private struct Line: Encodable {
    let envelope: EventEnvelope

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: EnvelopeKey.self)
        let e = envelope
        try c.encode(e.position, forKey: .position)
        try c.encode(e.eventID, forKey: .eventID)
        try c.encode(e.stream.description, forKey: .stream)
        try c.encode(e.streamVersion, forKey: .streamVersion)
        try c.encode(e.reader, forKey: .reader)
        try c.encode(e.occurredAt, forKey: .occurredAt)
        try c.encode(e.timeZone.identifier, forKey: .timeZone)
        try c.encode(e.recordedAt, forKey: .recordedAt)
        let type = e.event.type
        try c.encode(type.tag, forKey: .type)
        try c.encode(type.schemaVersion, forKey: .schemaVersion)
        try c.encodeIfPresent(e.correlationID, forKey: .correlationID)
        try c.encodeIfPresent(e.causationID, forKey: .causationID)
        if let origin = e.origin, origin.replica != .provisional {
            try c.encode(origin.replica, forKey: .replica)
            try c.encode(origin.sequence, forKey: .sequence)
            try c.encode(origin.stamp, forKey: .stamp)
        }
        if case .unknown(let u) = e.event {
            try c.encodeNil(forKey: .data)
            try c.encode(Data(u.payload).base64EncodedString(), forKey: .rawPayload)
        } else {
            try c.encode(Payload(event: e.event), forKey: .data)
        }
    }
}

/// The `data` object of a line: the payload of a known event (an unknown one encodes as `null`).
private struct Payload: Encodable {
    let event: ReadingEvent

    func encode(to encoder: any Encoder) throws {
        switch event {
        case .bookAdded(let p): try p.encode(to: encoder)
        case .metadataCorrected(let p): try p.encode(to: encoder)
        case .bookRemoved(let p): try p.encode(to: encoder)
        case .statusChanged(let p): try p.encode(to: encoder)
        case .goalSet(let p): try p.encode(to: encoder)
        case .goalChanged(let p): try p.encode(to: encoder)
        case .goalDeleted(let p): try p.encode(to: encoder)
        case .pagesRead(let p): try p.encode(to: encoder)
        case .progressCorrected(let p): try p.encode(to: encoder)
        case .readThroughStarted(let p): try p.encode(to: encoder)
        case .sessionStarted(let p): try p.encode(to: encoder)
        case .sessionPaused(let p): try p.encode(to: encoder)
        case .sessionResumed(let p): try p.encode(to: encoder)
        case .sessionFinished(let p): try p.encode(to: encoder)
        case .sessionDiscarded(let p): try p.encode(to: encoder)
        case .bookFinished(let p): try p.encode(to: encoder)
        case .finishUndone(let p): try p.encode(to: encoder)
        case .sentenceCollected(let p): try p.encode(to: encoder)
        case .sentenceEdited(let p): try p.encode(to: encoder)
        case .sentenceRemoved(let p): try p.encode(to: encoder)
        case .memoWritten(let p): try p.encode(to: encoder)
        case .memoEdited(let p): try p.encode(to: encoder)
        case .memoRemoved(let p): try p.encode(to: encoder)
        case .ratingSet(let p): try p.encode(to: encoder)
        case .ratingCleared(let p): try p.encode(to: encoder)
        case .bookLiked(let p): try p.encode(to: encoder)
        case .bookUnliked(let p): try p.encode(to: encoder)
        case .homeOrderSet(let p): try p.encode(to: encoder)
        case .profileUpdated(let p): try p.encode(to: encoder)
        case .challengeSet(let p): try p.encode(to: encoder)
        case .unknown:
            // Written by `Line` as `"data":null` beside its `rawPayload`; never reached from there.
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        }
    }
}

private struct DecodedLine: Decodable {
    let envelope: EventEnvelope

    init(from decoder: any Decoder) throws {
        let f = try JSONFields(decoder)
        let position = try f.uint64(EnvelopeKey.position.rawValue)
        let eventID: EventID = try f.id("eventID")
        let streamName = try f.string("stream")
        guard let stream = StreamID(streamName) else {
            throw EventDecodingError.invalid("stream", .malformed,
                                             "\"\(streamName)\" is not book:<reader>:<book> or reader:<reader>")
        }
        let streamVersion = try f.uint64("streamVersion")
        let reader: ReaderID = try f.id("reader")
        let occurredAt = try f.instant("occurredAt")
        let zoneName = try f.string("timeZone")
        let timeZone: ZoneID
        do { timeZone = try ZoneID(zoneName, field: "timeZone") } catch { throw EventDecodingError(error, under: "") }
        let recordedAt = try f.instant("recordedAt")
        let tag = try DecodingChecks.typeTag(f.string("type"), "type")
        let version = try DecodingChecks.schemaVersion(f.int64("schemaVersion"), "schemaVersion")
        let correlationID: EventID? = try f.optionalID("correlationID")
        let causationID: EventID? = try f.optionalID("causationID")
        let origin = try DecodingChecks.origin(replica: try f.optionalID("replica"),
                                               sequence: f.has("sequence") ? try f.uint64("sequence") : 0,
                                               stamp: f.has("stamp") ? try f.uint64("stamp") : 0)

        let payload: StoredPayload
        switch EventUpcaster.form(ofType: tag, schemaVersion: version) {
        case .current(let type):
            guard !f.has("rawPayload") else {
                throw EventDecodingError.inconsistent("rawPayload", "a \(type) event carries its payload in data")
            }
            payload = .event(try JSONPayloads.current(type, try f.object("data")))
        case .ratingSetV1:
            let data = try f.object("data")
            payload = .ratingSetV1(RatingSetV1(book: try data.id("book"), rating: try JSONPayloads.int(data, "rating")))
        case .unknown:
            guard !f.has("data") else {
                throw EventDecodingError.inconsistent(
                    "data", "\(tag)@\(version) is unknown to this build; its payload must come as rawPayload")
            }
            let base64 = try f.string("rawPayload")
            guard let bytes = Data(base64Encoded: base64) else {
                throw EventDecodingError.invalid("rawPayload", .malformed, "expected base64")
            }
            payload = .event(.unknown(UnknownEvent(type: tag, schemaVersion: version, payload: [UInt8](bytes))))
        }
        let event = try EventUpcaster.upcast(type: tag, schemaVersion: version, payload: payload)
        try DecodingChecks.stream(stream, reader: reader)
        envelope = EventEnvelope(position: position, eventID: eventID, stream: stream, streamVersion: streamVersion,
                                 reader: reader, occurredAt: occurredAt, timeZone: timeZone, recordedAt: recordedAt,
                                 event: event, correlationID: correlationID, causationID: causationID,
                                 origin: origin)
    }
}

/// Payload decoding for the JSON form, one case per event type at its current schema version.
private enum JSONPayloads {
    static func int(_ f: JSONFields, _ key: String) throws(EventDecodingError) -> Int {
        let value = try f.int64(key)
        guard let int = Int(exactly: value) else { throw .invalid(f.path(key), .outOfRange, "\(value) does not fit") }
        return int
    }

    static func metadata(_ f: JSONFields) throws(EventDecodingError) -> BookMetadata {
        let isbn13 = try f.optionalString("isbn13").map { text throws(EventDecodingError) in
            try DecodingChecks.isbn(text, f.path("isbn13"))
        }
        let pageCount = try f.optionalInt64("pageCount").map { value throws(EventDecodingError) in
            guard (1...Int64(BookMetadata.maxPageCount)).contains(value) else {
                throw .invalid(f.path("pageCount"), .outOfRange, "\(value) pages is outside 1 ... \(BookMetadata.maxPageCount)")
            }
            return Int(value)
        }
        return try DecodingChecks.metadata(BookMetadata(
            title: try f.string("title"), subtitle: try f.optionalString("subtitle"),
            authors: try f.string("authors"), publisher: try f.optionalString("publisher"),
            publicationDate: try f.optionalDate("publicationDate"), isbn13: isbn13, pageCount: pageCount,
            categoryPath: try f.optionalString("categoryPath"), coverURL: try f.optionalString("coverURL"),
            productLink: try f.optionalString("productLink"),
            thicknessMillimetres: try f.optionalDouble("thicknessMillimetres")))
    }

    static func rating(_ f: JSONFields) throws(EventDecodingError) -> Rating {
        let stars = try f.double("rating")
        do { return try Rating(stars: stars) } catch { throw EventDecodingError(error, under: "data.") }
    }

    static func current(_ type: EventType, _ f: JSONFields) throws(EventDecodingError) -> ReadingEvent {
        guard let kind = EventKind(tag: type.tag) else {
            // `EventUpcaster.form` said `type` is current, so it has a kind; reported, not trapped.
            throw .inconsistent("type", "\(type) is not a type this build knows")
        }
        switch kind {
        case .bookAdded:
            return .bookAdded(BookAdded(book: try f.id("book"), metadata: try metadata(try f.object("metadata")),
                                        status: try f.status("status")))
        case .metadataCorrected:
            return .metadataCorrected(MetadataCorrected(book: try f.id("book"),
                                                        metadata: try metadata(try f.object("metadata"))))
        case .bookRemoved:
            return .bookRemoved(BookRemoved(book: try f.id("book")))
        case .statusChanged:
            return .statusChanged(ReadingStatusChanged(book: try f.id("book"), status: try f.status("status")))
        case .goalSet:
            let start = try f.date("startDate"), target = try f.date("targetDate")
            try DecodingChecks.goalDates(start: start, target: target)
            return .goalSet(GoalSet(book: try f.id("book"), startDate: start, targetDate: target, theme: try f.theme("theme")))
        case .goalChanged:
            return .goalChanged(GoalChanged(book: try f.id("book"), targetDate: try f.date("targetDate"),
                                            theme: try f.theme("theme")))
        case .goalDeleted:
            return .goalDeleted(GoalDeleted(book: try f.id("book")))
        case .pagesRead:
            return .pagesRead(PagesRead(book: try f.id("book"), position: try f.page("position")))
        case .progressCorrected:
            return .progressCorrected(ProgressCorrected(book: try f.id("book"), position: try f.page("position")))
        case .readThroughStarted:
            return .readThroughStarted(ReadThroughStarted(
                book: try f.id("book"),
                readThrough: try DecodingChecks.readThrough(f.int64("readThrough"), f.path("readThrough"))))
        case .sessionStarted:
            return .sessionStarted(SessionStarted(session: try f.id("session"), book: try f.id("book")))
        case .sessionPaused:
            return .sessionPaused(SessionPaused(session: try f.id("session"), book: try f.id("book")))
        case .sessionResumed:
            return .sessionResumed(SessionResumed(session: try f.id("session"), book: try f.id("book")))
        case .sessionFinished:
            return .sessionFinished(SessionFinished(
                session: try f.id("session"), book: try f.id("book"), endPosition: try f.optionalPage("endPosition"),
                durationSeconds: try DecodingChecks.duration(f.int64("durationSeconds"), f.path("durationSeconds"))))
        case .sessionDiscarded:
            return .sessionDiscarded(SessionDiscarded(session: try f.id("session"), book: try f.id("book")))
        case .bookFinished:
            return .bookFinished(BookFinished(book: try f.id("book"), finishedOn: try f.date("finishedOn")))
        case .finishUndone:
            return .finishUndone(FinishUndone(book: try f.id("book")))
        case .sentenceCollected:
            return .sentenceCollected(SentenceCollected(
                sentence: try f.id("sentence"), book: try f.id("book"),
                text: try f.text("text", limit: Limits.sentenceLength), page: try f.optionalPage("page")))
        case .sentenceEdited:
            return .sentenceEdited(SentenceEdited(
                sentence: try f.id("sentence"), book: try f.id("book"),
                text: try f.text("text", limit: Limits.sentenceLength), page: try f.optionalPage("page")))
        case .sentenceRemoved:
            return .sentenceRemoved(SentenceRemoved(sentence: try f.id("sentence"), book: try f.id("book")))
        case .memoWritten:
            return .memoWritten(MemoWritten(
                memo: try f.id("memo"), book: try f.id("book"),
                text: try f.text("text", limit: Limits.memoLength), page: try f.optionalPage("page")))
        case .memoEdited:
            return .memoEdited(MemoEdited(
                memo: try f.id("memo"), book: try f.id("book"),
                text: try f.text("text", limit: Limits.memoLength), page: try f.optionalPage("page")))
        case .memoRemoved:
            return .memoRemoved(MemoRemoved(memo: try f.id("memo"), book: try f.id("book")))
        case .ratingSet:
            return .ratingSet(RatingSet(book: try f.id("book"), rating: try rating(f)))
        case .ratingCleared:
            return .ratingCleared(RatingCleared(book: try f.id("book")))
        case .bookLiked:
            return .bookLiked(BookLiked(book: try f.id("book")))
        case .bookUnliked:
            return .bookUnliked(BookUnliked(book: try f.id("book")))
        case .homeOrderSet:
            return .homeOrderSet(HomeOrderSet(books: try DecodingChecks.distinctBooks(f.ids("books"), f.path("books"))))
        case .profileUpdated:
            return .profileUpdated(ProfileUpdated(
                nickname: try f.text("nickname", limit: Limits.nicknameLength),
                imageFileName: try DecodingChecks.limited(f.optionalString("imageFileName"), limit: Limits.imageFileNameLength,
                                                          f.path("imageFileName")), theme: try f.theme("theme")))
        case .challengeSet:
            return .challengeSet(try DecodingChecks.challenge(
                year: try f.int64("year"), books: try f.optionalInt64("books"), pages: try f.optionalInt64("pages")))
        }
    }
}
