import Projections
import ReadingEvents

extension ReadingStore {
    /// What ``ReadingStore/importHistory(_:)`` did.
    ///
    /// `Sendable`: plain values.
    public struct ImportOutcome: Sendable, Hashable {
        /// An imported event the store did not take, and why.
        ///
        /// `Sendable`: plain values.
        public struct Rejection: Sendable, Hashable {
            /// The event's ID.
            public let eventID: EventID
            /// Its type tag.
            public let type: String
            /// Its book.
            public let book: BookID?
            /// Why: the rule it breaks on the stored history, or that it changes nothing there.
            public let reason: String
        }

        /// Events appended.
        public let added: Int
        /// Events skipped because their IDs were already stored (an earlier import of the same rows).
        public let alreadyStored: Int
        /// Events that do not fit the book's stored history (a newer export that moved a finish
        /// date, a KOReader session whose finish an older snapshot already stored): not appended.
        public let rejected: [Rejection]
    }

    /// Appends an imported history (envelopes from `ReadingImport`, or any envelopes with
    /// deterministic IDs) in one write transaction, folded into the views like every append: all
    /// of it is committed or, on an error or a crash, nothing.
    ///
    /// Events whose IDs are already stored are skipped, so importing the same file twice adds
    /// nothing and a newer export adds only its new rows. Each new book event is checked against
    /// its book's stored history (and the new events before it) by the same decide step as a
    /// command: one that the decide step would reject there, or that would change nothing, is not
    /// appended and is listed in ``ImportOutcome/rejected``.
    ///
    /// - Throws: ``ReadingEvents/RecordedEventRejection`` (nothing is written) for an envelope that
    ///   breaks a rule, and for one whose ID the store holds in another time zone (the same rows
    ///   imported before under another zone: field `timeZone`, naming the stored zone).
    @discardableResult
    public func importHistory(_ envelopes: [EventEnvelope]) throws -> ImportOutcome {
        try importHistory(batches: { body in try body(envelopes) })
    }

    /// Appends an imported history that comes in batches (an `ImportResult`'s `forEachBatch`, so
    /// a large file is never all in memory): every batch goes through the same append pipeline,
    /// all inside one write transaction, so the whole history is committed or nothing is, as with
    /// ``importHistory(_:)``. `batches` calls its argument with each batch in order; it may be
    /// called more than once (the transaction is run again when the map grows), and must give
    /// the same batches each time.
    ///
    /// - Throws: as ``importHistory(_:)`` (a ``ReadingEvents/RecordedEventRejection``'s index is
    ///   within its batch), or what `batches` throws; nothing is written then.
    @discardableResult
    public func importHistory(batches: (_ body: ([EventEnvelope]) throws -> Void) throws -> Void) throws -> ImportOutcome {
        // One part that nothing fills: one write transaction, and `batches` never skips.
        try importHistory(partsOf: .max, batches: { _, body in try withoutActuallyEscaping(body) { try batches($0) } })
    }
}

// MARK: - Imports committed in parts

extension ReadingStore {
    /// How many envelopes a parted import (``importHistory(partsOf:batches:committed:)``,
    /// ``appendRecorded(partsOf:batches:committed:)``) commits in one write transaction by
    /// default: an input of up to this many is committed whole or not at all, as by the one-
    /// transaction entries. LMDB keeps every page a write transaction changes in memory until it
    /// commits (up to 512 MiB of them), so parts are what bound an import's memory by a constant.
    /// An event changes a page or so of each B-tree it reaches (the log, its ID, its stream, its
    /// book's views); where the keys are random (a reader with a million books) each of those is a
    /// page of its own, about 3.7 pages an event measured, so a part of 8,192 events holds about
    /// 120 MiB, whatever the size of the store (131,072 reached LMDB's 512 MiB).
    public static let importPartSize = 8_192

    /// Appends an imported history (as ``importHistory(batches:)``: the same checks, skips and
    /// outcome) in parts of about `partSize` envelopes, each part its own write transaction, so
    /// that memory stays bounded whatever the input's length.
    ///
    /// Every part is whole: a crash, a kill or an error leaves the parts committed before it and
    /// nothing of the part it stopped in. The parts follow the input's order, so what is stored is
    /// what importing the input's first envelopes alone would have stored; importing the same
    /// input again skips those (their IDs are stored) and adds the rest, to the same views as an
    /// import that never stopped. An input of at most `partSize` envelopes is one part: all or
    /// nothing.
    ///
    /// `batches` is called once a part, with how many envelopes of the input the parts before
    /// have taken: it gives every batch from that envelope on, in order (the part ends at the first
    /// batch boundary at or after `partSize` envelopes, and `batches` is then stopped by an error
    /// it must let through). It is called again for a part when the map grows, and must give the
    /// same envelopes each time. `committed` is called after each part's commit with the envelopes
    /// of the input taken so far.
    ///
    /// - Throws: as ``importHistory(batches:)``; the parts committed before stay.
    ///   ``EventStoreError/invalidArgument(field:detail:)`` (field `partSize`) for a `partSize`
    ///   below 1, before anything is read or written.
    @discardableResult
    public func importHistory(partsOf partSize: Int = ReadingStore.importPartSize,
                              batches: (_ skipping: Int, _ body: ([EventEnvelope]) throws -> Void) throws -> Void,
                              committed: ((_ taken: Int) -> Void)? = nil) throws -> ImportOutcome {
        var added = 0, alreadyStored = 0
        var rejected: [ImportOutcome.Rejection] = []
        // Lines that carry an origin are events of a replica (an export of a store, `export
        // --since-vector`): they merge, never refused for this store's state.
        try appendInParts(partSize, batches, committed, from: .recorded(listDecideRefusals: true)) { stored, result in
            added += stored
            alreadyStored += result.alreadyStored + result.merge.alreadyHeld
            rejected += result.rejected
        }
        return ImportOutcome(added: added, alreadyStored: alreadyStored, rejected: rejected)
    }

    /// Appends envelopes made elsewhere (as ``appendRecorded(batches:)``: the same checks, and a
    /// refused envelope stops it) in parts of about `partSize` envelopes, each its own write
    /// transaction, as ``importHistory(partsOf:batches:committed:)`` does: the parts committed
    /// before an error or a crash stay, every part is whole, and giving the same input again adds
    /// only the rest. Returns how many were new.
    ///
    /// - Throws: as ``appendRecorded(batches:)``; the parts committed before stay.
    ///   ``EventStoreError/invalidArgument(field:detail:)`` (field `partSize`) for a `partSize`
    ///   below 1, before anything is read or written.
    @discardableResult
    public func appendRecorded(partsOf partSize: Int = ReadingStore.importPartSize,
                               batches: (_ skipping: Int, _ body: ([EventEnvelope]) throws -> Void) throws -> Void,
                               committed: ((_ taken: Int) -> Void)? = nil) throws -> Int {
        var added = 0
        try appendInParts(partSize, batches, committed, from: .recorded(listDecideRefusals: false)) { stored, _ in added += stored }
        return added
    }

    /// How many accesses to the map a parted import makes between two releases of the pages it
    /// mapped (``LMDB/WriteTransaction/releaseMappedPages(every:)``): at most a few pages of each
    /// B-tree level an access, mapped 64 KiB at a time, so tens of MiB.
    static let importAccessesPerRelease = 512

    /// Stops a part's `batches` once the part is full.
    private struct PartFull: Error {}

    /// The loop of the batched entries, parted or not (a part of `.max` envelopes is one
    /// transaction): one write transaction a part, each folding what another writer left unfolded
    /// first; `tally` sees each committed part's pipeline outcomes (how many envelopes each stored,
    /// and the rest of the outcome without them: a part's envelopes are counted, never kept).
    /// Observers are woken after a part that stored something.
    private func appendInParts(_ partSize: Int,
                               _ batches: (_ skipping: Int, _ body: ([EventEnvelope]) throws -> Void) throws -> Void,
                               _ committed: ((_ taken: Int) -> Void)?, from source: Source,
                               tally: (_ stored: Int, _ outcome: PipelineOutcome) -> Void) throws {
        guard partSize > 0 else {
            throw EventStoreError.invalidArgument(field: "partSize", detail: "\(partSize) is below 1: a part holds at least one envelope")
        }
        var taken = 0
        while true {
            let part = try log.environment.write { txn -> (outcomes: [(Int, PipelineOutcome)], envelopes: Int, last: Bool) in
                // What the part reads of data.mdb stays in the page cache, not in this process: the
                // look-ups of a large import land all over the store, and the kernel maps 16 pages
                // around each page read.
                txn.releaseMappedPages(every: Self.importAccessesPerRelease)
                try catchUpAll(txn)
                var outcomes: [(Int, PipelineOutcome)] = []
                var envelopes = 0
                do {
                    try batches(taken) { batch in
                        var outcome = try append(batch, from: source, txn)
                        let stored = outcome.stored.count
                        outcome.stored = []
                        outcomes.append((stored, outcome))
                        envelopes += batch.count
                        if envelopes >= partSize { throw PartFull() }
                    }
                    return (outcomes, envelopes, true)
                } catch is PartFull {
                    return (outcomes, envelopes, false)
                }
            }
            var stored = 0
            for (count, outcome) in part.outcomes {
                stored += count
                tally(count, outcome)
            }
            if stored > 0 { log.notifyObservers() }
            taken += part.envelopes
            if part.envelopes > 0 { committed?(taken) }
            if part.last { return }
        }
    }
}
