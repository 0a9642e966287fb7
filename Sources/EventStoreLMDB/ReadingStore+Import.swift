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
        let outcome = try log.environment.write { txn -> ImportOutcome in
            try catchUpAll(txn)
            var added = 0, alreadyStored = 0
            var rejected: [ImportOutcome.Rejection] = []
            try batches { envelopes in
                // Lines that carry an origin are events of a replica (an export of a store, `export
                // --since-vector`): they merge, never refused for this store's state.
                let result = try append(envelopes, from: .recorded(listDecideRefusals: true), txn)
                added += result.stored.count
                alreadyStored += result.alreadyStored + result.merge.alreadyHeld
                rejected += result.rejected
            }
            return ImportOutcome(added: added, alreadyStored: alreadyStored, rejected: rejected)
        }
        if outcome.added > 0 { log.notifyObservers() }
        return outcome
    }
}
