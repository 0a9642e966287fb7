extension EventEnvelope {
    /// Checks every structural and value rule an event keeps on its own, whatever came before it:
    /// the rules commands apply to their input, applied to an event made elsewhere (an import, a
    /// host's `appendRecorded`). Throws ``ValidationError`` naming the field and the rule.
    ///
    /// - The stream fits the event (`inconsistent`, field `stream`): a book event belongs to
    ///   `book:<reader>:<book>` of its own book, a reader event (home order, profile) to
    ///   `reader:<reader>`, always of the envelope's reader; an unknown event to either stream of
    ///   its reader.
    /// - Both instants lie in 1900 ..< 2200 (`outOfRange`), `occurredAt` is not after `recordedAt`
    ///   (`inconsistent`), and the time zone exists (`unknownTimeZone`).
    /// - The payload keeps its value rules (see ``ReadingEvent/validate(pageCount:)``).
    ///
    /// Rules that depend on the history before the event are not checked here: that the book was
    /// added (and not removed or finished), that a position fits between the records made before
    /// and after it, that a session was started, a goal is active, a sentence exists, an ID is new.
    ///
    /// - Parameter pageCount: the book's page count as known before this event (from earlier events
    ///   of the same batch, or the store), `nil` when unknown: positions and pages are then checked
    ///   against ``BookMetadata/maxPageCount``.
    public func validate(pageCount: Int? = nil) throws(ValidationError) {
        try validate(pageCount: pageCount, goalStart: nil)
    }

    /// ``validate(pageCount:)``, and with `goalStart` (the start of the book's active goal as known
    /// before this event, from an earlier `GoalSet` of the same batch) a `GoalChanged` target is
    /// checked not to be before it (`targetBeforeStart`, field `targetDate`), the rule
    /// ``BookCommand/changeGoal(targetDate:theme:)`` keeps. Without it (`nil`) the target is checked
    /// against ``Limits/years`` only.
    public func validate(pageCount: Int?, goalStart: LocalDate?) throws(ValidationError) {
        try ValueRules.instants(occurredAt: occurredAt, recordedAt: recordedAt)
        _ = try ZoneID(timeZone.identifier, field: "timeZone")
        if case .unknown = event {
            guard stream.reader == reader else {
                throw ValidationError(field: "stream", rule: .inconsistent,
                                      detail: "stream \(stream) belongs to another reader than \(reader)")
            }
        } else {
            let expected = event.stream(for: reader)
            guard stream == expected else {
                throw ValidationError(field: "stream", rule: .inconsistent,
                                      detail: "a \(event.type.tag) event belongs to stream \(expected), not \(stream)")
            }
        }
        try event.validate(pageCount: pageCount)
        if let goalStart, case .goalChanged(let e) = event {
            try ValueRules.goalDates(start: goalStart, target: e.targetDate)
        }
    }

    /// Whether two envelopes record the same fact: the identity rule of replication.
    ///
    /// An event is identified by its event ID. Two envelopes with one ID record the same fact when
    /// every field of the fact is equal: reader, stream, payload (type and values), `occurredAt`,
    /// time zone, correlation and causation. The fields of the *copy* may differ: the position and
    /// stream version (each store assigns them), the origin (which replica stamped it) and
    /// `recordedAt` (when that replica appended it). So the same row of one export imported on
    /// two devices is one fact with two copies; a store keeps one record of it and the other
    /// copy's origin as an alias (see `ReadingStore.merge(_:)`).
    public func recordsSameFact(as other: EventEnvelope) -> Bool {
        var a = self, b = other
        a.position = 0; a.streamVersion = 0; a.origin = nil; a.recordedAt = b.recordedAt
        b.position = 0; b.streamVersion = 0; b.origin = nil
        return a == b
    }

    /// Checks an event of another replica before a receiver takes it (a peer's batch in
    /// `ReadingStore.merge(_:)`, a record pushed to or pulled from the sync server): the rules
    /// every receiver applies, in one place, so the server refuses at push time what every device
    /// would refuse.
    ///
    /// - It carries an origin (`origin`, `empty`), not of the reserved provisional replica
    ///   (`origin.replica`, `malformed`), with a sequence from 1 (`origin.sequence`, `outOfRange`).
    /// - It keeps every rule of ``validate(pageCount:)`` (the stream fits the payload's book and
    ///   reader, instants, zone, value rules).
    /// - Its stamp keeps ``EventOrigin/checkStamp(recordedAt:)`` (`origin.stamp`, `outOfRange`): not
    ///   before its `recordedAt`, at most a day ahead of it, before 2199-12-31 (0: format 1).
    ///
    /// - Parameter pageCount: the book's page count as known before this event, `nil` when unknown.
    public func validateReplicated(pageCount: Int? = nil) throws(ValidationError) {
        try validateReplicated(pageCount: pageCount, goalStart: nil)
    }

    /// ``validateReplicated(pageCount:)`` with the goal rule of a batch (see
    /// ``validate(pageCount:goalStart:)``): for a replica's lines in an import file, whose
    /// earlier lines set the goal (``BatchBookFacts``).
    public func validateReplicated(pageCount: Int?, goalStart: LocalDate?) throws(ValidationError) {
        guard let origin else {
            throw ValidationError(field: "origin", rule: .empty,
                                  detail: "an event of another replica carries the origin its replica gave it (replica, sequence, stamp)")
        }
        guard origin.replica != .provisional else {
            throw ValidationError(field: "origin.replica", rule: .malformed,
                                  detail: "replica \(origin.replica) is reserved for provisional origins, which never leave their store")
        }
        guard origin.sequence >= 1 else {
            throw ValidationError(field: "origin.sequence", rule: .outOfRange, detail: "a replica numbers its events from 1, not 0")
        }
        try validate(pageCount: pageCount, goalStart: goalStart)
        try origin.checkStamp(recordedAt: recordedAt)
    }
}

extension ReadingEvent {
    /// Checks the payload's value rules, the same functions commands use: metadata
    /// (``BookMetadata/validated()``), statuses a command can set (`finished` only through
    /// ``BookFinished``), a goal's target not before its start, positions 0 ... page count, pages
    /// 1 ... page count, dates in ``Limits/years``, texts that show something (not only whitespace
    /// or invisible characters) and within their ``Limits``, an unknown event's payload within
    /// ``Limits/unknownPayloadBytes``, theme and image file name
    /// lengths, session lengths, read-through numbers from 1, a home order without repeats, and an
    /// unknown event's type tag (``EventType/checkTag(_:schemaVersion:)``).
    ///
    /// - Parameter pageCount: the book's page count as known before this event, or `nil`.
    public func validate(pageCount: Int? = nil) throws(ValidationError) {
        switch self {
        case .bookAdded(let e):
            _ = try e.metadata.validated()
            try ValueRules.addedStatus(e.status)
        case .metadataCorrected(let e):
            _ = try e.metadata.validated()
        case .statusChanged(let e):
            try ValueRules.changedStatus(e.status)
        case .goalSet(let e):
            try ValueRules.goalDates(start: e.startDate, target: e.targetDate)
            try ValueRules.theme(e.theme)
        case .goalChanged(let e):
            try ValueRules.date(e.targetDate, field: "targetDate")
            try ValueRules.theme(e.theme)
        case .pagesRead(let e):
            try ValueRules.position(e.position, field: "position", pageCount: pageCount)
        case .progressCorrected(let e):
            try ValueRules.position(e.position, field: "position", pageCount: pageCount)
        case .readThroughStarted(let e):
            guard e.readThrough >= 1 else {
                throw ValidationError(field: "readThrough", rule: .outOfRange, detail: "read-through \(e.readThrough) is below 1")
            }
        case .sessionFinished(let e):
            try ValueRules.duration(e.durationSeconds)
            if let end = e.endPosition { try ValueRules.position(end, field: "endPosition", pageCount: pageCount) }
        case .sentenceCollected(let e):
            try ValueRules.passage(e.text, limit: Limits.sentenceLength, page: e.page, pageCount: pageCount)
        case .sentenceEdited(let e):
            try ValueRules.passage(e.text, limit: Limits.sentenceLength, page: e.page, pageCount: pageCount)
        case .memoWritten(let e):
            try ValueRules.passage(e.text, limit: Limits.memoLength, page: e.page, pageCount: pageCount)
        case .memoEdited(let e):
            try ValueRules.passage(e.text, limit: Limits.memoLength, page: e.page, pageCount: pageCount)
        case .homeOrderSet(let e):
            try ValueRules.distinctBooks(e.books)
        case .profileUpdated(let e):
            try ValueRules.text(e.nickname, field: "nickname", limit: Limits.nicknameLength)
            try ValueRules.length(e.imageFileName, field: "imageFileName", limit: Limits.imageFileNameLength)
            try ValueRules.theme(e.theme)
        case .challengeSet(let e):
            _ = try e.validated()
        case .bookFinished(let e):
            try ValueRules.date(e.finishedOn, field: "finishedOn")
        case .unknown(let u):
            try EventType.checkTag(u.type, schemaVersion: u.schemaVersion)
            try ValueRules.unknownPayload(u.payload)
        case .bookRemoved, .goalDeleted, .sessionStarted, .sessionPaused, .sessionResumed, .sessionDiscarded,
             .finishUndone, .sentenceRemoved, .memoRemoved, .ratingSet, .ratingCleared,
             .bookLiked, .bookUnliked:
            // Identifiers, a date or a rating: valid by construction.
            break
        }
    }
}

extension EventType {
    /// Checks a type tag as stored or imported: 1 ... ``Limits/typeTagLength`` ASCII letters,
    /// digits, `.`, `_` or `-`, starting with a letter (`malformed`, `tooLong`), and a schema version
    /// from 1 (`outOfRange`); with `schemaVersion`, also that a known tag at that version is not
    /// carried as an unknown event (`inconsistent`).
    public static func checkTag(_ tag: String, schemaVersion: Int? = nil) throws(ValidationError) {
        let bytes = tag.utf8
        guard bytes.count <= Limits.typeTagLength else {
            throw ValidationError(field: "type", rule: .tooLong,
                                  detail: "the type tag has \(bytes.count) bytes, at most \(Limits.typeTagLength) are allowed")
        }
        func isLetter(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
        guard let first = bytes.first, isLetter(first),
              bytes.allSatisfy({ isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }) else {
            throw ValidationError(field: "type", rule: .malformed,
                                  detail: "a type tag is ASCII letters, digits, \".\", \"_\" or \"-\", starting with a letter")
        }
        guard let schemaVersion else { return }
        guard schemaVersion >= 1 else {
            throw ValidationError(field: "schemaVersion", rule: .outOfRange, detail: "schema version \(schemaVersion) is below 1")
        }
        if case .unknown = EventUpcaster.form(ofType: tag, schemaVersion: schemaVersion) { return }
        throw ValidationError(field: "type", rule: .inconsistent,
                              detail: "\(tag)@\(schemaVersion) is known to this build; it cannot be carried as an unknown event")
    }
}
