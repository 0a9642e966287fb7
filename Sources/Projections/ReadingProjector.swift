import ReadingEvents

/// Folds events into every view: the one `apply` that incremental appends and rebuilds share.
///
/// Pure: no I/O, no clock, no randomness. Each event reads and writes only the records it touches
/// (its book, the days and months its pages and minutes land on, the reader's buckets and streak
/// runs), so the cost of one event does not grow with the length of the history. Unknown event
/// types are counted and skipped.
///
/// Not `Sendable`: its ``LocalClock`` caches zone offsets; give each fold its own projector.
public struct ReadingProjector {
    /// The clock that puts instants on reading days and in time-of-day buckets.
    public let clock: LocalClock

    /// A projector whose reading days start at `dayStartHour` (default midnight).
    public init(dayStartHour: Int = 0) { clock = LocalClock(dayStartHour: dayStartHour) }

    /// What folding one event did.
    ///
    /// `Sendable`: identifiers only.
    public enum Outcome: Hashable, Sendable {
        /// The event is folded into every view it touches.
        case folded
        /// The event is counted for its reader, but its book must be refolded: it sorts before
        /// events already folded into the book (it arrived late from another replica), or it adds
        /// a book whose earlier-stored events were skipped as orphans. Call
        /// ``ReadingProjector/refold(reader:book:events:in:)`` with every stored event of the
        /// book (this one included) before the views are read.
        case needsRefold(reader: ReaderID, book: BookID)
    }

    /// Folds one stored event into the views in `store`.
    ///
    /// Events are meant to arrive in canonical order (``EventOrigin``); one that sorts before what
    /// its book has folded returns ``Outcome/needsRefold(reader:book:)`` and leaves the book view
    /// as it was. Reader-level facts (home order, profile, a year's challenge) are last-writer-wins
    /// registers keyed by origin, so they never need a refold. Envelopes without an origin (a pure
    /// fold of unstored events) fold in arrival order.
    @discardableResult
    public func apply(_ envelope: EventEnvelope, to store: inout some ViewStore) throws -> Outcome {
        let readerID = envelope.reader
        // Taken, not read (as the book view below): no copy while it changes.
        var reader = try store.takeReaderView(reader: readerID) ?? ReaderView()
        reader.eventCount += 1
        // Unknown events are only counted, so they do not move the latest moment either.
        if case .unknown = envelope.event {} else {
            reader.latestMoment = max(reader.latestMoment ?? envelope.recordedAt, envelope.occurredAt, envelope.recordedAt)
        }
        if Self.isNewer(envelope.origin, than: reader.lastEvent?.origin) {
            reader.lastEvent = LastEvent(occurredAt: envelope.occurredAt, timeZone: envelope.timeZone, origin: envelope.origin)
        }
        var deltas = ViewDeltas(reader: readerID)
        var outcome = Outcome.folded

        switch envelope.event {
        case .unknown:
            reader.unknownEvents += 1
        case .homeOrderSet(let e):
            if Self.isNewer(envelope.origin, than: reader.homeOrderOrigin) {
                reader.homeOrder = e.books; reader.homeOrderOrigin = envelope.origin
            }
        case .profileUpdated(let e):
            if Self.isNewer(envelope.origin, than: reader.profileOrigin) {
                reader.nickname = e.nickname; reader.imageFileName = e.imageFileName; reader.theme = e.theme
                reader.profileOrigin = envelope.origin
            }
        case .challengeSet(let e):
            var year = try store.yearView(reader: readerID, year: e.year) ?? YearView(year: e.year)
            if Self.isNewer(envelope.origin, than: year.challengeOrigin) {
                year.challenge = e; year.challengeOrigin = envelope.origin
                try store.putYearView(reader: readerID, year)
            }
        case .bookAdded, .metadataCorrected, .bookRemoved, .statusChanged, .goalSet, .goalChanged, .goalDeleted, .pagesRead,
             .progressCorrected, .readThroughStarted, .sessionStarted, .sessionPaused, .sessionResumed,
             .sessionFinished, .sessionDiscarded, .bookFinished, .finishUndone, .sentenceCollected, .sentenceEdited,
             .sentenceRemoved, .memoWritten, .memoEdited, .memoRemoved, .ratingSet, .ratingCleared, .bookLiked,
             .bookUnliked:
            guard let book = envelope.event.book else { break }
            // Taken, not read: the store keeps no reference while the view changes, so the fold
            // changes its arrays in place. Emptiness is asked with `case .none`, not `== nil`,
            // which copies the whole view into a pair of optionals to compare them.
            var view = try store.takeBookView(reader: readerID, book: book)
            if let folded = view?.lastOrigin, envelope.origin.map({ $0 < folded }) ?? true {
                try store.restoreBookView(view.take()!)
                outcome = .needsRefold(reader: readerID, book: book)
                break
            }
            let isNew: Bool
            if case .none = view { isNew = true } else { isNew = false }
            if isNew, case .bookAdded = envelope.event, envelope.streamVersion > 1 {
                // The book's earlier-stored events arrived before their BookAdded: they wait for it.
                outcome = .needsRefold(reader: readerID, book: book)
                break
            }
            if isNew, case .some = envelope.origin, !envelope.event.isBookAdded {
                // A stored event of a book not added yet waits for its BookAdded (see `refold`):
                // the book's refold places it right after the BookAdded, whenever that comes.
                outcome = .needsRefold(reader: readerID, book: book)
                break
            }
            let wasOnHome = view?.isOnHomeList ?? false
            step(envelope, book: book, view: &view, deltas: &deltas)
            if let folded = view.take() {
                let isOnHome = folded.isOnHomeList
                try store.putBookView(folded)
                if isOnHome != wasOnHome { try store.setGoalBook(reader: readerID, book: book, active: isOnHome) }
            }
        }
        try store.putReaderView(reader: readerID, reader)
        try apply(&deltas, to: &store)
        return outcome
    }

    /// Folds a whole set of stored events into `store` in canonical order (``canonicallyBefore(_:_:)``),
    /// refolding from `envelopes` any book the fold asks for: the reference fold, the same views
    /// every replica holding this set of events shows.
    public func fold(_ envelopes: [EventEnvelope], into store: inout some ViewStore) throws {
        let sorted = envelopes.sorted(by: Self.canonicallyBefore)
        var pending: [(ReaderID, BookID)] = []
        var seen = Set<StreamID>()
        for envelope in sorted {
            if case .needsRefold(let reader, let book) = try apply(envelope, to: &store),
               seen.insert(.book(reader: reader, book: book)).inserted {
                pending.append((reader, book))
            }
        }
        for (reader, book) in pending {
            try refold(reader: reader, book: book, events: sorted.filter { $0.reader == reader && $0.event.book == book }, in: &store)
        }
    }

    /// Refolds one book from all of its stored events: takes the book view's contributions out of
    /// the reader's totals (days, buckets, months, years, streak runs, the goal list), folds the
    /// events in canonical order into a fresh book view, and puts the new contributions back, so
    /// the result is the same as folding the reader's whole history in canonical order, at the
    /// cost of one book. Reader counts (events, latest moment) are not touched: the events were
    /// counted when they were applied.
    ///
    /// - Parameter events: every stored event of the book, in any order (events of other books
    ///   are ignored). Events with origins sort by them; envelopes without one keep their
    ///   position order.
    public func refold(reader: ReaderID, book: BookID, events: [EventEnvelope], in store: inout some ViewStore) throws {
        var deltas = ViewDeltas(reader: reader)
        let old = try store.bookView(reader: reader, book: book)
        if let old { retract(old, deltas: &deltas) }
        var view: BookView?
        // Events that sort before the book's first BookAdded wait for it and fold right after it,
        // in canonical order: no copy or late arrival takes a fact out of the views by sorting
        // before its book (the Replication article).
        var waiting: [EventEnvelope] = []
        for envelope in events.filter({ $0.event.book == book && $0.reader == reader }).sorted(by: Self.canonicallyBefore) {
            if case .none = view, !envelope.event.isBookAdded {
                waiting.append(envelope)
                continue
            }
            step(envelope, book: book, view: &view, deltas: &deltas)
            if !waiting.isEmpty {
                for early in waiting { step(early, book: book, view: &view, deltas: &deltas) }
                waiting = []
            }
        }
        if let view { try store.putBookView(view) }
        let wasOnHome = old?.isOnHomeList ?? false, isOnHome = view?.isOnHomeList ?? false
        if wasOnHome != isOnHome { try store.setGoalBook(reader: reader, book: book, active: isOnHome) }
        try apply(&deltas, to: &store)
    }

    /// The canonical order of stored events: events without an origin (appended through the raw
    /// log, never stamped) first, by position; then by origin (``EventOrigin``).
    public static func canonicallyBefore(_ a: EventEnvelope, _ b: EventEnvelope) -> Bool {
        switch (a.origin, b.origin) {
        case (nil, nil): a.position < b.position
        case (nil, _?): true
        case (_?, nil): false
        case (let x?, let y?): x < y
        }
    }

    /// Whether a register write with `origin` replaces one written with `current`: the later in
    /// canonical order wins (no origin sorts first); without origins, the later in arrival order.
    static func isNewer(_ origin: EventOrigin?, than current: EventOrigin?) -> Bool {
        switch (origin, current) {
        case (_, nil): true
        case (nil, _?): false
        case (let o?, let c?): o > c
        }
    }

    /// Folds one book event into `view` (nil before the book's BookAdded: an orphan is skipped;
    /// ``refold(reader:book:events:in:)`` holds such events until the BookAdded).
    private func step(_ envelope: EventEnvelope, book: BookID, view: inout BookView?, deltas: inout ViewDeltas) {
        let at = envelope.occurredAt
        // The view is changed where it lies, through `view!` (the optional's payload in place): no
        // copy shares its arrays, and the struct is not moved out and back for every event.
        if case .bookAdded(let e) = envelope.event {
            if case .some = view {
                view!.lastActivity = max(view!.lastActivity, at)
            } else {
                view = BookView(
                    reader: envelope.reader, book: e.book, metadata: e.metadata, status: e.status, inLibrary: true,
                    addedAt: at, lastActivity: at, goal: nil, goalOutcome: nil, readThrough: 1, entries: [],
                    finishes: [], isFinished: false, sentences: [], memos: [], sessions: [], rating: nil,
                    liked: false, likedAt: nil)
            }
            view!.foldedEvents += 1
            view!.decision.apply(envelope.event, occurredAt: at)
            view!.copyDecision(withMetadata: true)
        } else {
            // Every stored book event follows its BookAdded in canonical order (the decide step
            // guarantees it locally); an orphan (a hand-made import) is skipped.
            guard case .some = view else { return }
            step(envelope, existing: &view!, deltas: &deltas)
        }
        if let origin = envelope.origin, view!.lastOrigin.map({ $0 < origin }) ?? true { view!.lastOrigin = origin }
    }

    /// Folds an event other than `BookAdded` into the view of its book.
    private func step(_ envelope: EventEnvelope, existing: inout BookView, deltas: inout ViewDeltas) {
        existing.lastActivity = max(existing.lastActivity, envelope.occurredAt)
        existing.foldedEvents += 1
        // The decision state first (the one copy of the rules for status, goal and finish),
        // then what only the view keeps (page credits, session minutes, notes, finish days).
        let before = DecisionBefore(existing.decision, envelope.event)
        existing.decision.apply(envelope.event, occurredAt: envelope.occurredAt)
        // Only BookAdded and MetadataCorrected set the decision state's metadata: copying its
        // strings after every other event cost about 450 instructions.
        let metadataChanged: Bool
        if case .metadataCorrected = envelope.event { metadataChanged = true } else { metadataChanged = false }
        existing.copyDecision(withMetadata: metadataChanged)
        fold(envelope, into: &existing, before: before, deltas: &deltas)
    }

    /// Takes a book view's contributions out of the totals: its credited pages, its finished
    /// sessions' seconds and its finishes (exactly what folding it added).
    private func retract(_ view: BookView, deltas: inout ViewDeltas) {
        for entry in view.entries where entry.credited != 0 {
            deltas.add(day: entry.day, bucket: entry.bucket, book: view.book, pages: -entry.credited, seconds: 0)
        }
        for session in view.sessions where session.isFinished {
            for piece in clock.split(session) {
                deltas.add(day: piece.day, bucket: piece.bucket, book: view.book, pages: 0, seconds: -piece.seconds)
            }
        }
        for finish in view.finishes {
            deltas.addFinish(on: finish, book: view.book, count: -1)
        }
    }

    // MARK: Book fold

    /// What the view's fold needs of the decision state as it was before the event.
    private struct DecisionBefore {
        /// Whether the current read-through was finished.
        var wasFinished: Bool
        /// The active goal.
        var goal: BookState.Goal?
        /// For a session event: whether the session was started or closed before.
        var knewSession = false

        init(_ state: BookState, _ event: ReadingEvent) {
            wasFinished = state.isFinished; goal = state.goal
            if case .sessionFinished(let e) = event { knewSession = state.usedIDs.contains(BookState.UUIDKey(e.session)) }
        }
    }

    /// Folds what only the view keeps; the decision state has folded the event already and its
    /// fields are copied (`before` is what the view needs of the state before the event).
    private func fold(_ envelope: EventEnvelope, into view: inout BookView, before: DecisionBefore, deltas: inout ViewDeltas) {
        let at = envelope.occurredAt
        let zone = envelope.timeZone
        switch envelope.event {
        case .metadataCorrected, .bookRemoved, .statusChanged, .goalSet, .goalChanged, .goalDeleted, .readThroughStarted,
             .ratingSet, .ratingCleared:
            break // the decision state's fields only
        case .pagesRead(let e):
            addMark(position: e.position, isCorrection: false, envelope, to: &view, deltas: &deltas)
        case .progressCorrected(let e):
            addMark(position: e.position, isCorrection: true, envelope, to: &view, deltas: &deltas)
        case .sessionStarted(let e):
            if let i = view.sessions.firstIndex(where: { $0.session == e.session }) {
                // The session was finished before its start sorted in (an import, or a replica that
                // recorded the start after seeing the finish): it stays closed and runs from this
                // start to that finish, as if they had come in order. A repeated start is ignored.
                if view.sessions[i].isAwaitingStart {
                    let finishedAt = view.sessions[i].startedAt
                    view.sessions[i].startedAt = at; view.sessions[i].timeZone = zone
                    view.sessions[i].intervals = [SessionRecord.ClosedInterval(start: at, end: max(at, finishedAt), timeZone: zone)]
                    for piece in clock.split(view.sessions[i]) {
                        deltas.add(day: piece.day, bucket: piece.bucket, book: view.book, pages: 0, seconds: piece.seconds)
                    }
                }
            } else if view.decision.openSessions[e.session] != nil {
                // The decision state opens the session unless it was closed already (a discard
                // that sorts before the start): one rule for the decide step and the views.
                view.sessions.append(SessionRecord(session: e.session, startedAt: at, timeZone: zone, intervals: [],
                                                   runningSince: at, runningZone: zone, isFinished: false, reportedSeconds: nil,
                                                   endPosition: nil))
            }
        case .sessionPaused(let e):
            // A session's first closing event (finish or discard, in canonical order) is its fate:
            // later pauses, resumes, finishes and discards of it (from another device) are ignored.
            if let i = view.sessions.lastIndex(where: { $0.session == e.session && !$0.isFinished }) {
                view.sessions[i].closeRunningInterval(at: at)
            }
        case .sessionResumed(let e):
            // The interval resumed here belongs to this event's zone (a resume in another city).
            if let i = view.sessions.lastIndex(where: { $0.session == e.session && !$0.isFinished }) {
                view.sessions[i].runningSince = at; view.sessions[i].runningZone = zone
            }
        case .sessionFinished(let e):
            // The session's minutes are decided by its first closing event; an end position is a
            // page mark like any other and counts whatever became of the timer (a finish after a
            // discard or after another finish on another device: the reader did reach that page).
            if let i = view.sessions.lastIndex(where: { $0.session == e.session }) {
                if !view.sessions[i].isFinished {
                    view.sessions[i].closeRunningInterval(at: at)
                    view.sessions[i].isFinished = true
                    view.sessions[i].reportedSeconds = e.durationSeconds
                    view.sessions[i].endPosition = e.endPosition
                    for piece in clock.split(view.sessions[i]) {
                        deltas.add(day: piece.day, bucket: piece.bucket, book: view.book, pages: 0, seconds: piece.seconds)
                    }
                }
            } else if !before.knewSession {
                // A finish that sorts before its session's start: the session is closed now, and
                // its start (when it sorts in) gives it its minutes (``SessionRecord/isAwaitingStart``).
                // A finish after a discard finds the session known and gone: the discard decided it.
                view.sessions.append(SessionRecord(session: e.session, startedAt: at, timeZone: zone, intervals: [],
                                                   runningSince: nil, runningZone: nil, isFinished: true,
                                                   reportedSeconds: e.durationSeconds, endPosition: e.endPosition))
            }
            if let end = e.endPosition {
                addMark(position: end, isCorrection: false, envelope, to: &view, deltas: &deltas)
            }
        case .sessionDiscarded(let e):
            view.sessions.removeAll { $0.session == e.session && !$0.isFinished }
        case .bookFinished(let e):
            // Two devices finishing the same read-through: the first finish counts, once.
            guard !before.wasFinished else { break }
            view.finishes.append(e.finishedOn)
            if let goal = before.goal { view.goalOutcome = GoalOutcome(goal: goal, finishedOn: e.finishedOn) }
            deltas.addFinish(on: e.finishedOn, book: view.book, count: 1)
        case .finishUndone:
            if let last = view.finishes.popLast() {
                deltas.addFinish(on: last, book: view.book, count: -1)
                // The decision state restored the goal this finish ended (``BookState``).
                if let outcome = view.goalOutcome, outcome.finishedOn == last { view.goalOutcome = nil }
            }
        case .sentenceCollected(let e):
            view.sentences.append(TextNote(id: UUIDBox(e.sentence), text: e.text, page: e.page, createdAt: at, editedAt: at))
        case .sentenceEdited(let e):
            if let i = view.sentences.firstIndex(where: { $0.id == UUIDBox(e.sentence) }) {
                view.sentences[i].text = e.text; view.sentences[i].page = e.page; view.sentences[i].editedAt = at
            }
        case .sentenceRemoved(let e):
            view.sentences.removeAll { $0.id == UUIDBox(e.sentence) }
        case .memoWritten(let e):
            view.memos.append(TextNote(id: UUIDBox(e.memo), text: e.text, page: e.page, createdAt: at, editedAt: at))
        case .memoEdited(let e):
            if let i = view.memos.firstIndex(where: { $0.id == UUIDBox(e.memo) }) {
                view.memos[i].text = e.text; view.memos[i].page = e.page; view.memos[i].editedAt = at
            }
        case .memoRemoved(let e):
            view.memos.removeAll { $0.id == UUIDBox(e.memo) }
        case .bookLiked:
            view.likedAt = at
        case .bookUnliked:
            view.likedAt = nil
        case .bookAdded, .homeOrderSet, .profileUpdated, .challengeSet, .unknown:
            break
        }
    }

    /// Inserts a page mark in time order and re-credits the read-through: a back-dated mark or a
    /// correction changes the credits of its neighbours, and only the differences reach the totals.
    private func addMark(position: Int, isCorrection: Bool, _ envelope: EventEnvelope, to view: inout BookView, deltas: inout ViewDeltas) {
        let local = clock.localDateTime(of: envelope.occurredAt, in: envelope.timeZone)
        let day = clock.localDay(of: local)
        let entry = PageEntry(order: view.foldedEvents, occurredAt: envelope.occurredAt, day: day,
                              bucket: TimeOfDay(hour: local.hour), readThrough: view.readThrough, position: position,
                              kind: isCorrection ? .correction : .read, effective: position, credited: 0)
        // Entries are grouped by read-through, each group in (instant, canonical ordinal) order.
        let readThrough = view.readThrough
        var index = view.entries.endIndex
        while index > view.entries.startIndex {
            let previous = view.entries[index - 1]
            if previous.readThrough < readThrough { break }
            if previous.readThrough == readThrough,
               (previous.occurredAt, previous.order) <= (entry.occurredAt, entry.order) { break }
            index -= 1
        }
        view.entries.insert(entry, at: index)

        // The common case: a page record that is the latest of its read-through. It changes no
        // earlier mark (only a correction clamps earlier marks) and is credited what it adds to the
        // highest effective position before it: the same as recomputing the read-through below,
        // without rebuilding its timeline (which made every page record cost the whole book).
        if index == view.entries.endIndex - 1, !isCorrection {
            var highest = 0
            var i = index - 1
            while i >= view.entries.startIndex, view.entries[i].readThrough == readThrough {
                highest = max(highest, view.entries[i].effective)
                i -= 1
            }
            let credit = max(0, position - highest)
            view.entries[index].credited = credit
            if credit != 0 { deltas.add(day: day, bucket: entry.bucket, book: view.book, pages: credit, seconds: 0) }
            return
        }

        let group = view.entries.indices.filter { view.entries[$0].readThrough == readThrough }
        var timeline = PageTimeline()
        for i in group {
            let e = view.entries[i]
            timeline.insert(.init(occurredAt: e.occurredAt, sequence: e.order, position: e.position, isCorrection: e.kind == .correction))
        }
        let effective = timeline.effectivePositions
        let credits = timeline.credits
        for (k, i) in group.enumerated() {
            let old = i == index ? 0 : view.entries[i].credited
            view.entries[i].effective = effective[k]
            view.entries[i].credited = credits[k]
            let change = credits[k] - old
            if change != 0 {
                let e = view.entries[i]
                deltas.add(day: e.day, bucket: e.bucket, book: view.book, pages: change, seconds: 0)
            }
        }
    }

    // MARK: Totals

    /// Folds one step's netted changes into the reader's totals: each table of view records
    /// folds them with its own step (``ViewRecordTable/fold(_:into:)``), in ``ViewRecordKind``
    /// order, so a view's step lives in its own file and this dispatch names none of them.
    private func apply(_ deltas: inout ViewDeltas, to store: inout some ViewStore) throws {
        guard !deltas.isEmpty else { return }
        deltas.sortChanges()
        try withUnsafeMutablePointer(to: &deltas) { deltas in
            try withUnsafeMutablePointer(to: &store) { store in
                var folder = DeltaFolder(store: store, deltas: deltas)
                var raw = 0
                while let kind = ViewRecordKind(rawValue: raw) {
                    try kind.visit(&folder)
                    raw += 1
                }
            }
        }
    }
}

/// Calls each table's step (``ViewRecordTable/fold(_:into:)``) with one step's changes, through
/// pointers to both: a copy of the store would copy its records on its first write.
private struct DeltaFolder<Store: ViewStore>: ViewRecordTableVisitor {
    let store: UnsafeMutablePointer<Store>
    let deltas: UnsafeMutablePointer<ViewDeltas>
    mutating func visit<T: ViewRecordTable>(_ table: T.Type) throws { try T.fold(&deltas.pointee, into: &store.pointee) }
}

/// What one fold step (an event, or a book's retraction and refold) changes in a reader's totals,
/// netted per key before any record is read: what each table of totals folds with its own step
/// (``ViewRecordTable/fold(_:into:)``). The book view's fold (``ReadingProjector``) makes it: the
/// pages each entry credits, the seconds of each finished session split by day and time of day,
/// the finishes by day.
///
/// `Sendable`: plain values.
public struct ViewDeltas: Sendable {
    /// The reader whose totals change.
    public let reader: ReaderID

    struct Key: Hashable, Comparable, Sendable {
        var day: LocalDate
        var bucket: TimeOfDay
        var book: BookID
        static func < (l: Key, r: Key) -> Bool { (l.day, l.bucket, l.book) < (r.day, r.bucket, r.book) }
    }
    struct YearBookKey: Hashable, Comparable, Sendable {
        var year: Int
        var book: BookID
        static func < (l: YearBookKey, r: YearBookKey) -> Bool { (l.year, l.book) < (r.year, r.book) }
    }
    /// Pages and seconds by day, bucket and book.
    private(set) var changes = SmallMap<Key, DayTotal>()
    /// Finishes by month.
    private(set) var finishes = SmallMap<YearMonth, Int>()
    /// Finishes by year and book.
    private(set) var bookFinishes = SmallMap<YearBookKey, Int>()
    /// ``changes`` that are not zero, in key order (day, bucket, book): set once before the
    /// tables' steps.
    private(set) var sortedChanges = InlineFirstArray<(key: Key, value: DayTotal)>()
    /// The days that became reading days (`true`) or stopped being ones (`false`), in day order:
    /// what the days' step found, for the streak runs' step after it (kind order).
    var readingDays = InlineFirstArray<(day: LocalDate, isReading: Bool)>()

    init(reader: ReaderID) { self.reader = reader }

    var isEmpty: Bool { changes.isEmpty && finishes.isEmpty }

    mutating func add(day: LocalDate, bucket: TimeOfDay, book: BookID, pages: Int, seconds: Int) {
        changes.update(Key(day: day, bucket: bucket, book: book), default: DayTotal()) {
            $0.pages += pages; $0.seconds += seconds
        }
    }

    mutating func addFinish(on day: LocalDate, book: BookID, count: Int) {
        finishes.update(YearMonth(day), default: 0) { $0 += count }
        bookFinishes.update(YearBookKey(year: day.year, book: book), default: 0) { $0 += count }
    }

    /// Sets ``sortedChanges``, moving the changes there (``changes`` is left empty: the tables'
    /// steps read only ``sortedChanges``).
    mutating func sortChanges() {
        sortedChanges = changes.takeSortedElements()
        sortedChanges.removeAll { $0.value.isZero }
    }
}

extension BookView {
    /// Copies the decision state's fields into the view (after every event folded into both);
    /// its metadata when `withMetadata` (the event may have set it).
    fileprivate mutating func copyDecision(withMetadata: Bool) {
        if withMetadata, let metadata = decision.metadata { self.metadata = metadata }
        status = decision.status; inLibrary = decision.isInLibrary; goal = decision.goal
        readThrough = decision.readThrough; isFinished = decision.isFinished
        rating = decision.rating; liked = decision.isLiked
    }
}

extension SessionRecord {
    /// Whether the session was finished before its start was folded (its finish sorts before its
    /// start): a finished session without intervals, whose ``startedAt`` holds the finish's instant
    /// until the start sorts in. A session folded in order always has an interval once finished.
    fileprivate var isAwaitingStart: Bool { isFinished && intervals.isEmpty }

    /// Ends the running interval, if any, at `at`; it keeps the zone of the event that began it.
    fileprivate mutating func closeRunningInterval(at: Timestamp) {
        guard let since = runningSince else { return }
        intervals.append(ClosedInterval(start: since, end: max(since, at), timeZone: runningZone ?? timeZone))
        runningSince = nil; runningZone = nil
    }
}

extension ReadingEvent {
    /// Whether this is a `BookAdded`.
    fileprivate var isBookAdded: Bool {
        if case .bookAdded = self { true } else { false }
    }
}
