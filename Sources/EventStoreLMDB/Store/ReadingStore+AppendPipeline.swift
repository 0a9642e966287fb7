import Foundation
import LMDB
import Projections
import ReadingEvents

/// The one way events enter a store. Every public write (``ReadingStore/execute(_:book:context:)``,
/// ``ReadingStore/execute(_:context:)``, ``ReadingStore/appendRecorded(_:)``,
/// ``ReadingStore/importHistory(_:)``, ``ReadingStore/merge(_:)``, ``ReadingStore/retryQuarantine()``)
/// is a thin entry that opens a write transaction, folds what another writer left unfolded, and
/// hands its envelopes here with their ``Source``: where their origins come from, and what happens
/// to an envelope the checks refuse. The pipeline then runs, in that one transaction:
///
/// 1. **check**: new facts of this replica (a command's events, envelopes without an origin) keep
///    the value rules (``ReadingEvents/EventEnvelope/validate(pageCount:)``, with the book's page
///    count from the batch and the views) and, for book events made elsewhere, the decide step's
///    state rules (the same `decide` a command runs, on the book's persisted decision state);
///    events of replicas keep ``ReadingEvents/EventEnvelope/validateReplicated(pageCount:)`` and
///    the origin rules (not this replica's unissued sequence, not a slot another event holds), and
///    the identity rule sorts each into new, held, or an alias of a held event;
/// 2. **stamp**: new facts get this replica's origin (the next sequence numbers, hybrid-clock stamps);
/// 3. **append**: one ``EventLog`` append of every new record;
/// 4. **record origins**: the origins index, the clock, the version vector, aliases, the quarantine;
/// 5. **fold**: the views, in the same transaction (books an event arrives late for are refolded;
///    readers whose canonical copy of an event changed are refolded).
extension ReadingStore {
    /// Where a batch's origins come from, and what the pipeline does with a refused envelope.
    enum Source {
        /// A command's events, decided on the stream's persisted state (the decide step ran):
        /// appended to `stream` only if it is still at `expectedVersion`; stamped here.
        case command(stream: StreamID, expectedVersion: ExpectedVersion)
        /// Events made elsewhere (an import, a host's batch): those without an origin are new facts
        /// of this replica (checked, then stamped here), those with one are events of a replica
        /// (an export of a store) and keep their origins. A refused envelope refuses the batch
        /// (nothing is written), except that with `listDecideRefusals` a book event the decide step
        /// refuses on the stored history is only left out and listed (an import's newer export).
        case recorded(listDecideRefusals: Bool)
        /// Events of other replicas (a sync): an envelope no receiver can take is kept in the
        /// quarantine with its reason, and the rest goes on; with `readers`, so is an event of any
        /// other reader (a pull keeps only its reader's and its partners' events).
        case replicated(readers: Set<ReaderID>?)
    }

    /// What one pass of the pipeline did.
    ///
    /// Not `Sendable`-relevant: a local value of one write.
    struct PipelineOutcome {
        /// The appended envelopes, with their positions, stream versions and origins.
        var stored: [EventEnvelope] = []
        /// The counts a merge reports (`received` counts the replicas' envelopes only).
        var merge = MergeResult()
        /// New facts skipped because their event IDs are held (or repeated in the batch).
        var alreadyStored = 0
        /// New facts the decide step refused (with ``Source/recorded(listDecideRefusals:)``).
        var rejected: [ImportOutcome.Rejection] = []
    }

    /// Runs the pipeline over `envelopes` inside `txn` (views caught up before).
    func append(_ envelopes: [EventEnvelope], from source: Source, _ txn: WriteTransaction) throws -> PipelineOutcome {
        var outcome = PipelineOutcome()
        // The replica this store is now (another process may have noticed a restore).
        try refreshIdentity(txn)
        // 1. Check.
        var checked = CheckedBatch()
        switch source {
        case .command:
            for envelope in envelopes {
                do { try envelope.validate() } catch {
                    // The decide step made these events from checked input: a refusal here is a bug.
                    throw EventStoreError.invalidArgument(field: error.field, detail: "a command decided an event that breaks a rule: \(error.description)")
                }
            }
            checked.newFacts = envelopes
        case .recorded(let listDecideRefusals):
            let replicated = envelopes.indices.filter { envelopes[$0].origin != nil }
            try checkReplicated(envelopes, replicated, mode: .refuse, into: &checked, txn)
            try checkNewFacts(envelopes, envelopes.indices.filter { envelopes[$0].origin == nil },
                              listDecideRefusals: listDecideRefusals, into: &checked, &outcome, txn)
            outcome.merge.received = replicated.count
        case .replicated(let readers):
            try checkReplicated(envelopes, Array(envelopes.indices), mode: .quarantine, readers: readers, into: &checked, txn)
            outcome.merge.received = envelopes.count
        }
        outcome.merge.alreadyHeld = checked.alreadyHeld
        // 2. Stamp.
        try stampLocal(&checked.newFacts, txn)
        // 3. Append: a command's events to its stream at the version it was decided on; the others
        // each to its own stream with no version check (the history already happened).
        // One of the two is usually empty: no copy of the other then.
        let batch = checked.replicated.isEmpty ? checked.newFacts
            : checked.newFacts.isEmpty ? checked.replicated : checked.replicated + checked.newFacts
        if !batch.isEmpty {
            let parts: [StreamAppend]
            if case .command(let stream, let expectedVersion) = source {
                parts = [StreamAppend(key: StreamKey(stream), expectedVersion: expectedVersion,
                                      events: batch.map { NewEvent(eventID: $0.eventID.uuid, payload: BinaryEventCodec.encode($0)) })]
            } else {
                parts = batch.map { envelope in
                    StreamAppend(key: StreamKey(envelope.stream), expectedVersion: .any,
                                 events: [NewEvent(eventID: envelope.eventID.uuid, payload: BinaryEventCodec.encode(envelope))])
                }
            }
            // Every event ID was checked new above (a command's by its command ID), in this
            // transaction: the log does not look them up again.
            let result = try log.append(parts, in: txn, idsCheckedNew: true)
            outcome.stored.reserveCapacity(batch.count)
            for (envelope, entry) in zip(batch, result.entries) {
                // Every event ID was checked new above; the log's answer is the check's.
                guard entry.isNew else {
                    throw EventStoreError.invalidArgument(field: "eventID", detail: "event \(envelope.eventID) was checked new but the log holds it")
                }
                var copy = envelope
                copy.position = entry.position
                copy.streamVersion = entry.streamVersion
                outcome.stored.append(copy)
            }
        }
        // 4. Record origins: the new records', the quarantine's slots, the aliases'.
        try noteOrigins(outcome.stored, txn)
        outcome.merge.appended = outcome.stored.count
        outcome.merge.quarantined = try keepInQuarantine(checked.quarantined, txn)
        var aliases: [EventEnvelope] = []
        var readers: [ReaderID] = []
        for copy in checked.copies {
            guard let record = try log.event(withID: copy.eventID.uuid, in: txn) else { continue }
            let held = try Self.envelope(of: record)
            guard held.origin != nil else { continue }
            if try noteAlias(copy, of: record, held: held, txn), !readers.contains(copy.reader) { readers.append(copy.reader) }
            var alias = copy
            alias.position = record.position
            aliases.append(alias)
        }
        try noteOrigins(aliases, txn)
        // 5. Fold.
        outcome.merge.refoldedBooks = try foldAppended(outcome.stored, txn)
        for reader in readers { try refoldReader(reader, txn) }
        return outcome
    }

    /// A batch sorted by the check step.
    ///
    /// Not `Sendable`-relevant: a local value of one write.
    struct CheckedBatch {
        /// Events of replicas new to this store, in canonical order.
        var replicated: [EventEnvelope] = []
        /// New facts of this replica, in batch order (stamped after the check).
        var newFacts: [EventEnvelope] = []
        /// Other replicas' copies of events held (or new in this batch): aliases.
        var copies: [EventEnvelope] = []
        /// Envelopes of replicas kept aside, with their reasons.
        var quarantined: [(envelope: EventEnvelope, reason: String, holdsSlot: Bool)] = []
        /// Replicas' envelopes already held or repeated.
        var alreadyHeld = 0
        /// Every event ID the batch adds or holds, with the envelope that carries it.
        var ids: [EventID: EventEnvelope] = [:]
    }

    /// ``BatchBookFacts`` of a batch, with the page counts the store's views know: what earlier
    /// events of the batch, else the store, say about each book (read once per book and batch).
    ///
    /// Not `Sendable`: it holds a view store bound to the write transaction.
    struct BookFacts {
        private var facts = BatchBookFacts()
        let views: LMDBViewStore

        init(views: LMDBViewStore) { self.views = views }

        /// The page count of the book of `envelope` as of it (`nil`: unknown, or not a book event).
        mutating func pageCount(before envelope: EventEnvelope) throws -> Int? {
            try facts.pageCount(before: envelope) { reader, book in try views.bookSummary(reader: reader, book: book)?.metadata.pageCount }
        }

        /// The start of the book's goal set earlier in the batch, if any.
        func goalStart(before envelope: EventEnvelope) -> LocalDate? { facts.goalStart(before: envelope) }

        /// Both, with one look-up of the book.
        mutating func pageCountAndGoalStart(before envelope: EventEnvelope) throws -> (pageCount: Int?, goalStart: LocalDate?) {
            try facts.pageCountAndGoalStart(before: envelope) { reader, book in try views.bookSummary(reader: reader, book: book)?.metadata.pageCount }
        }

        /// Notes what `envelope` sets.
        mutating func note(_ envelope: EventEnvelope) { facts.note(envelope) }
    }

    /// The check of events of replicas (`indices` of `envelopes`), in canonical order (envelopes
    /// by origin, then batch order), so the first copy of an event ID met is the one whose origin
    /// sorts first. A refused one throws ``MergeRejection`` (`.refuse`, also for a position or page
    /// beyond the book's page count as known from the batch and the store: a replica's own decide
    /// step kept it within its page count) or goes to the quarantine (`.quarantine`: page counts
    /// are not checked there, since replicas may know a book's page count at different times).
    func checkReplicated(_ envelopes: [EventEnvelope], _ indices: [Int], mode: MergeMode, readers: Set<ReaderID>? = nil,
                         into checked: inout CheckedBatch, _ txn: WriteTransaction) throws {
        guard !indices.isEmpty else { return }
        let order = indices.sorted { a, b in
            switch (envelopes[a].origin, envelopes[b].origin) {
            case (let x?, let y?): x != y ? x < y : a < b
            case (nil, _?): true
            case (_?, nil): false
            case (nil, nil): a < b
            }
        }
        var bookFacts = mode == .refuse ? BookFacts(views: try activeViews(txn)) : nil
        var states: [StreamID: BookState] = [:]
        var firstIndex: [EventID: Int] = [:]
        var heldPosition: [EventID: UInt64] = [:]
        var claimed: [EventOrigin: Int] = [:]
        for index in order {
            let envelope = envelopes[index]
            func refuse(_ field: String, _ rule: ValidationRule, _ detail: String) throws {
                switch mode {
                case .refuse:
                    throw MergeRejection(index: index, eventID: envelope.eventID, field: field, rule: rule, detail: detail)
                case .quarantine:
                    // A refusal that is not about the origin itself leaves the origin's slot to this
                    // event alone: the quarantine keeps it in that place (see keepInQuarantine).
                    checked.quarantined.append((envelope, "\(field): \(detail) [rule: \(rule.rawValue)]", !field.hasPrefix("origin")))
                }
            }
            if let readers, !readers.contains(envelope.reader) {
                try refuse("reader", .inconsistent, "reader \(envelope.reader) is neither this device's reader nor one of its partners: a pull keeps only their events"); continue
            }
            do {
                if mode == .refuse, case .book(let reader, let book) = envelope.stream, firstIndex[envelope.eventID] == nil,
                   try log.event(withID: envelope.eventID.uuid, in: txn) == nil {
                    // A new event, against the store's state moved by the file's earlier new lines:
                    // the rules a line without an origin keeps through the decide step, across
                    // files too (held events are facts already checked).
                    var state = try states[envelope.stream] ?? decisionState(reader: reader, book: book, txn)
                    try Self.checkAgainstState(envelope, state)
                    try envelope.validateReplicated(pageCount: bookFacts?.pageCount(before: envelope),
                                                    goalStart: bookFacts?.goalStart(before: envelope) ?? state.goal?.startDate)
                    state.apply(envelope.event, occurredAt: envelope.occurredAt)
                    states[envelope.stream] = state
                } else {
                    try envelope.validateReplicated(pageCount: bookFacts?.pageCount(before: envelope), goalStart: bookFacts?.goalStart(before: envelope))
                }
            } catch let error as ValidationError {
                try refuse(error.field, error.rule, error.detail); continue
            }
            bookFacts?.note(envelope)
            let origin = envelope.origin!
            let key = EventOrigin(stamp: 0, replica: origin.replica, sequence: origin.sequence)
            // Every origin of this replica is in the origins index (a store holds every event it
            // made, and its head is its last origin): one that is not was never issued here, also
            // as a copy of an event held.
            if origin.replica == replica, try txn.get(sync.origins, (origin.replica, origin.sequence)) == nil {
                try refuse("origin.replica", .inconsistent,
                           "it names this store's own replica \(replica), which never issued sequence \(origin.sequence): a store holds every event it made"); continue
            }
            if let earlier = firstIndex[envelope.eventID] {
                // Another version of an imported row is kept like a copy (see noteAlias).
                guard envelopes[earlier].recordsSameFact(as: envelope) || envelope.isImportVersion(of: envelopes[earlier]) else {
                    try refuse("eventID", .inconsistent, "the same event ID comes earlier in the batch (envelope \(earlier + 1)) with another fact"); continue
                }
                if envelopes[earlier].origin != origin, claimed[key] == nil {
                    if let named = try txn.get(sync.origins, (origin.replica, origin.sequence)) {
                        // A copy this store already holds (the record's own origin, or an alias)
                        // is held; only a slot naming another event refuses it.
                        guard named.position == heldPosition[envelope.eventID] else {
                            try refuse("origin.sequence", .duplicateID,
                                       "replica \(origin.replica)'s sequence \(origin.sequence) already names another event (position \(named.position))"); continue
                        }
                        if let refusal = try editedCopy(envelope, named: named, txn) { try refuse("origin", .inconsistent, refusal); continue }
                    } else {
                        claimed[key] = index
                        checked.copies.append(envelope)
                    }
                }
                checked.alreadyHeld += 1
                continue
            }
            firstIndex[envelope.eventID] = index
            let named = try txn.get(sync.origins, (origin.replica, origin.sequence))
            if let record = try log.event(withID: envelope.eventID.uuid, in: txn) {
                heldPosition[envelope.eventID] = record.position
                let held = try Self.envelope(of: record)
                guard held.recordsSameFact(as: envelope) || envelope.isImportVersion(of: held) else {
                    try refuse("eventID", .inconsistent, "the event ID is already held at position \(record.position) with another fact"); continue
                }
                if let named, named.position != record.position {
                    try refuse("origin.sequence", .duplicateID,
                               "replica \(origin.replica)'s sequence \(origin.sequence) already names another event (position \(named.position))"); continue
                }
                if let named, let refusal = try editedCopy(envelope, named: named, txn) { try refuse("origin", .inconsistent, refusal); continue }
                if named == nil, claimed.updateValue(index, forKey: key) == nil { checked.copies.append(envelope) }
                checked.ids[envelope.eventID] = held
                checked.alreadyHeld += 1
                continue
            }
            if let named {
                try refuse("origin.sequence", .duplicateID,
                           "replica \(origin.replica)'s sequence \(origin.sequence) already names another event (position \(named.position))"); continue
            }
            if let other = claimed.updateValue(index, forKey: key) {
                try refuse("origin.sequence", .duplicateID,
                           "replica \(origin.replica)'s sequence \(origin.sequence) also names envelope \(other + 1), another event"); continue
            }
            checked.ids[envelope.eventID] = envelope
            checked.replicated.append(envelope)
        }
    }

    /// The state rules a replica's line in an import keeps (the ones the decide step keeps for a
    /// line without an origin, that no replica's decide step can break): its book is added (in
    /// the store, or earlier in the file), and a page count it sets is not below the position the
    /// book has reached (the `99,999 pages` of an earlier file on a book of 247 pages, a
    /// `MetadataCorrected` below the position read). A sync's merge does not run them: replicas
    /// hold a book's events at different times, and the views must not depend on arrival order.
    static func checkAgainstState(_ envelope: EventEnvelope, _ state: BookState) throws(ValidationError) {
        switch envelope.event {
        case .bookAdded(let e):
            if let pages = e.metadata.pageCount, state.position > pages {
                throw ValidationError(field: "metadata.pageCount", rule: .outOfRange,
                                      detail: "\(pages) is below page \(state.position), which the book has reached in the store")
            }
        case .metadataCorrected(let e):
            if state.metadata == nil {
                throw ValidationError(field: "book", rule: .bookNotAdded, detail: "the book is not added, in the store or earlier in the file")
            }
            if let pages = e.metadata.pageCount, state.position > pages {
                throw ValidationError(field: "metadata.pageCount", rule: .outOfRange,
                                      detail: "\(pages) is below page \(state.position), which the book has reached")
            }
        case .bookRemoved, .statusChanged, .goalSet, .goalChanged, .goalDeleted, .pagesRead, .progressCorrected,
             .readThroughStarted, .sessionStarted, .sessionPaused, .sessionResumed, .sessionFinished, .sessionDiscarded,
             .bookFinished, .finishUndone, .sentenceCollected, .sentenceEdited, .sentenceRemoved, .memoWritten, .memoEdited,
             .memoRemoved, .ratingSet, .ratingCleared, .bookLiked, .bookUnliked:
            if state.metadata == nil {
                throw ValidationError(field: "book", rule: .bookNotAdded, detail: "the book is not added, in the store or earlier in the file")
            }
        case .profileUpdated, .homeOrderSet, .challengeSet, .unknown:
            break
        }
    }

    /// Why `envelope`, whose origin this store holds (`named`: the event's position and the
    /// origin's stamp), is refused: an origin names one copy for good, so the copy held under it
    /// (the record, or an alias's copy or version) must have the same stamp and state the same
    /// fact (an edited copy of a held event under its origin); `nil` when it does.
    func editedCopy(_ envelope: EventEnvelope, named: (position: UInt64, stamp: UInt64), _ txn: ReadTransaction) throws -> String? {
        guard let origin = envelope.origin, let record = try log.event(at: named.position, in: txn) else { return nil }
        guard origin.stamp == named.stamp else {
            return "replica \(origin.replica)'s sequence \(origin.sequence) is held (position \(named.position)) with the stamp \(named.stamp), not \(origin.stamp): an origin names one copy, for good"
        }
        let held = try copy(at: named.position, held: try Self.envelope(of: record), origin: origin, txn)
        guard !held.recordsSameFact(as: envelope) else { return nil }
        return "replica \(origin.replica)'s sequence \(origin.sequence) is held (position \(named.position)) with another fact: an origin names one fact, for good"
    }

    /// The check of new facts made elsewhere (`indices` of `envelopes`, in batch order): an event
    /// ID earlier in the batch, or held (except for an import, which keeps what it stored first),
    /// must carry the same fact (then it is skipped), a
    /// book event passes the decide step on its book's persisted decision state and the batch's
    /// earlier events (given the command the event records, it must decide exactly that event),
    /// and the value rules hold with the book's page count as of the envelope. A refusal
    /// throws ``RecordedEventRejection`` naming the envelope; with `listDecideRefusals` a decide-step
    /// refusal is listed in the outcome instead and the envelope is left out.
    func checkNewFacts(_ envelopes: [EventEnvelope], _ indices: [Int], listDecideRefusals: Bool,
                       into checked: inout CheckedBatch, _ outcome: inout PipelineOutcome, _ txn: WriteTransaction) throws {
        guard !indices.isEmpty else { return }
        var bookFacts = BookFacts(views: try activeViews(txn))
        // Sized for the batch at once: grown step by step, the tables of IDs and envelopes were
        // rehashed and moved about 11 times per 1,000 events (issue 37, the P1 path).
        var firstIndex: [EventID: Int] = [:]
        firstIndex.reserveCapacity(indices.count)
        checked.ids.reserveCapacity(checked.ids.count + indices.count)
        checked.newFacts.reserveCapacity(checked.newFacts.count + indices.count)
        var states: [StreamID: DecisionStateBox] = [:]
        for index in indices {
            let envelope = envelopes[index]
            // Looked up and entered with one hashed access.
            if let earlier = firstIndex.updateValue(index, forKey: envelope.eventID) {
                firstIndex[envelope.eventID] = earlier  // the first stays the one named
                guard envelope.recordsSameFact(as: envelopes[earlier]) else {
                    throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .conflictsWithBatch(index: earlier))
                }
                outcome.alreadyStored += 1
                continue
            }
            let held: EventEnvelope?
            if let inBatch = checked.ids[envelope.eventID] { held = inBatch } else {
                held = try log.event(withID: envelope.eventID.uuid, in: txn).map(Self.envelope(of:))
            }
            if let held {
                // An import of rows an earlier import stored in another zone would place the same
                // rows again elsewhere (a KOReader day split differently: a second copy of the same
                // stays); stored events are never rewritten, so the import is refused, naming the zone.
                if listDecideRefusals, held.timeZone != envelope.timeZone {
                    throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .invalid(ValidationError(
                        field: "timeZone", rule: .inconsistent,
                        detail: "these rows were imported before in the zone \(held.timeZone) (event at position \(held.position)), this import places them in \(envelope.timeZone); stored events are never rewritten, so a second copy would stay: import again with the zone \(held.timeZone) (--zone \(held.timeZone)), or import into a new store to place the history in \(envelope.timeZone)")))
                }
                // An import keeps what an earlier import of the row stored (a newer export may
                // describe the row differently: re-imports add only new rows); a host's batch must
                // not contradict the store.
                guard listDecideRefusals || envelope.recordsSameFact(as: held) else {
                    throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .conflictsWithStored(position: held.position))
                }
                outcome.alreadyStored += 1
                continue
            }
            // The decide step first: what it refuses on the stored history (a page past the page
            // count included) is what an import lists; then the rules an event keeps on its own.
            if case .book(_, let book) = envelope.stream, let command = envelope.event.bookCommand {
                let stream = envelope.stream
                // Decided on and changed in place, in its box: a copy taken out of the table and
                // stored back made `apply` copy the state's arrays and sets (and cost a hashed
                // look-up more), as did in-place accesses through the table's subscript.
                let box: DecisionStateBox
                if let found = states[stream] { box = found } else {
                    box = DecisionStateBox(try decisionState(reader: envelope.reader, book: book, txn))
                    states[stream] = box
                }
                if let refusal = Self.decideAndApply(command, book: book, envelope, to: &box.state) {
                    guard listDecideRefusals else {
                        throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .invalid(refusal))
                    }
                    outcome.rejected.append(.init(eventID: envelope.eventID, type: envelope.type.tag, book: book,
                                                  reason: refusal.rule == .inconsistent && refusal.field == "event" ? refusal.detail : "\(refusal)"))
                    continue
                }
            }
            do {
                let facts = try bookFacts.pageCountAndGoalStart(before: envelope)
                try envelope.validate(pageCount: facts.pageCount, goalStart: facts.goalStart)
            } catch let error as ValidationError {
                throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .invalid(error))
            }
            bookFacts.note(envelope)
            checked.ids[envelope.eventID] = envelope
            checked.newFacts.append(envelope)
        }
    }

    /// A book's decision state while a batch is checked, changed in place by each of its events.
    ///
    /// Not `Sendable`: local to one check.
    final class DecisionStateBox {
        var state: BookState
        init(_ state: BookState) { self.state = state }
    }

    /// The decide step for a recorded book event: `nil` when `command` decides exactly the event
    /// `envelope` records on `state`, which then applies it; else the refusal (`state` unchanged).
    private static func decideAndApply(_ command: BookCommand, book: BookID, _ envelope: EventEnvelope,
                                       to state: inout BookState) -> ValidationError? {
        do {
            let decided = try command.decide(for: book, in: state, at: envelope.occurredAt)
            guard decided.count == 1 && decided[0] == envelope.event else {
                return ValidationError(field: "event", rule: .inconsistent, detail: "it changes nothing in the stored history of book \(book)")
            }
        } catch {
            return error
        }
        state.apply(envelope.event, occurredAt: envelope.occurredAt)
        return nil
    }
}
